"""Jobs over MCP: the official SDK client lists JobOutput, JobInput and JobStop, validates their
results against their output schemas (``serve --structured``), and a session's end
stops its jobs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client

from mcp_client import bearer_transport, read_announcement, serve_process
from support import SANDBOX_PYTHON, alive, wait_for
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
            # Under serve's default sandbox: an interpreter a confined command can see.
            command = f"{SANDBOX_PYTHON} -u -c \"print('ready'); import time; time.sleep(600)\""
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


async def test_an_mcp_client_talks_to_a_job_through_jobinput_and_waits_for_its_end(
    tmp_path: Path,
) -> None:
    ws, data = tmp_path / "ws", tmp_path / "data"
    (ws / "sub dir").mkdir(parents=True)
    argv = ["-m", "toolbound", "serve", "--http", "127.0.0.1:0", "--structured"]
    with serve_process([*argv, "--workspace", str(ws), "--data-dir", str(data)]) as lines:
        url, token = read_announcement(lines)
        client = Client(bearer_transport(url, token), mode="legacy", read_timeout_seconds=WAIT_S)
        async with client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            defs = {d.name: d for d in tool_defs()}
            assert listed["JobInput"].description == defs["JobInput"].description
            assert listed["JobInput"].input_schema == defs["JobInput"].input_schema
            assert listed["JobInput"].output_schema == defs["JobInput"].output_schema
            # Under serve's default sandbox, in a folder of the workspace.
            started = await client.call_tool(
                "Bash",
                {"command": "pwd; cat; echo eof", "background": True, "workdir": "sub dir"},
            )
            job = structured(started)
            assert job["workdir"] == "sub dir"
            said = await client.call_tool("JobInput", {"jobId": job["jobId"], "input": "hi\n"})
            assert said.is_error is False
            assert "hi\n" in structured(said)["stdout"]
            assert isinstance(said.content[0], types.TextContent)
            assert said.content[0].text.startswith(f"[job {job['jobId']} ")
            await client.call_tool("JobInput", {"jobId": job["jobId"], "input": "", "close": True})
            done = await client.call_tool(
                "JobOutput",
                {
                    "jobId": job["jobId"],
                    "since": {"stdout": 0, "stderr": 0},
                    "waitFor": "exit",
                    "waitS": WAIT_S,
                },
            )
            assert structured(done)["state"] == "exited"
            assert structured(done)["stdout"] == f"{ws / 'sub dir'}\nhi\neof\n"
            # A terminal job, and a refusal of a job that ended.
            tty = structured(
                await client.call_tool(
                    "Bash", {"command": "stty size", "background": True, "tty": True}
                )
            )
            sized = await client.call_tool(
                "JobOutput", {"jobId": tty["jobId"], "waitFor": "exit", "waitS": WAIT_S}
            )
            assert structured(sized)["stdout"] == "40 120\n"
            late = await client.call_tool("JobInput", {"jobId": tty["jobId"], "input": "x"})
            assert late.is_error is True
            assert structured(late)["error"]["code"] == "TOOL_INVALID_ARGUMENT"
