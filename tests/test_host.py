"""ToolHost dispatch: argument errors and unknown tools are results, never tracebacks."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from toolbound import DEFAULT_LIMITS, ToolHost


@pytest.fixture
async def host(tmp_path: Path) -> Any:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with ToolHost(workspace=ws, data_dir=tmp_path / "data", session_id="t1") as h:
        yield h


async def test_an_unknown_tool_is_a_tool_unknown_result(host: ToolHost) -> None:
    result = await host.call("Patch", {"path": "x"})
    assert result == {
        "error": {
            "code": "TOOL_UNKNOWN",
            "message": "There is no tool named 'Patch'; the tools are Read, Glob, Grep, Bash, "
            "Edit, Write, JobOutput, JobStop, ApplyPatch, List, JobInput.",
        }
    }


@pytest.mark.parametrize(
    ("tool", "args", "detail"),
    [
        ("Read", {}, "'path' is required"),
        ("Read", {"path": "a", "limit": 2001}, "'limit' must be 1-2000 lines"),
        ("Read", {"path": "a", "limit": 0}, "'limit' must be 1-2000 lines"),
        (
            "Read",
            {"path": "a", "offset": -1},
            "'offset' input should be greater than or equal to 0",
        ),
        (
            "Read",
            {"path": "a", "bogus": 1},
            "unknown argument 'bogus' (Read takes path, offset, limit, pages)",
        ),
        ("Glob", {"pattern": "*", "limit": 1001}, "'limit' must be 1-1000"),
        ("Grep", {"pattern": "x", "outputMode": "lines"}, "'outputMode' input should be"),
        ("Grep", {"pattern": "x", "headLimit": 0}, "'headLimit' input should be greater than"),
        ("Bash", {"command": "  "}, "'command' is empty"),
        ("Bash", {"command": "true", "timeout": 0}, "'timeout' must be 1-300 seconds (got 0)"),
        ("Bash", {"command": "true", "timeout": 301}, "'timeout' must be 1-300 seconds (got 301)"),
        ("Bash", {"command": "true", "timeout": "abc"}, "'timeout' must be a number, not "),
        ("Bash", {"command": "true", "timeout": True}, "'timeout' must be a number, not "),
        ("Bash", "ls", "arguments must be a JSON object"),
    ],
)
async def test_bad_arguments_are_tool_invalid_argument(
    host: ToolHost, tool: str, args: Any, detail: str
) -> None:
    result = await host.call(tool, args)
    assert result["error"]["code"] == "TOOL_INVALID_ARGUMENT"
    message = result["error"]["message"]
    assert message.startswith(f"Invalid arguments for {tool}: ")
    assert detail in message
    assert message.endswith("Fix the arguments and call again.")


async def test_argument_ranges_follow_the_limits_in_force(tmp_path: Path) -> None:
    limits = DEFAULT_LIMITS.replace(read_window_lines=10)
    async with ToolHost(workspace=tmp_path, data_dir=tmp_path / "d", limits=limits) as host:
        result = await host.call("Read", {"path": "a", "limit": 11})
    assert "'limit' must be 1-10 lines" in result["error"]["message"]


async def test_stream_of_an_error_is_one_result_event_with_seq_zero(host: ToolHost) -> None:
    events = [e async for e in host.stream("Nope", {}, tool_call_id="c1")]
    assert [(e["type"], e["toolCallId"], e["seq"]) for e in events] == [("result", "c1", 0)]
    assert events[0]["result"]["error"]["code"] == "TOOL_UNKNOWN"


async def test_a_call_given_no_id_gets_its_own_in_the_usual_shape(host: ToolHost) -> None:
    ids = set()
    for _ in range(20):
        ids |= {e["toolCallId"] async for e in host.stream("Nope", {})}
    assert len(ids) == 20
    assert all(re.fullmatch(r"call_[0-9a-f]{16}", i) for i in ids), ids


async def test_abort_of_an_unknown_call_says_so(host: ToolHost) -> None:
    assert host.abort("no-such-call") is False


def test_a_bad_session_id_is_refused_at_once(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^Session id '\.\./x' is not allowed"):
        ToolHost(workspace=tmp_path, data_dir=tmp_path, session_id="../x")


async def test_a_host_leaves_no_files_behind_when_nothing_spilled(tmp_path: Path) -> None:
    async with ToolHost(workspace=tmp_path / "..", data_dir=tmp_path / "d", session_id="q") as h:
        await h.call("Read", {})
    assert not (tmp_path / "d" / "scratch").exists()
    assert list((tmp_path / "d" / "locks").iterdir()) == []


# Every string argument of every tool, in a call that is otherwise well formed.
_STRING_ARGUMENTS: dict[str, dict[str, Any]] = {
    "Read": {"path": "a.txt", "pages": "1"},
    "Glob": {"pattern": "*", "path": "."},
    "Grep": {"pattern": "x", "path": ".", "glob": "*", "type": "py"},
    "Bash": {"command": "true", "description": "nothing", "workdir": "."},
    "Edit": {"path": "a.txt", "oldString": "a", "newString": "b"},
    "Write": {"path": "a.txt", "content": "b"},
    "JobOutput": {"jobId": "job_x", "until": "x"},
    "JobStop": {"jobId": "job_x"},
    "ApplyPatch": {"patch": "*** Begin Patch\n*** End Patch"},
    "List": {"path": "."},
    "JobInput": {"jobId": "job_x", "input": "x"},
}


def test_the_nul_byte_table_names_every_string_argument_of_every_tool() -> None:
    from toolbound.tools.registry import SPECS

    strings = {
        spec.name: sorted(
            (field.alias or name)
            for name, field in spec.args.model_fields.items()
            if "str" in str(field.annotation)
        )
        for spec in SPECS
    }
    assert strings == {tool: sorted(args) for tool, args in _STRING_ARGUMENTS.items()}


@pytest.mark.parametrize(
    ("tool", "name"), [(tool, name) for tool, args in _STRING_ARGUMENTS.items() for name in args]
)
async def test_a_nul_byte_in_any_string_argument_is_an_invalid_argument(
    host: ToolHost, tool: str, name: str
) -> None:
    args = {**_STRING_ARGUMENTS[tool], name: "a\x00b"}
    assert await host.call(tool, args) == {
        "error": {
            "code": "TOOL_INVALID_ARGUMENT",
            "message": f"Invalid arguments for {tool}: '{name}' holds a NUL byte (\\0), which "
            "no path, pattern, command line or text file can carry; remove it (a command can "
            "still make one: printf '\\0'). Fix the arguments and call again.",
        }
    }


async def test_a_command_longer_than_one_program_argument_says_to_run_a_script(
    host: ToolHost,
) -> None:
    longest = "#" + "x" * (128 * 1024 - 2)  # 131071 bytes: bash still takes it
    assert (await host.call("Bash", {"command": longest}))["exitCode"] == 0
    too_long = await host.call("Bash", {"command": longest + "é"})
    assert too_long == {
        "error": {
            "code": "TOOL_INVALID_ARGUMENT",
            "message": "Invalid arguments for Bash: 'command' is 131073 bytes, longer than the "
            "131071 bytes the kernel takes for one argument of a program (MAX_ARG_STRLEN, "
            "128 KiB); write the script to a file with Write, then run that file (`bash "
            "script.sh`). Fix the arguments and call again.",
        }
    }
    grep = await host.call("Grep", {"pattern": "x" * 200_000})
    assert grep["error"]["code"] == "TOOL_INVALID_ARGUMENT"
    assert "'pattern' is 200000 bytes" in grep["error"]["message"]
