"""The command line: one JSON document, exit 0/1/2.

Most cases run ``cli.main`` in this process (the ``run`` fixture); a real
process is kept where it is the point: the exit status ``python -m toolbound``
gives, ``--events`` lines as a process streams them, and a session's read
record written by one process.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from support import run_cli, run_main
from toolbound.store import SessionStore
from toolbound.store.db import DB_NAME

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Run:
    """``toolbound ARGS…, cwd=…`` run by ``cli.main`` in this process."""
    return functools.partial(run_main, capsys)


def test_tools_prints_the_definitions_in_each_format(run: Run, tmp_path: Path) -> None:
    for fmt, key in (("anthropic", "input_schema"), ("openai", "function"), ("mcp", "inputSchema")):
        out = run("tools", "--format", fmt, cwd=tmp_path)
        assert out.returncode == 0
        defs = json.loads(out.stdout)
        assert [d.get("name") or d["function"]["name"] for d in defs][6:] == [
            "JobOutput",
            "JobStop",
            "ApplyPatch",
            "List",
            "JobInput",
        ]
        assert all(key in d for d in defs)


def test_a_tool_error_prints_json_and_exits_1(tmp_path: Path) -> None:
    out = run_cli("call", "Nope", "{}", "--data-dir", str(tmp_path / "d"), cwd=tmp_path)
    assert out.returncode == 1
    assert json.loads(out.stdout)["error"]["code"] == "TOOL_UNKNOWN"
    assert out.stdout.count("\n") == 1


def test_events_print_json_lines_ending_with_the_result(tmp_path: Path) -> None:
    out = run_cli("call", "Read", "{}", "--events", "--data-dir", str(tmp_path / "d"), cwd=tmp_path)
    assert out.returncode == 1
    events = [json.loads(line) for line in out.stdout.splitlines()]
    assert [e["type"] for e in events] == ["result"]
    assert events[0]["result"]["error"]["code"] == "TOOL_INVALID_ARGUMENT"


def test_what_one_call_read_or_wrote_is_known_to_the_session_s_next_call(
    run: Run, tmp_path: Path
) -> None:
    data = ("--data-dir", str(tmp_path / "d"))
    args = '{"path": "pkg/a.txt", "content": "one\\n"}'
    # The Write runs in a process of its own; the calls after it run in this one.
    wrote = run_cli("call", "Write", args, "--text", *data, cwd=tmp_path)
    assert (wrote.returncode, wrote.stdout.splitlines()[0]) == (0, "Created pkg/a.txt (4 bytes).")
    assert (tmp_path / "pkg/a.txt").read_text() == "one\n"
    # Each `toolbound call` is its own host, but the session's read record is in the
    # store: the next call of the session (a host in another process than the
    # Write's) may Edit what that one wrote.
    edit = '{"path": "pkg/a.txt", "oldString": "one", "newString": "two"}'
    edited = run("call", "Edit", edit, *data, cwd=tmp_path)
    assert (edited.returncode, json.loads(edited.stdout)["replacements"]) == (0, 1)
    # Another session has read nothing.
    other = run("call", "Edit", edit, *data, "--session", "other", cwd=tmp_path)
    assert json.loads(other.stdout)["error"]["code"] == "TOOL_NOT_READ"
    # A change by another process between two calls is seen by the next one.
    (tmp_path / "pkg/a.txt").write_text("two, changed\n")
    again = '{"path": "pkg/a.txt", "oldString": "two", "newString": "three"}'
    refused = run("call", "Edit", again, *data, cwd=tmp_path)
    assert json.loads(refused.stdout)["error"]["code"] == "TOOL_FILE_CHANGED"
    read = run("call", "Read", '{"path": "pkg/a.txt"}', *data, cwd=tmp_path)
    assert read.returncode == 0
    edited = run("call", "Edit", again, *data, cwd=tmp_path)
    assert (edited.returncode, (tmp_path / "pkg/a.txt").read_text()) == (0, "three, changed\n")


def test_text_prints_the_model_text_with_the_same_exit_status(run: Run, tmp_path: Path) -> None:
    data = ("--data-dir", str(tmp_path / "d"))
    bash = run(
        "call", "Bash", '{"command": "echo out; echo err >&2"}', "--text", *data, cwd=tmp_path
    )
    assert (bash.returncode, bash.stdout) == (
        0,
        "[exit status 0]\n<stdout>\nout\n</stdout>\n<stderr>\nerr\n</stderr>\n",
    )
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    read = run("call", "Read", '{"path": "a.txt"}', "--text", *data, cwd=tmp_path)
    assert (read.returncode, read.stdout) == (0, "one\ntwo\n")
    error = run("call", "Nope", "{}", "--text", *data, cwd=tmp_path)
    assert (error.returncode, error.stdout) == (
        1,
        "TOOL_UNKNOWN: There is no tool named 'Nope'; the tools are Read, Glob, Grep, Bash, "
        "Edit, Write, JobOutput, JobStop, ApplyPatch, List, JobInput.\n",
    )
    timed_out = run(
        "call", "Bash", '{"command": "sleep 5", "timeout": 1}', "--text", *data, cwd=tmp_path
    )
    assert timed_out.returncode == 1
    assert timed_out.stdout.startswith("[timed out]\n")


def test_the_result_event_carries_the_model_text(run: Run, tmp_path: Path) -> None:
    args = '{"command": "printf \'no newline\'"}'
    out = run("call", "Bash", args, "--events", "--data-dir", str(tmp_path / "d"), cwd=tmp_path)
    assert out.returncode == 0
    *chunks, result = [json.loads(line) for line in out.stdout.splitlines()]
    assert [c["data"] for c in chunks] == ["no newline"]
    assert result["text"] == "[exit status 0]\n<stdout>\nno newline</stdout>"


def test_text_and_events_are_exclusive(run: Run, tmp_path: Path) -> None:
    out = run("call", "Read", "{}", "--text", "--events", cwd=tmp_path)
    assert out.returncode == 2
    assert "not allowed with argument" in out.stderr


def test_bad_json_arguments_are_a_usage_error(run: Run, tmp_path: Path) -> None:
    out = run("call", "Read", "{path:", "--data-dir", str(tmp_path / "d"), cwd=tmp_path)
    assert out.returncode == 2
    assert out.stdout == ""
    assert "JSON_ARGS is not valid JSON" in out.stderr


def test_a_missing_workspace_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    out = run("call", "Read", "{}", "--workspace", str(tmp_path / "nope"), cwd=tmp_path)
    assert out.returncode == 2
    assert "is not a directory" in out.stderr


def test_a_timed_out_call_exits_1_and_prints_its_bash_result(run: Run, tmp_path: Path) -> None:
    args = '{"command": "echo started; sleep 30", "timeout": 1}'
    out = run("call", "Bash", args, "--data-dir", str(tmp_path / "d"), cwd=tmp_path)
    assert out.returncode == 1
    result = json.loads(out.stdout)
    assert "error" not in result
    assert (result["stdout"], result["timedOut"]) == ("started\n", True)


def test_call_runs_bash_in_a_workdir_and_reaches_jobinput(run: Run, tmp_path: Path) -> None:
    (tmp_path / "sub dir").mkdir()
    data = str(tmp_path / "d")
    args = '{"command": "pwd", "workdir": "sub dir"}'
    out = run("call", "Bash", args, "--data-dir", data, cwd=tmp_path)
    assert out.returncode == 0
    result = json.loads(out.stdout)
    assert (result["stdout"], result["workdir"]) == (f"{tmp_path / 'sub dir'}\n", "sub dir")
    # A one-call host has no job of an earlier call: JobInput is reached and says so.
    out = run(
        "call", "JobInput", '{"jobId": "job_x", "input": "y"}', "--data-dir", data, cwd=tmp_path
    )
    assert out.returncode == 1
    assert json.loads(out.stdout)["error"]["code"] == "TOOL_JOB_NOT_FOUND"


DEEP = "[" * 50_000 + "]" * 50_000


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ("{path:", "JSON_ARGS is not valid JSON"),
        (DEEP, "JSON_ARGS is nested too deeply"),
        ('{"path": "a", "x": ' + "[" * 5000 + "]" * 5000 + "}", "nested too deeply"),
        ('{"path": "a", "limit": ' + "9" * 5000 + "}", "JSON_ARGS is not valid JSON"),
        ('{"command": "true", "timeout": NaN}', "NaN is not a JSON number"),
    ],
)
def test_json_arguments_that_cannot_be_taken_are_a_usage_error(
    run: Run, tmp_path: Path, args: str, says: str
) -> None:
    out = run("call", "Read", args, "--data-dir", str(tmp_path / "d"), cwd=tmp_path)
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr.startswith("toolbound: ")
    assert says in out.stderr
    assert "Traceback" not in out.stderr
    assert len(out.stderr) < 500


def test_a_lone_surrogate_escape_in_json_arguments_is_a_tool_argument_error(
    run: Run, tmp_path: Path
) -> None:
    # Valid JSON, but not text: the tool refuses it (exit 1), and the call is recorded.
    out = run(
        "call",
        "Read",
        '{"path": "bad-\\udcff.txt"}',
        "--data-dir",
        str(tmp_path / "d"),
        cwd=tmp_path,
    )
    assert (out.returncode, json.loads(out.stdout), out.stderr) == (
        1,
        {
            "error": {
                "code": "TOOL_INVALID_ARGUMENT",
                "message": "Invalid arguments for Read: 'path' holds a lone surrogate (U+DCFF "
                "at character 4), which is not Unicode text; send the text itself (a file name "
                "that is not UTF-8 is written as the tools print it, each such byte as \\xHH). "
                "Fix the arguments and call again.",
            }
        },
        "",
    )


@pytest.mark.parametrize(
    ("tool", "args", "says"),
    [
        ("Read", {"path": "a.txt", "limit": "5"}, "'limit' must be an integer, not a string \"5\""),
        ("Read", {"path": "a.txt", "offset": True}, "'offset' must be an integer, not a boolean"),
        ("Read", {"path": 5}, "'path' must be a string, not a number 5"),
        ("Glob", {"pattern": "*", "limit": "5"}, "'limit' must be an integer, not a string"),
        ("Grep", {"pattern": "x", "headLimit": "5"}, "'headLimit' must be an integer"),
        ("Grep", {"pattern": "x", "caseInsensitive": "yes"}, "'caseInsensitive' must be true or"),
        ("Grep", {"pattern": "x", "before": 1.5}, "'before' must be an integer, not a number 1.5"),
        ("Bash", {"command": "true", "timeout": "10"}, "'timeout' must be a number, not a string"),
    ],
)
def test_argument_types_are_strict_json_for_every_tool(
    run: Run, tmp_path: Path, tool: str, args: dict[str, object], says: str
) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    out = run("call", tool, json.dumps(args), "--data-dir", str(tmp_path / "d"), cwd=tmp_path)
    assert out.returncode == 1
    error = json.loads(out.stdout)["error"]
    assert error["code"] == "TOOL_INVALID_ARGUMENT"
    assert says in error["message"]


def test_session_list_does_not_create_the_data_dir(run: Run, tmp_path: Path) -> None:
    data_dir = tmp_path / "nowhere"
    out = run("session", "list", "--data-dir", str(data_dir), cwd=tmp_path)
    assert (out.returncode, json.loads(out.stdout)) == (0, {"sessions": []})
    shown = run("session", "show", "s1", "--data-dir", str(data_dir), cwd=tmp_path)
    assert (shown.returncode, shown.stdout) == (2, "")
    assert "there is no session 's1'" in shown.stderr
    assert not data_dir.exists()


def test_a_store_failing_mid_query_is_a_usage_error_naming_it(run: Run, tmp_path: Path) -> None:
    data_dir = tmp_path / "d"
    with SessionStore(data_dir) as store:
        store.session("s1")
    with contextlib.closing(sqlite3.connect(data_dir / DB_NAME)) as raw:
        raw.execute("DROP TABLE tool_calls")  # it opens and migrates, then a query fails
    out = run("session", "show", "s1", "--data-dir", str(data_dir), cwd=tmp_path)
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr.startswith(f"toolbound: the store {data_dir / DB_NAME} failed: ")
    assert "no such table: tool_calls" in out.stderr
