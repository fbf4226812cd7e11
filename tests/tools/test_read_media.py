"""Read of images and PDFs through ToolHost.call, the CLI and the ledger (CONTRACT 15).

Every file is made here: images with Pillow, PDFs by ``media_files.make_pdf``;
a bomb's header and a corrupt file by hand.
"""

from __future__ import annotations

import base64
import io
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from media_files import make_pdf, png_header
from support import run_cli
from toolbound import ToolHost, model_text
from toolbound.store.ledger import measure
from toolbound.store.tokens import estimate_tokens
from toolbound.tools.read_media import IMAGE_MAX_BYTES, IMAGE_MAX_EDGE, IMAGE_MAX_PIXELS


async def read(host: ToolHost, **args: Any) -> dict[str, Any]:
    return await host.call("Read", args)


def decoded(result: dict[str, Any]) -> Image.Image:
    data = base64.b64decode(result["image"]["data"])
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def error(result: dict[str, Any]) -> tuple[str, str]:
    assert "error" in result, result
    return result["error"]["code"], result["error"]["message"]


def pages_of(n: int, lines: int = 3, fill: str = "") -> list[str]:
    return ["\n".join(f"page {p} line {i}{fill}" for i in range(lines)) for p in range(1, n + 1)]


# --- images ---------------------------------------------------------------------


async def test_a_large_jpeg_is_scaled_to_fit_and_both_sizes_are_named(
    host: ToolHost, ws: Path
) -> None:
    Image.new("RGB", (4000, 3000), (200, 10, 10)).save(ws / "big.jpg", quality=90)
    result = await read(host, path="big.jpg")
    assert set(result) == {"path", "root", "image", "fileBytes"}
    assert (result["path"], result["root"]) == ("big.jpg", "workspace")
    assert result["fileBytes"] == (ws / "big.jpg").stat().st_size
    image = result["image"]
    assert (image["originalWidth"], image["originalHeight"], image["mimeType"]) == (
        4000,
        3000,
        "image/jpeg",
    )
    width, height = image["width"], image["height"]
    assert max(width, height) <= IMAGE_MAX_EDGE
    assert width * height <= IMAGE_MAX_PIXELS
    # The pixel bound is the one that binds: as large as it allows, aspect kept.
    assert width == math.floor(4000 * math.sqrt(IMAGE_MAX_PIXELS / 12_000_000) + 1e-6)
    assert abs(width / height - 4 / 3) < 0.01
    assert decoded(result).size == (width, height)
    assert model_text("Read", result) == (
        f"[Image big.jpg: 4000x3000, scaled down to {width}x{height} to fit 1568 px and "
        f"1.15 megapixels, as image/jpeg ({len(base64.b64decode(image['data']))} bytes).]"
    )


async def test_a_small_png_is_sent_byte_for_byte(host: ToolHost, ws: Path) -> None:
    Image.new("RGBA", (100, 50), (0, 0, 255, 128)).save(ws / "small.png")
    result = await read(host, path="small.png")
    assert base64.b64decode(result["image"]["data"]) == (ws / "small.png").read_bytes()
    assert (result["image"]["width"], result["image"]["height"]) == (100, 50)
    assert "sent at full size" in model_text("Read", result)


async def test_a_wide_gif_becomes_a_png_and_a_webp_stays_a_webp(host: ToolHost, ws: Path) -> None:
    Image.new("P", (3000, 200)).save(ws / "wide.gif")
    Image.new("RGB", (2000, 2000), (1, 2, 3)).save(ws / "sq.webp")
    gif = await read(host, path="wide.gif")
    assert (gif["image"]["mimeType"], gif["image"]["width"]) == ("image/png", IMAGE_MAX_EDGE)
    assert decoded(gif).format == "PNG"
    webp = await read(host, path="sq.webp")
    assert webp["image"]["mimeType"] == "image/webp"
    assert decoded(webp).size == (webp["image"]["width"], webp["image"]["height"])
    assert webp["image"]["width"] ** 2 <= IMAGE_MAX_PIXELS


async def test_an_image_whose_bytes_are_over_5_mb_is_made_smaller_until_it_fits(
    host: ToolHost, ws: Path
) -> None:
    # Noise does not compress: 1500x700 RGBA is about 4.2 MB of PNG, 5.6 MB of base64.
    noise = Image.frombytes("RGBA", (1500, 700), os.urandom(1500 * 700 * 4))
    noise.save(ws / "noise.png")
    result = await read(host, path="noise.png")
    assert len(result["image"]["data"]) <= IMAGE_MAX_BYTES
    assert result["image"]["width"] < 1500
    assert decoded(result).size == (result["image"]["width"], result["image"]["height"])


async def test_a_100_megapixel_image_is_refused_from_its_header(host: ToolHost, ws: Path) -> None:
    (ws / "bomb.png").write_bytes(png_header(10_000, 10_000))
    code, message = error(await read(host, path="bomb.png"))
    assert code == "TOOL_BINARY_CONTENT"
    assert "bomb.png is an image (image/png), but it is over the 64 megapixels" in message
    (ws / "big.png").write_bytes(png_header(9000, 8000))
    code, message = error(await read(host, path="big.png"))
    assert code == "TOOL_BINARY_CONTENT"
    assert "it is 9000x8000 pixels, over the 64 megapixels Read decodes" in message


async def test_a_corrupt_image_is_a_clear_error(host: ToolHost, ws: Path) -> None:
    Image.new("RGB", (64, 64), (9, 9, 9)).save(ws / "cut.png")
    (ws / "cut.png").write_bytes((ws / "cut.png").read_bytes()[:60])
    (ws / "junk.jpg").write_bytes(b"\xff\xd8\xff" + b"junk" * 50)
    for name in ("cut.png", "junk.jpg"):
        code, message = error(await read(host, path=name))
        assert code == "TOOL_BINARY_CONTENT"
        assert "cannot be decoded" in message, message


async def test_other_binary_files_stay_refused_and_pages_is_for_pdfs(
    host: ToolHost, ws: Path
) -> None:
    (ws / "a.bin").write_bytes(b"\x00\x01\x02PK" * 100)
    code, message = error(await read(host, path="a.bin"))
    assert code == "TOOL_BINARY_CONTENT"
    assert "is binary, not text" in message
    (ws / "a.txt").write_text("text\n")
    Image.new("RGB", (8, 8)).save(ws / "a.png")
    for name in ("a.txt", "a.png"):
        code, message = error(await read(host, path=name, pages="1"))
        assert code == "TOOL_INVALID_ARGUMENT"
        assert "'pages' is for a PDF" in message


async def test_the_ledger_counts_an_image_at_width_times_height_over_750(
    host: ToolHost, ws: Path
) -> None:
    Image.new("RGB", (1000, 750), (5, 5, 5)).save(ws / "p.png")
    result = await read(host, path="p.png")
    text = model_text("Read", result)
    assert measure("Read", result, text).model_tokens == estimate_tokens(text) + 1000


def test_the_cli_prints_an_image_read_and_its_text_line(tmp_path: Path) -> None:
    Image.new("RGB", (2000, 100), (0, 128, 0)).save(tmp_path / "g.png")
    data = ("--data-dir", str(tmp_path / "d"))
    out = run_cli("call", "Read", '{"path": "g.png"}', *data, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    image = json.loads(out.stdout)["image"]
    assert (image["width"], image["height"], image["originalWidth"]) == (1568, 78, 2000)
    text = run_cli("call", "Read", '{"path": "g.png"}', "--text", *data, cwd=tmp_path)
    assert text.stdout.startswith("[Image g.png: 2000x100, scaled down to 1568x78")


# --- PDFs -----------------------------------------------------------------------


async def test_a_short_pdf_is_read_whole_with_page_headers(host: ToolHost, ws: Path) -> None:
    (ws / "a.pdf").write_bytes(make_pdf(pages_of(3)))
    result = await read(host, path="a.pdf")
    assert {k: v for k, v in result.items() if k != "content"} == {
        "path": "a.pdf",
        "root": "workspace",
        "pages": "1-3",
        "totalPages": 3,
        "fileBytes": (ws / "a.pdf").stat().st_size,
        "truncated": False,
    }
    content = result["content"]
    assert content.startswith("--- Page 1 ---\npage 1 line 0\npage 1 line 1\npage 1 line 2\n")
    assert [line for line in content.splitlines() if line.startswith("---")] == [
        "--- Page 1 ---",
        "--- Page 2 ---",
        "--- Page 3 ---",
    ]
    assert model_text("Read", result) == content


async def test_a_long_pdf_read_without_pages_gives_the_first_ten_and_says_how_many(
    host: ToolHost, ws: Path
) -> None:
    (ws / "long.pdf").write_bytes(make_pdf(pages_of(25)))
    result = await read(host, path="long.pdf")
    assert (result["pages"], result["totalPages"], result["truncated"]) == ("1-10", 25, True)
    assert result["notice"] == 'Showing pages 1-10 of 25; Read with `pages: "11-20"` for the next.'
    assert "--- Page 10 ---" in result["content"]
    assert "--- Page 11 ---" not in result["content"]
    last = await read(host, path="long.pdf", pages="24-25")
    assert (last["pages"], last["truncated"], last.get("notice")) == ("24-25", False, None)
    assert last["content"].startswith("--- Page 24 ---\npage 24 line 0\n")
    one = await read(host, path="long.pdf", pages="5")
    assert one["content"] == "--- Page 5 ---\npage 5 line 0\npage 5 line 1\npage 5 line 2\n"
    assert one["notice"] == 'Showing page 5 of 25; Read with `pages: "6"` for the next.'


@pytest.mark.parametrize(
    ("pages", "said"),
    [
        ("1-21", "at most 20 pages"),
        ("30", "has 25 pages"),
        ("0", "'pages' must be"),
        ("3-2", "'pages' must be"),
        ("two", "'pages' must be"),
    ],
)
async def test_a_pages_range_out_of_bounds_is_refused(
    host: ToolHost, ws: Path, pages: str, said: str
) -> None:
    (ws / "long.pdf").write_bytes(make_pdf(pages_of(25)))
    code, message = error(await read(host, path="long.pdf", pages=pages))
    assert code == "TOOL_INVALID_ARGUMENT"
    assert said in message, message


async def test_pdf_pages_stop_at_the_budget_and_the_notice_names_the_next(
    host: ToolHost, ws: Path
) -> None:
    # 20 pages of about 3.5 KB each: more than the 48 KB budget.
    (ws / "big.pdf").write_bytes(make_pdf(pages_of(20, lines=60, fill=" and more" * 5)))
    result = await read(host, path="big.pdf", pages="1-20")
    shown = int(result["pages"].split("-")[1])
    assert 1 < shown < 20
    assert len(result["content"].encode()) <= 48 * 1024
    assert result["truncated"] is True
    assert result["notice"] == (
        f'Showing pages 1-{shown} of 20; Read with `pages: "{shown + 1}-20"` for the next.'
    )


async def test_an_encrypted_or_broken_pdf_is_a_clear_error(host: ToolHost, ws: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(pages_of(2)))))
    writer.encrypt("secret", algorithm="RC4-128")
    with (ws / "locked.pdf").open("wb") as out:
        writer.write(out)
    code, message = error(await read(host, path="locked.pdf"))
    assert code == "TOOL_BINARY_CONTENT"
    assert "encrypted" in message
    (ws / "broken.pdf").write_bytes(b"%PDF-1.4\nnot a pdf at all\n")
    code, message = error(await read(host, path="broken.pdf"))
    assert code == "TOOL_BINARY_CONTENT"
    assert "cannot be parsed" in message


def test_the_cli_reads_a_pdf_page(tmp_path: Path) -> None:
    (tmp_path / "c.pdf").write_bytes(make_pdf(pages_of(12)))
    data = ("--data-dir", str(tmp_path / "d"))
    out = run_cli("call", "Read", '{"path": "c.pdf", "pages": "12"}', "--text", *data, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "--- Page 12 ---\npage 12 line 0\npage 12 line 1\npage 12 line 2\n"
