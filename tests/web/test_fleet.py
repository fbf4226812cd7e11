"""A fleet: two hosts in two processes share one PostgreSQL store; one web view sees both.

Host A runs in this process with the web view attached to it; host B is
another process with its own workspace and data dir (and, in the page's
test, another machine name). The web view lists both hosts' sessions and
streams B's running Bash call live: B's recorder NOTIFYs each committed
batch, the view LISTENs (no polling), and the events arrive with the seq
values B streamed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

import pgserver
from toolbound.host import ToolHost
from toolbound.web import WebService, build_app
from toolbound.web.server import LocalServer

WAIT_S = 20

HOST_B = r"""
import asyncio, json, sys
from toolbound import ToolHost

async def main(workspace, data_dir, store, gate):
    async with ToolHost(workspace, data_dir=data_dir, session_id="host-b", store=store) as host:
        command = f"echo first; read word < {gate}; echo second $word"
        async for event in host.stream("Bash", {"command": command}, tool_call_id="b1"):
            print(json.dumps(event), flush=True)

asyncio.run(main(*sys.argv[1:]))
"""


# One event loop per module: the module shares one Chromium (conftest.py).
pytestmark = pytest.mark.asyncio(loop_scope="module")

# Host B on "another machine": the name its session records is machine-b.
HOST_B_ELSEWHERE = r"""
import asyncio, json, socket, sys
socket.gethostname = lambda: "machine-b"
from toolbound import ToolHost

async def main(workspace, data_dir, store, gate):
    async with ToolHost(workspace, data_dir=data_dir, session_id="host-b", store=store) as host:
        command = f"echo first; read word < {gate}; echo second $word; seq 1 5000"
        args = {"command": command, "description": "Wait at the gate, then count"}
        async for event in host.stream("Bash", args, tool_call_id="b1"):
            print(json.dumps(event), flush=True)

asyncio.run(main(*sys.argv[1:]))
"""

pg = pytest.fixture(scope="module")(pgserver.running)


async def sse(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The events of an SSE response as they arrive (comments and ``end`` aside)."""
    fields: dict[str, str] = {}
    async for line in response.aiter_lines():
        if line:
            key, _, value = line.partition(": ")
            fields[key] = value
            continue
        if "id" in fields:
            yield json.loads(fields["data"])
        fields = {}


async def next_event(events: AsyncIterator[dict[str, Any]]) -> dict[str, Any]:
    return await asyncio.wait_for(anext(events), WAIT_S)


@dataclass
class Fleet:
    """Host A here with the web view attached, host B a process blocked at ``gate``."""

    host_a: ToolHost
    web: WebService
    server: LocalServer
    host_b: asyncio.subprocess.Process
    gate: Path
    first: dict[str, Any]  # B's first event, its "first" line: B is running


@contextlib.asynccontextmanager
async def fleet(url: str, tmp_path: Path, host_b_script: str) -> AsyncIterator[Fleet]:
    """Both hosts on one store, A's call done and B's call running, stopped on the way out."""
    for name in ("a", "b"):
        (tmp_path / name / "ws").mkdir(parents=True)
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    host_a = ToolHost(
        tmp_path / "a" / "ws", data_dir=tmp_path / "a" / "data", session_id="host-a", store=url
    )
    async with host_a:
        web = WebService.open(workspace=host_a.workspace, data_dir=host_a.data_dir, store_url=url)
        web.attach(host_a)
        server = await LocalServer(build_app(web.view)).start()
        host_b = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            host_b_script,
            str(tmp_path / "b" / "ws"),
            str(tmp_path / "b" / "data"),
            url,
            str(gate),
            stdout=asyncio.subprocess.PIPE,
        )
        try:
            await host_a.call("Bash", {"command": "echo from a"}, tool_call_id="a1")
            assert host_b.stdout is not None
            first = json.loads(await asyncio.wait_for(host_b.stdout.readline(), WAIT_S))
            assert (first["type"], first["data"]) == ("chunk", "first\n")
            yield Fleet(host_a, web, server, host_b, gate, first)
        finally:
            if host_b.returncode is None:
                host_b.kill()
                await host_b.wait()
            await server.stop()
            await asyncio.to_thread(web.close)


async def test_a_web_view_lists_both_hosts_and_streams_the_other_hosts_call_live(
    pg: pgserver.PgServer, tmp_path: Path
) -> None:
    async with fleet(pg.new_url(), tmp_path, HOST_B) as f:
        headers = {"Authorization": f"Bearer {f.web.view.token}"}
        async with httpx.AsyncClient(
            base_url=f.server.base_url, headers=headers, timeout=WAIT_S
        ) as client:
            sessions = (await client.get("/api/sessions")).json()["sessions"]
            assert {s["id"] for s in sessions} == {"host-a", "host-b"}
            calls = (await client.get("/api/sessions/host-b/calls")).json()["calls"]
            assert [(c["toolCallId"], c["status"]) for c in calls] == [("b1", "running")]

            path = "/api/sessions/host-b/calls/b1/events"
            async with client.stream("GET", path) as response:
                events = sse(response)
                seen = [await next_event(events)]
                assert seen == [f.first]
                # B's call is still running, blocked on the gate: open it.
                await asyncio.to_thread(f.gate.write_text, "go\n")
                while seen[-1]["type"] != "result":
                    seen.append(await next_event(events))
        streamed = [json.loads(line) for line in (await f.host_b.communicate())[0].splitlines()]
        assert f.host_b.returncode == 0
    assert seen == [f.first, *streamed]
    chunks = "".join(e["data"] for e in seen if e["type"] == "chunk")
    assert chunks == "first\nsecond go\n"
    assert seen[-1]["result"]["exitCode"] == 0


async def test_the_page_shows_every_host_of_a_fleet_and_another_machines_call_live(
    pg: pgserver.PgServer, tmp_path: Path, browser: Any, screenshot: Any
) -> None:
    async with fleet(pg.new_url(), tmp_path, HOST_B_ELSEWHERE) as f:
        page = await browser.new_page()
        await page.goto(f"{f.server.base_url}/?token={f.web.view.token}")
        await page.goto(f"{f.server.base_url}/#s=host-b&c=b1")
        await page.wait_for_function(
            "() => document.querySelectorAll('#sessions li[data-id]').length === 2"
        )
        rows = await page.evaluate(
            "() => [...document.querySelectorAll('#sessions li[data-id]')].map(li => "
            "[li.dataset.id, li.querySelector('.ws').textContent, "
            "li.querySelector('.host').textContent, !!li.querySelector('.badge.live')])"
        )
        here = f.web.view.here
        assert sorted(rows) == [
            ["host-a", str(f.host_a.workspace), here, True],
            ["host-b", str((tmp_path / "b" / "ws").resolve()), "machine-b", False],
        ]
        # B's call streams into the page while B, on its machine, still runs it.
        await page.wait_for_function("() => window.toolbound.panes.stdout.lineText(0) === 'first'")
        assert await page.text_content("#call-head .badge") == "running"
        assert await page.text_content("#call-description") == "Wait at the gate, then count"
        assert f.host_b.returncode is None
        await screenshot(page, "fleet-live")

        await asyncio.to_thread(f.gate.write_text, "go\n")
        await page.wait_for_selector("#detail[data-stream=done]", timeout=WAIT_S * 1000)
        assert await page.text_content("#result .status") == "exit status 0"
        held = "() => { const p = window.toolbound.panes.stdout; "
        held += "return [...Array(p.count).keys()].map(i => p.lineText(i)); }"
        assert await page.evaluate(held) == ["first", "second go", *map(str, range(1, 5001))]
        gone = f"stdout: This output is a file on machine-b; this web view runs on {here}."
        assert await page.text_content("#outputs .gone[data-output=stdout]") == gone
        await screenshot(page, "fleet-done")
        await asyncio.wait_for(f.host_b.communicate(), WAIT_S)
        assert f.host_b.returncode == 0
