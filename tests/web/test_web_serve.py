"""``toolbound serve --http``: the page on the port of /mcp, watching an MCP client's call."""

from __future__ import annotations

import asyncio
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from mcp import Client

from mcp_client import bearer_transport, text_of

# One event loop per module: the module shares one Chromium (conftest.py).
pytestmark = pytest.mark.asyncio(loop_scope="module")

WAIT_S = 30.0
PANE_LINES = "sel => [...document.querySelectorAll(sel + ' .line')].map(e => e.textContent)"


@dataclass
class Serving:
    mcp_url: str
    page_url: str
    workspace: Path


def _pump(stream: Any, lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)


@pytest.fixture
def serving(tmp_path: Path) -> Iterator[Serving]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    command = [sys.executable, "-m", "toolbound", "serve", "--http", "127.0.0.1:0"]
    command += ["--workspace", str(workspace), "--data-dir", str(tmp_path / "data")]
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stderr is not None
    pump = threading.Thread(target=_pump, args=(proc.stderr, lines), daemon=True)
    pump.start()
    try:
        mcp_line, web_line = lines.get(timeout=WAIT_S), lines.get(timeout=WAIT_S)
        mcp = re.search(r"(http://127\.0\.0\.1:(\d+)/mcp) ", mcp_line)
        web = re.fullmatch(
            r"toolbound: web view on (http://127\.0\.0\.1:(\d+)/\?token=\S+)\n", web_line
        )
        assert mcp, mcp_line
        assert web, web_line
        assert web.group(2) == mcp.group(2)  # one port for both
        yield Serving(mcp.group(1), web.group(1), workspace)
    finally:
        proc.terminate()
        proc.wait(timeout=WAIT_S)
        pump.join(timeout=WAIT_S)
        proc.stderr.close()


async def test_the_page_shares_the_mcp_port_and_watches_an_mcp_call_live(
    serving: Serving, browser: Any, screenshot: Any
) -> None:
    base = serving.page_url.split("/?")[0]
    async with httpx.AsyncClient(timeout=WAIT_S) as plain:
        assert (await plain.get(base + "/")).status_code == 403
        assert (await plain.get(base + "/api/sessions")).status_code == 403

    command = (
        "for i in 1 2 3; do echo tick $i; sleep 0.1; done; while [ ! -e gate ]; do sleep 0.05; done"
    )
    token = serving.page_url.split("?token=")[1]
    transport = bearer_transport(serving.mcp_url, token)
    async with Client(transport, mode="legacy", read_timeout_seconds=WAIT_S) as client:
        call = asyncio.create_task(client.call_tool("Bash", {"command": command, "timeout": 60}))
        page = await browser.new_page()
        await page.goto(serving.page_url)
        await page.click("#sessions a")  # the MCP session, the only one
        await page.click(".call")
        await page.wait_for_function(
            f"() => ({PANE_LINES})('#out-stdout').length >= 3", timeout=WAIT_S * 1000
        )
        assert await page.evaluate(f"({PANE_LINES})('#out-stdout')") == [
            "tick 1",
            "tick 2",
            "tick 3",
        ]
        assert not call.done()
        await screenshot(page, "serve-live")
        (serving.workspace / "gate").touch()
        result = await asyncio.wait_for(call, WAIT_S)
        assert text_of(result).startswith("[exit status 0]")
        await page.wait_for_selector("#detail[data-stream=done]")
        assert await page.text_content("#result .status") == "exit status 0"
