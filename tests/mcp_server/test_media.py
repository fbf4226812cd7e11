"""An image and a PDF Read over MCP, through the official SDK client (CONTRACT 15):
the image arrives as an image content block beside its text line."""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING

import mcp_types as types
import pytest
from PIL import Image

from mcp_client import text_of
from media_files import make_pdf

if TYPE_CHECKING:
    from conftest import Connect

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_an_image_read_arrives_as_an_image_block_and_its_text_line(
    connect: Connect,
) -> None:
    async with connect() as conn:
        Image.new("RGB", (3136, 200), (0, 0, 200)).save(conn.dir / "wide.png")
        result = await conn.client.call_tool("Read", {"path": f"{conn.rel}/wide.png"})
        assert not result.is_error
        image, text = result.content
        assert isinstance(image, types.ImageContent)
        assert image.mime_type == "image/png"
        got = Image.open(io.BytesIO(base64.b64decode(image.data)))
        assert got.size == (1568, 100)
        assert isinstance(text, types.TextContent)
        assert text.text.startswith(
            f"[Image {conn.rel}/wide.png: 3136x200, scaled down to 1568x100"
        )


async def test_a_pdf_read_arrives_as_its_pages_text(connect: Connect) -> None:
    async with connect() as conn:
        (conn.dir / "a.pdf").write_bytes(make_pdf(["first page", "second page"]))
        result = await conn.client.call_tool("Read", {"path": f"{conn.rel}/a.pdf", "pages": "2"})
        assert not result.is_error
        assert text_of(result) == "--- Page 2 ---\nsecond page\n"
