"""``toolbound serve`` end to end: the official SDK client against the real server.

Each test runs over stdio, over an HTTP session (handshake era) and over
sessionless HTTP (the 2026-07-28 era), see ``conftest.py``.
"""

from __future__ import annotations

import os
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
import pytest

from mcp_client import text_of
from support import alive, wait_for_async
from toolbound.limits import DEFAULT_LIMITS
from toolbound.mcp_server import CHUNK_META_KEY
from toolbound.tooldefs import tool_defs

if TYPE_CHECKING:
    from conftest import Connect

# The module shares one stdio session (see conftest), so it shares one loop.
pytestmark = pytest.mark.asyncio(loop_scope="module")

WAIT_S = 30.0


async def test_tools_list_serves_the_definitions_without_output_schemas(connect: Connect) -> None:
    async with connect() as conn:
        listed = await conn.client.list_tools()
        got = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools]
        # serve's default profile is economy: the tools are described for it.
        assert got == [d.render("mcp") for d in tool_defs(profile="economy")]
        assert [(t.name, t.annotations and t.annotations.read_only_hint) for t in listed.tools] == [
            ("Read", True),
            ("Glob", True),
            ("Grep", True),
            ("Bash", False),
            ("Edit", False),
            ("Write", False),
            ("JobOutput", True),
            ("JobStop", False),
            ("ApplyPatch", False),
            ("List", True),
            ("JobInput", False),
        ]
        assert [t.output_schema for t in listed.tools] == [None] * len(listed.tools)


async def test_tools_list_carries_the_shells_numbers_input_terminal_and_wait_for(
    connect: Connect,
) -> None:
    """What a client reads of JobInput's bound, the terminal's size and ``waitFor``
    is the host's limits, as tools/list sends them."""
    limits = DEFAULT_LIMITS
    async with connect() as conn:
        tools = {t.name: t for t in (await conn.client.list_tools()).tools}
    job_input, bash, job_output = tools["JobInput"], tools["Bash"], tools["JobOutput"]
    assert job_input.description is not None
    assert f"At most {limits.job_input_max_bytes // 1024}KB a call" in job_input.description
    assert f"waits up to {limits.job_input_wait_s:g} s" in job_input.description
    assert f"pauses for {limits.job_input_quiet_s:g} s" in job_input.description
    assert job_input.input_schema["required"] == ["jobId", "input"]
    assert job_input.input_schema["properties"]["close"]["type"] == "boolean"
    assert bash.description is not None
    size = f"{limits.job_tty_columns}x{limits.job_tty_rows} pseudo-terminal"
    assert size in bash.description
    assert bash.input_schema["properties"]["tty"]["type"] == "boolean"
    assert job_output.description is not None
    assert '`waitFor: "exit"`' in job_output.description
    wait_for = job_output.input_schema["properties"]["waitFor"]
    assert (wait_for["enum"], wait_for["default"]) == (["output", "exit"], "output")


async def test_a_read_then_an_edit_changes_the_file_and_shows_the_diff(connect: Connect) -> None:
    async with connect() as conn:
        (conn.dir / "e.py").write_text("x = 1\n")
        path = f"{conn.rel}/e.py"
        refused = await conn.client.call_tool(
            "Edit", {"path": path, "oldString": "x = 1", "newString": "x = 2"}
        )
        assert refused.is_error
        assert text_of(refused).startswith("TOOL_NOT_READ: ")
        read = await conn.client.call_tool("Read", {"path": path})
        assert not read.is_error
        result = await conn.client.call_tool(
            "Edit", {"path": path, "oldString": "x = 1", "newString": "x = 2"}
        )
        diff = f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
        assert (result.is_error, result.structured_content) == (False, None)
        assert text_of(result) == f"Edited {path}: 1 replacement.\n{diff}"
        assert (conn.dir / "e.py").read_text() == "x = 2\n"


async def test_a_bad_argument_is_an_is_error_result_whose_text_is_code_and_message(
    connect: Connect,
) -> None:
    async with connect() as conn:
        result = await conn.client.call_tool("Read", {"path": "a.txt", "limit": 0})
        message = (
            "Invalid arguments for Read: 'limit' must be 1-2000 lines. "
            "Fix the arguments and call again."
        )
        assert (result.is_error, result.structured_content) == (True, None)
        assert text_of(result) == f"TOOL_INVALID_ARGUMENT: {message}"


async def test_an_unknown_tool_is_a_tool_unknown_result(connect: Connect) -> None:
    async with connect() as conn:
        result = await conn.client.call_tool("Patch", {"path": "a.txt"})
        message = (
            "There is no tool named 'Patch'; the tools are Read, Glob, Grep, Bash, Edit, Write, "
            "JobOutput, JobStop, ApplyPatch, List, JobInput."
        )
        assert (result.is_error, result.structured_content) == (True, None)
        assert text_of(result) == f"TOOL_UNKNOWN: {message}"


async def test_read_returns_the_window_and_the_file_text(connect: Connect) -> None:
    async with connect() as conn:
        (conn.dir / "a.txt").write_text("one\ntwo\n")
        result = await conn.client.call_tool("Read", {"path": f"{conn.rel}/a.txt"})
        assert (result.is_error, result.structured_content) == (False, None)
        assert text_of(result) == "one\ntwo\n"


async def test_glob_lists_matches_newest_first_one_a_line(connect: Connect) -> None:
    async with connect() as conn:
        for age, name in enumerate(["new.py", "old.py"]):
            (conn.dir / name).write_text("x\n")
            os.utime(conn.dir / name, (1_700_000_000 - age * 100, 1_700_000_000 - age * 100))
        result = await conn.client.call_tool("Glob", {"pattern": "*.py", "path": conn.rel})
        assert (result.is_error, result.structured_content) == (False, None)
        matches = [f"{conn.rel}/new.py", f"{conn.rel}/old.py"]
        assert text_of(result) == "\n".join(matches)


async def test_grep_names_the_path_once_then_line_and_text(connect: Connect) -> None:
    async with connect() as conn:
        (conn.dir / "a.py").write_text("def f():\n    return 1\n")
        result = await conn.client.call_tool("Grep", {"pattern": "return", "path": conn.rel})
        assert (result.is_error, result.structured_content) == (False, None)
        assert text_of(result) == f"{conn.rel}/a.py\n2:    return 1"


async def test_bash_text_is_the_exit_status_then_each_stream_labelled(connect: Connect) -> None:
    async with connect() as conn:
        result = await conn.client.call_tool(
            "Bash", {"command": "echo out; echo err >&2; exit 3", "timeout": 10}
        )
        assert (result.is_error, result.structured_content) == (False, None)
        assert text_of(result) == (
            "[exit status 3]\n<stdout>\nout\n</stdout>\n<stderr>\nerr\n</stderr>"
        )


async def test_a_timed_out_call_is_an_error_whose_text_is_the_bash_text(connect: Connect) -> None:
    async with connect() as conn:
        result = await conn.client.call_tool(
            "Bash", {"command": "echo started; sleep 30", "timeout": 1}
        )
        assert (result.is_error, result.structured_content) == (True, None)
        assert text_of(result).startswith("[timed out]\n[")
        assert text_of(result).endswith("<stdout>\nstarted\n</stdout>")


async def test_bash_chunks_arrive_as_progress_notifications(connect: Connect) -> None:
    async with connect() as conn:
        progress: list[tuple[float, str | None]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((value, message))

        result = await conn.client.call_tool(
            "Bash",
            {"command": "echo one; echo two >&2; echo three", "timeout": 10},
            progress_callback=on_progress,
        )

        def notes() -> list[types.ProgressNotificationParams]:
            found = [
                n.params for n in conn.notifications if isinstance(n, types.ProgressNotification)
            ]
            return sorted(found, key=lambda p: p.progress)

        def chunks(stream: str) -> str:
            return "".join(
                p.message or ""
                for p in notes()
                if (p.meta or {})[CHUNK_META_KEY]["stream"] == stream
            )

        # Notifications are delivered by tasks of their own, so they may trail the result.
        await wait_for_async(
            lambda: chunks("stdout") == "one\nthree\n" and chunks("stderr") == "two\n",
            "every chunk as a progress notification",
            timeout_s=WAIT_S,
        )
        params = notes()
        assert [p.progress for p in params] == [float(i + 1) for i in range(len(params))]
        assert [(p.meta or {})[CHUNK_META_KEY]["seq"] for p in params] == list(range(len(params)))
        assert sorted(progress) == [(p.progress, p.message) for p in params]
        assert text_of(result) == (
            "[exit status 0]\n<stdout>\none\nthree\n</stdout>\n<stderr>\ntwo\n</stderr>"
        )


async def test_a_cancelled_call_stops_its_process_tree_and_the_server_keeps_serving(
    connect: Connect,
) -> None:
    async with connect() as conn:
        shell, child = conn.dir / "shell.pid", conn.dir / "child.pid"
        command = (
            f"sleep 300 & echo $! > {conn.rel}/child.pid; echo $$ > {conn.rel}/shell.pid; wait"
        )
        with anyio.fail_after(WAIT_S):
            async with anyio.create_task_group() as tg:

                async def hung() -> None:
                    await conn.client.call_tool("Bash", {"command": command, "timeout": 300})
                    pytest.fail("the hung command returned")

                tg.start_soon(hung)
                await wait_for_async(
                    lambda: shell.stat().st_size > 0 if shell.exists() else False,
                    "pid",
                    timeout_s=WAIT_S,
                )
                tg.cancel_scope.cancel()
        pids = [int(shell.read_text()), int(child.read_text())]
        await wait_for_async(
            lambda: not any(alive(p) for p in pids), "the process tree to be gone", timeout_s=WAIT_S
        )
        result = await conn.client.call_tool("Bash", {"command": "echo still here"})
        assert text_of(result) == "[exit status 0]\n<stdout>\nstill here\n</stdout>"


async def test_ten_reads_and_two_bash_calls_at_once_all_complete(connect: Connect) -> None:
    async with connect() as conn:
        for i in range(10):
            (conn.dir / f"f{i}.txt").write_text(f"file {i}\n" * (i + 1))
        results: dict[str, types.CallToolResult] = {}

        async def call(key: str, tool: str, args: dict[str, Any]) -> None:
            results[key] = await conn.client.call_tool(tool, args)

        with anyio.fail_after(WAIT_S):
            async with anyio.create_task_group() as tg:
                for i in range(10):
                    tg.start_soon(call, f"r{i}", "Read", {"path": f"{conn.rel}/f{i}.txt"})
                for i in range(2):
                    tg.start_soon(call, f"b{i}", "Bash", {"command": f"sleep 0.2; echo bash {i}"})
        for i in range(10):
            assert text_of(results[f"r{i}"]) == f"file {i}\n" * (i + 1)
        for i in range(2):
            assert text_of(results[f"b{i}"]) == f"[exit status 0]\n<stdout>\nbash {i}\n</stdout>"


async def test_serve_runs_the_economy_profile_unless_told_otherwise(connect: Connect) -> None:
    async with connect() as conn:
        # 300 lines of 100 bytes: past the economy's 12 KB stdout budget, far within the
        # seed's 96 KB; the economy keeps both ends with its marker between.
        command = "for i in $(seq 1 300); do printf '%099d\\n' $i; done"
        result = await conn.client.call_tool("Bash", {"command": command})
        text = text_of(result)
        assert text.startswith("[exit status 0]\n")
        assert f"{1:099d}\n" in text
        assert f"{300:099d}\n" in text
        assert f"{150:099d}\n" not in text


async def test_the_server_names_its_version_and_gives_the_instructions(connect: Connect) -> None:
    async with connect() as conn:
        info = conn.client.server_info
        assert info is not None
        assert (info.name, info.version) == ("toolbound", version("toolbound"))
        said = conn.client.instructions or ""
        assert said.startswith("toolbound's tools work in this workspace. Find with Glob")
        assert "\nProfile: economy" in said
        assert "\nFit: each result is kept within the per-result limit" in said
        assert "\nBash sandbox: " in said
