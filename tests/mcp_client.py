"""The official mcp SDK client's streamable HTTP transport with the bearer token
``toolbound serve --http`` requires (importable: ``tests`` is on pytest's pythonpath)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@contextlib.asynccontextmanager
async def bearer_transport(url: str, token: str) -> AsyncIterator[TransportStreams]:
    """The SDK's streamable HTTP transport, sending ``Authorization: Bearer TOKEN``."""
    async with (
        create_mcp_http_client(headers=bearer(token)) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams
