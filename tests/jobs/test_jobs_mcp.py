"""Jobs over MCP: the official SDK client lists JobOutput and JobStop, validates their
results against their output schemas (``serve --structured``), and a session's end
stops its jobs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client

from mcp_client import bearer_transport, read_announcement, serve_process
from support import alive, wait_for
from toolbound.tooldefs import tool_defs

WAIT_S = 30.0


def structured(result: types.CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None
    return result.structured_content


async def test_an_mcp_client_lists_and_calls_the_job_tools(tmp_path: Path) -> None:
    ws, data = tmp_path / "ws", tmp_path / "data"
    ws.mkdir()
    argv = ["-m", "toolbound", "serve", "--http", "127.0.0.1:0", "--structured"]
    with serve_process([*argv, "--workspace", str(ws), "--data-dir", str(data)]) as lines:
        url, token = read_announcement(lines)
        client = Client(bearer_transport(url, token), mode="legacy", read_timeout_seconds=WAIT_S)
        async with client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            defs = {d.name: d for d in tool_defs()}
            for name in ("JobOutput", "JobStop"):
                assert listed[name].description == defs[name].description
                assert listed[name].input_schema == defs[name].input_schema
                assert listed[name].output_schema == defs[name].output_schema
            command = f"{sys.executable} -u -c \"print('ready'); import time; time.sleep(600)\""
            started = await client.call_tool("Bash", {"command": command, "background": True})
            job = structured(started)
            assert started.is_error is False
            waited = await client.call_tool(
                "JobOutput", {"jobId": job["jobId"], "until": "^ready$", "waitS": WAIT_S}
            )
            assert (structured(waited)["matched"], structured(waited)["state"]) == (
                "ready",
                "running",
            )
            assert isinstance(waited.content[0], types.TextContent)
            assert waited.content[0].text.startswith(
                f"[job {job['jobId']} running]\n[matched: ready]"
            )
            jobs = structured(await client.call_tool("JobOutput", {}))["jobs"]
            assert [j["jobId"] for j in jobs] == [job["jobId"]]
            missing = await client.call_tool("JobStop", {"jobId": "job_nope"})
            assert missing.is_error is True
            assert structured(missing)["error"]["code"] == "TOOL_JOB_NOT_FOUND"
            # A second job the session's end must stop.
            left = structured(
                await client.call_tool("Bash", {"command": "sleep 600", "background": True})
            )
            stopped = structured(await client.call_tool("JobStop", {"jobId": job["jobId"]}))
            assert stopped["state"] == "killed"
            assert not alive(job["pid"])
            assert alive(left["pid"])
        # The client left: its MCP session ended, and the session's jobs with it.
        wait_for(lambda: not alive(left["pid"]), "the session's job to be stopped")
