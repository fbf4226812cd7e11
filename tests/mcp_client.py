"""Driving ``toolbound serve`` from tests (importable: ``tests`` is on pytest's pythonpath).

Pieces:
    serve_process     the server (``python ARGV``) running, its stderr lines queued
    read_announcement the /mcp URL and the token ``serve --http`` prints first
    bearer_transport  the official SDK client's streamable HTTP transport with the
                      bearer token ``serve --http`` requires
    text_of           the one text block of a tool result
"""

from __future__ import annotations

import contextlib
import queue
import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator

import mcp_types as types
from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

# Every wait on the server process is bounded by this.
WAIT_S = 30.0


@contextlib.contextmanager
def serve_process(argv: list[str], env: dict[str, str] | None = None) -> Iterator[queue.Queue[str]]:
    """``python ARGV`` (``-m toolbound serve ...``) running for the block; its stderr
    lines as they come.

    Stopped with SIGTERM (then SIGKILL) and reaped at the end, its pipe closed.
    """
    proc = subprocess.Popen(
        [sys.executable, *argv],
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    stderr = proc.stderr
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stderr:
            lines.put(line)

    pumping = threading.Thread(target=pump, daemon=True)
    pumping.start()
    try:
        yield lines
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=WAIT_S)
        pumping.join(timeout=WAIT_S)
        stderr.close()


def read_announcement(lines: queue.Queue[str]) -> tuple[str, str]:
    """The /mcp URL and the bearer token from ``toolbound serve --http``'s first lines."""
    announced = "".join(lines.get(timeout=WAIT_S) for _ in range(3))
    url = re.search(r"MCP server on (http://127\.0\.0\.1:\d+/mcp) ", announced)
    token = re.search(r"'Authorization: Bearer ([^']+)'", announced)
    assert url, announced
    assert token, announced
    return url.group(1), token.group(1)


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


def text_of(result: types.CallToolResult) -> str:
    """The one text block of a tool result (the model text)."""
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text
