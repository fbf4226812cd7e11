"""The Bash tool through ToolHost.call/stream and the CLI: streams, bounds, timeouts, trees.

Every test runs twice: unconfined (``off``) and inside the ``workspace-write``
sandbox, where the same behaviour must hold (tests/tools/test_sandbox.py has
what only the sandbox does).
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from support import SANDBOX_PYTHON
from toolbound import DEFAULT_LIMITS, ToolHost
from toolbound.bounds import count_lines
from toolbound.context import ToolContext
from toolbound.exec import spare
from toolbound.tools.registry import spec_for

KB = 1024
# A short grace keeps the tree tests fast; the seed's 2 s is only a default.
LIMITS = DEFAULT_LIMITS.replace(kill_grace_s=0.3)
# Bound on any single call in these tests (the call itself must never hang).
CALL_BOUND_S = 20.0


@pytest.fixture(params=["off", "workspace-write"])
def sandbox(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def host(tmp_path: Path, sandbox: str) -> AsyncIterator[ToolHost]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with ToolHost(workspace, tmp_path / "data", "s1", limits=LIMITS, sandbox=sandbox) as h:
        yield h


async def call(host: ToolHost, args: dict[str, Any]) -> dict[str, Any]:
    return await asyncio.wait_for(host.call("Bash", args), CALL_BOUND_S)


async def events(host: ToolHost, args: dict[str, Any], **kw: Any) -> list[dict[str, Any]]:
    async def collect() -> list[dict[str, Any]]:
        return [e async for e in host.stream("Bash", args, **kw)]

    return await asyncio.wait_for(collect(), CALL_BOUND_S)


def seq_text(first: int, last: int) -> str:
    return "".join(f"{i}\n" for i in range(first, last + 1))


def is_gone(host: ToolHost, pid: int) -> bool:
    """True once ``pid`` no longer exists (a zombie still does: it was not reaped).

    A sandboxed command prints PIDs of its own PID namespace: then no process
    in a sandbox of this test process may have that PID there.
    """
    if host.sandbox.confined:
        return pid not in sandboxed_pids()
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def sandboxed_pids() -> set[int]:
    """The in-namespace PIDs of this process's descendants that live in a PID namespace."""
    found: set[int] = set()
    todo = [os.getpid()]
    seen: set[int] = set()
    while todo:
        pid = todo.pop()
        for task in _listdir(f"/proc/{pid}/task"):
            for child in _text(f"/proc/{pid}/task/{task}/children").split():
                if int(child) not in seen:
                    seen.add(int(child))
                    todo.append(int(child))
    for pid in seen:
        for line in _text(f"/proc/{pid}/status").splitlines():
            if line.startswith("NSpid:") and len(line.split()) > 2:
                found.add(int(line.split()[-1]))
    return found


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _text(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def pids_in(text: str, label: str) -> list[int]:
    return [int(line.split()[1]) for line in text.splitlines() if line.startswith(label + " ")]


def clean(result: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """The result with the run-dependent duration left out."""
    out = {k: v for k, v in result.items() if k != "durationMs"}
    out.update(changes)
    return out


def counts(out_bytes: int, out_lines: int, err_bytes: int, err_lines: int) -> dict[str, Any]:
    return {
        "stdout": {"bytes": out_bytes, "lines": out_lines},
        "stderr": {"bytes": err_bytes, "lines": err_lines},
    }


NOTHING = counts(0, 0, 0, 0)


def plain(stdout: str, stderr: str = "", exit_code: int | None = 0, **extra: Any) -> dict[str, Any]:
    """A result with nothing cut."""
    result = {
        "stdout": stdout,
        "stderr": stderr,
        "exitCode": exit_code,
        "signal": None,
        "timedOut": False,
        "aborted": False,
        "truncated": False,
        "spill": {},
        "omitted": NOTHING,
        "totals": counts(
            len(stdout.encode()),
            count_lines(stdout.encode()),
            len(stderr.encode()),
            count_lines(stderr.encode()),
        ),
    }
    result.update(extra)
    return result


# -- streams and sequence ---------------------------------------------------------------


async def test_chunks_are_sequenced_across_both_streams_and_the_result_comes_last(
    host: ToolHost,
) -> None:
    command = "for i in 1 2 3; do echo out$i; echo err$i >&2; sleep 0.15; done; exit 4"
    evs = await events(host, {"command": command}, tool_call_id="call-1")
    assert [e["seq"] for e in evs] == list(range(len(evs)))
    assert [e["type"] for e in evs] == ["chunk"] * (len(evs) - 1) + ["result"]
    assert {e["toolCallId"] for e in evs} == {"call-1"}
    chunks = evs[:-1]
    assert "".join(e["data"] for e in chunks if e["stream"] == "stdout") == "out1\nout2\nout3\n"
    assert "".join(e["data"] for e in chunks if e["stream"] == "stderr") == "err1\nerr2\nerr3\n"
    # Each stream was streamed live, not only at the end: more than one chunk per stream.
    assert sum(e["stream"] == "stdout" for e in chunks) > 1
    assert clean(evs[-1]["result"]) == plain("out1\nout2\nout3\n", "err1\nerr2\nerr3\n", 4)


async def test_a_chatty_command_is_coalesced_into_few_chunks(host: ToolHost) -> None:
    evs = await events(host, {"command": "for i in $(seq 1 20000); do echo $i; done"})
    chunks = [e for e in evs if e["type"] == "chunk"]
    assert "".join(e["data"] for e in chunks) == seq_text(1, 20000)
    assert len(chunks) < 100


def test_cli_prints_chunk_events_then_the_result(tmp_path: Path, sandbox: str) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolbound",
            "call",
            "Bash",
            json.dumps({"command": "echo hi; echo oops >&2; exit 2"}),
            "--events",
            "--workspace",
            str(tmp_path),
            "--data-dir",
            str(tmp_path / "data"),
            "--sandbox",
            sandbox,
        ],
        capture_output=True,
        text=True,
        timeout=CALL_BOUND_S,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    evs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [e["seq"] for e in evs] == list(range(len(evs)))
    assert sorted((e["stream"], e["data"]) for e in evs[:-1]) == [
        ("stderr", "oops\n"),
        ("stdout", "hi\n"),
    ]
    assert evs[-1]["type"] == "result"
    assert clean(evs[-1]["result"]) == plain("hi\n", "oops\n", 2)


# -- bounds, capture and spill ----------------------------------------------------------


def spill_marker(end: str, kept: int, total: int, path: str | None) -> str:
    where = (
        f"Full output saved to {path} — Grep it, or Read it with offset/limit."
        if path
        else "Narrow the request to see more."
    )
    return f"[truncated: kept the {end} {kept} of {total} lines; limit 4000 lines / 96KB. {where}]"


def assert_private_spill(path: str, data: bytes) -> None:
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert Path(path).read_bytes() == data


async def test_stdout_keeps_its_head_with_the_marker_and_an_exact_spill(host: ToolHost) -> None:
    result = await call(host, {"command": "seq 1 10000"})
    path = result["spill"]["stdout"]
    full = seq_text(1, 10000)
    assert clean(result) == {
        **plain(seq_text(1, 4000) + spill_marker("first", 4000, 10000, path)),
        "truncated": True,
        "spill": {"stdout": path},
        "totals": counts(len(full), 10000, 0, 0),
    }
    assert Path(path).parent == host.scratch.spill_dir
    assert_private_spill(path, full.encode())


async def test_stderr_keeps_its_tail_when_cut(host: ToolHost) -> None:
    result = await call(host, {"command": "seq 1 10000 >&2; echo 'fatal: the real error' >&2"})
    path = result["spill"]["stderr"]
    full = seq_text(1, 10000) + "fatal: the real error\n"
    assert clean(result) == {
        **plain(""),
        "stderr": spill_marker("last", 4000, 10001, path)
        + "\n"
        + seq_text(6002, 10000)
        + "fatal: the real error\n",
        "truncated": True,
        "spill": {"stderr": path},
        "totals": counts(0, 0, len(full), 10001),
    }
    assert_private_spill(path, full.encode())


async def test_capture_ceiling_keeps_stdout_head_and_stderr_tail_and_counts_the_rest(
    host: ToolHost,
) -> None:
    ceiling = LIMITS.capture_max_bytes
    evs = await events(host, {"command": "seq 1 300000; seq 1 300000 >&2"})
    result = evs[-1]["result"]
    full = seq_text(1, 300000).encode()
    head, tail = full[:ceiling], full[-ceiling:]
    assert result["totals"] == counts(len(full), 300000, len(full), 300000)
    assert result["omitted"] == counts(
        len(full) - ceiling,
        300000 - count_lines(head),
        len(full) - ceiling,
        300000 - count_lines(tail),
    )
    assert_private_spill(result["spill"]["stdout"], head)
    assert_private_spill(result["spill"]["stderr"], tail)
    # Live chunks of each stream stop at the capture ceiling, coalesced up to a chunk.
    for stream in ("stdout", "stderr"):
        live = "".join(e["data"] for e in evs[:-1] if e["stream"] == stream)
        assert live == head.decode()
    assert max(len(e["data"].encode()) for e in evs[:-1]) <= LIMITS.chunk_max_bytes


async def test_a_failed_spill_drops_only_the_spill_sentence(tmp_path: Path, sandbox: str) -> None:
    # Running as root makes chmod no barrier; a data dir below a regular file cannot exist.
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    async with ToolHost(tmp_path, blocker / "data", "s1", limits=LIMITS, sandbox=sandbox) as host:
        result = await call(host, {"command": "seq 1 5000"})
    assert clean(result) == {
        **plain(seq_text(1, 4000) + spill_marker("first", 4000, 5000, None)),
        "truncated": True,
        "totals": counts(len(seq_text(1, 5000)), 5000, 0, 0),
    }


# The CLI on a read-only mount of the data dir (its own mount namespace: root's
# privileges pass any mode bits, never a read-only mount).
_READ_ONLY_CALL = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'


@pytest.mark.parametrize("profile", ["exact", "economy"])
def test_a_read_only_data_dir_drops_only_the_spill_sentence(tmp_path: Path, profile: str) -> None:
    data, ws = tmp_path / "data", tmp_path / "ws"
    data.mkdir()
    ws.mkdir()
    command = "seq 1 300000; seq 1 300000 >&2"
    done = subprocess.run(
        [
            "unshare",
            "-rm",
            "sh",
            "-c",
            _READ_ONLY_CALL,
            "sh",
            str(data),
            sys.executable,
            "-m",
            "toolbound",
            "call",
            "Bash",
            json.dumps({"command": command}),
            "--workspace",
            str(ws),
            "--data-dir",
            str(data),
            "--profile",
            profile,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    result = json.loads(done.stdout)
    assert (done.returncode, result["spill"], result["truncated"]) == (0, {}, True)
    assert result["totals"]["stdout"] == {"bytes": len(seq_text(1, 300000)), "lines": 300000}
    for stream in ("stdout", "stderr"):
        assert "Full output saved" not in result[stream]
        assert "Narrow the request to see more.]" in result[stream]
    assert result["stdout"].startswith("1\n2\n")
    assert result["stderr"].endswith("299999\n300000\n")
    assert list(data.iterdir()) == []


# -- timeout, abort and the process tree ------------------------------------------------

# A child, a setsid grandchild and a double-forked daemon, all ignoring SIGTERM.
HOSTILE_TREE = (
    "bash -c 'trap \"\" TERM; echo child $$; exec sleep 600' & "
    "setsid bash -c 'trap \"\" TERM; echo grandchild $$; exec sleep 600' & "
    "( setsid bash -c 'trap \"\" TERM; echo daemon $$; exec sleep 600' & ) ; "
    "trap '' TERM; sleep 600"
)


async def test_timeout_stops_the_whole_tree_including_escapees_that_ignore_sigterm(
    host: ToolHost,
) -> None:
    # Deadline, grace, a SIGKILL round: nowhere near a hang (the tree sleeps 600 s;
    # `call` bounds the call by CALL_BOUND_S).
    result = await call(host, {"command": HOSTILE_TREE, "timeout": 1})
    pids = [
        pid
        for label in ("child", "grandchild", "daemon")
        for pid in pids_in(result["stdout"], label)
    ]
    assert len(pids) == 3
    assert [pid for pid in pids if not is_gone(host, pid)] == []
    assert result["timedOut"] is True
    assert result["exitCode"] is None
    assert result["signal"] == "SIGKILL"
    assert result["notice"] == (
        "The command timed out after 1 s and its whole process tree was stopped. "
        "Pass a longer timeout (at most 300 s) or make the command finish sooner."
    )


async def test_the_default_timeout_comes_from_the_limits(tmp_path: Path, sandbox: str) -> None:
    limits = LIMITS.replace(bash_timeout_default_s=1.0)
    async with ToolHost(tmp_path, tmp_path / "data", "s1", limits=limits, sandbox=sandbox) as host:
        result = await call(host, {"command": "echo started; sleep 600"})
    assert clean(result) == {
        **plain("started\n", exit_code=None),
        "signal": "SIGTERM",
        "timedOut": True,
        "notice": (
            "The command timed out after 1 s and its whole process tree was stopped. "
            "Pass a longer timeout (at most 300 s) or make the command finish sooner."
        ),
    }


async def first_chunk_then(
    host: ToolHost,
    args: dict[str, Any],
    tool_call_id: str,
    started: asyncio.Event,
    seen: list[str],
    *,
    lines: int = 1,
) -> dict[str, Any]:
    """Stream a call; set ``started`` once its output holds ``lines`` lines."""
    result: dict[str, Any] = {}
    async for event in host.stream("Bash", args, tool_call_id=tool_call_id):
        if event["type"] == "chunk":
            seen.append(event["data"])
            if "".join(seen).count("\n") >= lines:
                started.set()
        else:
            result = event["result"]
    return result


async def test_host_abort_stops_the_tree_and_marks_the_result_aborted(host: ToolHost) -> None:
    started, seen = asyncio.Event(), []
    task = asyncio.create_task(
        first_chunk_then(host, {"command": HOSTILE_TREE}, "victim", started, seen, lines=3)
    )
    # All three announced themselves: abort.
    await asyncio.wait_for(started.wait(), CALL_BOUND_S)
    assert host.abort("victim") is True
    result = await asyncio.wait_for(task, CALL_BOUND_S)
    pids = [int(line.split()[1]) for line in result["stdout"].splitlines()]
    assert len(pids) == 3
    assert [pid for pid in pids if not is_gone(host, pid)] == []
    assert (result["aborted"], result["timedOut"], result["exitCode"]) == (True, False, None)
    assert result["notice"] == "The call was aborted and its whole process tree was stopped."
    assert host.abort("victim") is False


# A setsid grandchild that ignores SIGTERM: stopping it takes the whole grace.
ESCAPEE = "setsid bash -c 'trap \"\" TERM; echo escapee $$; exec sleep 600' & sleep 600"


async def test_cancelling_the_caller_stops_the_tree_before_the_cancellation_goes_on(
    host: ToolHost,
) -> None:
    started, seen = asyncio.Event(), []
    task = asyncio.create_task(first_chunk_then(host, {"command": ESCAPEE}, "c", started, seen))
    await asyncio.wait_for(started.wait(), CALL_BOUND_S)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, CALL_BOUND_S)
    [pid] = pids_in("".join(seen), "escapee")
    assert is_gone(host, pid)


async def test_a_second_cancellation_still_waits_for_the_tree_to_stop(host: ToolHost) -> None:
    started, seen = asyncio.Event(), []
    task = asyncio.create_task(first_chunk_then(host, {"command": ESCAPEE}, "c", started, seen))
    await asyncio.wait_for(started.wait(), CALL_BOUND_S)
    task.cancel()
    await asyncio.sleep(0)  # one turn: the caller is now waiting for the tree to stop
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, CALL_BOUND_S)
    [pid] = pids_in("".join(seen), "escapee")
    assert is_gone(host, pid)


async def test_another_session_is_served_while_a_cancelled_call_stops_its_tree(
    tmp_path: Path, sandbox: str
) -> None:
    """The stop of a cancelled Bash task (SIGTERM ignored: the whole grace, then
    SIGKILL) runs in a worker thread: the event loop serves other calls meanwhile."""
    grace_s = 1.0
    limits = DEFAULT_LIMITS.replace(kill_grace_s=grace_s)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")
    loop = asyncio.get_running_loop()
    started, seen = asyncio.Event(), []

    def emit(_stream: str, data: str) -> None:  # from a reader thread or the loop
        loop.call_soon_threadsafe(lambda: (seen.append(data), started.set()))

    async with (
        ToolHost(ws, tmp_path / "data", "victim", limits=limits, sandbox=sandbox) as victim,
        ToolHost(ws, tmp_path / "data", "other", limits=limits) as other,
    ):
        ctx = ToolContext(
            limits=limits,
            roots=victim.roots,
            scratch=victim.scratch,
            tool_call_id="v1",
            emit=emit,
            abort=asyncio.Event(),
            sandbox=victim.sandbox,
        )
        spec = spec_for("Bash")
        task = asyncio.create_task(spec.runner()(spec.parse({"command": ESCAPEE}, limits), ctx))
        await asyncio.wait_for(started.wait(), CALL_BOUND_S)
        began = time.monotonic()
        task.cancel()
        read = await asyncio.wait_for(other.call("Read", {"path": "a.txt"}), CALL_BOUND_S)
        stopping = not task.done()  # the Read was served while the tree was being stopped
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, CALL_BOUND_S)
        stop_s = time.monotonic() - began
        [pid] = pids_in("".join(seen), "escapee")
        assert is_gone(victim, pid)
    assert read["content"] == "hello\n"
    # The stop took the whole grace, and the Read was served before it ended.
    assert stop_s >= grace_s
    assert stopping


async def test_lingering_descendants_are_stopped_promptly_after_the_shell_exits(
    host: ToolHost,
) -> None:
    # Promptly: nowhere near the 600 s the descendant would keep the call waiting
    # (`call` bounds the call by CALL_BOUND_S).
    result = await call(host, {"command": "sleep 600 & echo $!; echo hi"})
    pid = int(result["stdout"].split()[0])
    assert is_gone(host, pid)
    assert clean(result) == plain(
        f"{pid}\nhi\n",
        notice="The shell exited but 1 process it started kept running; "
        "stopped 1 lingering process. To keep a server or watcher running "
        "after the call, start it with `background: true` (then JobOutput, JobStop).",
    )


async def test_an_escapee_with_a_cleared_environment_is_found_by_the_pipe_it_holds(
    host: ToolHost,
) -> None:
    # env and setsid exec in place (no job control: not a group leader), so $! is sleep.
    command = "env -i setsid sleep 600 & echo escapee $!"
    result = await call(host, {"command": command})
    [pid] = pids_in(result["stdout"], "escapee")
    assert is_gone(host, pid)
    assert result["notice"] == (
        "The shell exited but 1 process it started kept running; stopped 1 lingering process. "
        "To keep a server or watcher running after the call, start it with `background: true` "
        "(then JobOutput, JobStop)."
    )


async def test_a_call_stops_only_its_own_tree_not_a_concurrent_one(host: ToolHost) -> None:
    started, seen = asyncio.Event(), []
    other_cmd = "setsid sleep 600 & echo other $!; wait"
    other = asyncio.create_task(first_chunk_then(host, {"command": other_cmd}, "o", started, seen))
    await asyncio.wait_for(started.wait(), CALL_BOUND_S)
    [other_pid] = pids_in("".join(seen), "other")
    # This call leaves a daemon behind, which the host then stops: only that one.
    result = await call(host, {"command": "(setsid sleep 600 &); echo mine"})
    assert result["notice"] == (
        "The shell exited but 1 process it started kept running; stopped 1 lingering process. "
        "To keep a server or watcher running after the call, start it with `background: true` "
        "(then JobOutput, JobStop)."
    )
    assert not is_gone(host, other_pid)
    host.abort("o")
    await asyncio.wait_for(other, CALL_BOUND_S)
    assert is_gone(host, other_pid)


async def test_the_shell_killed_by_a_signal_reports_the_signal(host: ToolHost) -> None:
    result = await call(host, {"command": "echo bye; kill -KILL $$"})
    assert clean(result) == plain("bye\n", exit_code=None, signal="SIGKILL")


# -- hostile commands -------------------------------------------------------------------


@pytest.mark.slow  # big data
async def test_a_writer_of_gigabytes_is_drained_and_counted_within_the_capture(
    host: ToolHost,
) -> None:
    size = 3 * KB * KB * KB
    result = await call(host, {"command": "head -c 3G /dev/zero"})
    ceiling = LIMITS.capture_max_bytes
    budget = LIMITS.shell_stdout.max_bytes
    assert result["totals"] == counts(size, 1, 0, 0)
    assert result["omitted"] == counts(size - ceiling, 0, 0, 0)
    path = result["spill"]["stdout"]
    assert result["stdout"] == "\0" * budget + (
        f"\n[truncated: no complete line fits the 96KB limit; kept {budget} bytes of a single "
        f"{size}-byte line. Full output saved to {path} — Grep it, or Read it with offset/limit.]"
    )
    assert_private_spill(path, b"\0" * ceiling)


async def test_invalid_utf8_and_progress_bars_stream_without_splitting_characters(
    host: ToolHost,
) -> None:
    # The command copies a FIFO the test writes in two parts. The first ends
    # inside "é" (0xC3 | 0xA9); the second is written only once the first
    # part's text has streamed, so the reader has read the 0xC3 alone.
    first, second = b"\xff\xfeok\r 10%\r 50%\r100%\n\xc3", b"\xa9t\xc3\xa9\n"
    first_text = "\ufffd\ufffdok\r 10%\r 50%\r100%\n"
    fifo = host.workspace / "fifo"
    os.mkfifo(fifo)
    # Read-write, so the open never waits for cat (Linux); closing it is cat's EOF.
    writer = os.open(fifo, os.O_RDWR)
    os.write(writer, first)
    evs: list[dict[str, Any]] = []
    live = ""

    async def collect() -> None:
        nonlocal live, writer
        async for event in host.stream("Bash", {"command": "cat fifo", "timeout": 10}):
            evs.append(event)
            if event["type"] == "chunk" and event["stream"] == "stdout":
                live += event["data"]
                if writer >= 0 and live.startswith(first_text):
                    os.write(writer, second)
                    os.close(writer)
                    writer = -1

    try:
        await asyncio.wait_for(collect(), CALL_BOUND_S)
    finally:
        if writer >= 0:
            os.close(writer)
    text = first_text + "été\n"
    assert live == text
    assert clean(evs[-1]["result"]) == {
        **plain(text),
        "totals": counts(len(text.encode()) - 4, 2, 0, 0),
        "notice": "stdout had 2 invalid UTF-8 bytes, shown as U+FFFD.",
    }


async def test_closing_stdout_early_still_collects_stderr_until_the_shell_exits(
    host: ToolHost,
) -> None:
    result = await call(host, {"command": "echo first; exec 1>&-; sleep 0.3; echo later >&2"})
    assert clean(result) == plain("first\n", "later\n")


async def test_a_command_reading_stdin_gets_eof_at_once(host: ToolHost) -> None:
    result = await call(host, {"command": "cat; read -r line; echo read=$?", "timeout": 5})
    assert clean(result) == plain("read=1\n")


async def test_a_stdin_reader_that_leaves_a_process_behind_ends_and_says_so(
    host: ToolHost,
) -> None:
    # Both at once: the reads end at once (stdin is /dev/null), the shell exits, and the
    # process it left holding its pipes is stopped and named in the notice.
    result = await call(host, {"command": "sleep 600 & cat; read -r x; echo read=$?", "timeout": 5})
    assert clean(result) == plain(
        "read=1\n",
        notice="The shell exited but 1 process it started kept running; "
        "stopped 1 lingering process. To keep a server or watcher running "
        "after the call, start it with `background: true` (then JobOutput, JobStop).",
    )


@pytest.mark.parametrize("command", ["", "   ", "\n"])
async def test_an_empty_command_is_an_invalid_argument(host: ToolHost, command: str) -> None:
    result = await call(host, {"command": command})
    assert result == {
        "error": {
            "code": "TOOL_INVALID_ARGUMENT",
            "message": "Invalid arguments for Bash: 'command' is empty; give the shell "
            "command to run. Fix the arguments and call again.",
        }
    }


@pytest.mark.parametrize("bad_timeout", [0, 0.5, 301, "abc", True, None])
async def test_a_timeout_outside_the_range_is_refused_and_runs_nothing(
    host: ToolHost, bad_timeout: object
) -> None:
    args: dict[str, Any] = {"command": "touch ran"}
    if bad_timeout is not None:
        args["timeout"] = bad_timeout
    result = await call(host, args)
    if bad_timeout is None:
        # The control: the same command without a bad timeout does run.
        assert clean(result) == plain("")
        assert (host.workspace / "ran").exists()
        return
    assert result["error"]["code"] == "TOOL_INVALID_ARGUMENT"
    assert "'timeout'" in result["error"]["message"]
    assert not (host.workspace / "ran").exists()


async def test_a_timed_out_chatty_writer_emits_nothing_after_its_result(host: ToolHost) -> None:
    evs = await events(host, {"command": "while :; do echo tick; sleep 0.01; done", "timeout": 1})
    assert [e["seq"] for e in evs] == list(range(len(evs)))
    assert [e["type"] for e in evs] == ["chunk"] * (len(evs) - 1) + ["result"]
    result = evs[-1]["result"]
    live = "".join(e["data"] for e in evs[:-1])
    # Everything streamed live is in the result, and nothing more was captured after it.
    assert result["stdout"] == live
    # It wrote in a loop before its time was up: not a count per second, which a
    # loaded machine lowers (7 ticks in the second seen here once, not > 10).
    assert live.count("tick\n") >= 2
    assert set(live.splitlines()) == {"tick"}
    assert (result["timedOut"], result["exitCode"]) == (True, None)


def open_fds() -> list[str]:
    return sorted(os.listdir("/proc/self/fd"))


def reader_threads() -> int:
    return sum(t.name == "toolbound-reader" for t in threading.enumerate())


async def test_calls_leave_no_descriptor_behind_and_reuse_their_reader_threads(
    host: ToolHost,
) -> None:
    await call(host, {"command": "true"})  # the first call starts the guard once
    # A confined session's warm spare holds its own descriptors until it is used.
    await spare.drop(host.scratch)
    fds, readers = open_fds(), reader_threads()
    for command in ("echo hi", "sleep 600 & echo x", "exec >&-; echo y >&2", "seq 1 9000"):
        await call(host, {"command": command})
    await call(host, {"command": "sleep 600", "timeout": 1})
    await spare.drop(host.scratch)
    assert open_fds() == fds
    # One call at a time needs two readers; idle ones (maybe left by earlier
    # concurrent calls) are reused, never piled up.
    assert reader_threads() <= max(readers, 2)


async def test_concurrent_calls_each_stop_exactly_their_own_lingering_processes(
    host: ToolHost,
) -> None:
    commands = [f"sleep 600 & echo $!; setsid sleep 600 & echo $!; echo call{i}" for i in range(8)]
    results = await asyncio.gather(*(call(host, {"command": c}) for c in commands))
    for i, result in enumerate(results):
        first, second, name = result["stdout"].split()
        assert name == f"call{i}"
        assert (is_gone(host, int(first)), is_gone(host, int(second))) == (True, True)
        assert result["notice"] == (
            "The shell exited but 2 processes it started kept running; "
            "stopped 2 lingering processes. To keep a server or watcher running "
            "after the call, start it with `background: true` (then JobOutput, JobStop)."
        )


# -- the single-line marker names the real line (issue 11) ---------------------------


async def test_a_giant_first_line_is_named_by_its_real_size_past_the_capture(
    host: ToolHost,
) -> None:
    # The seed's own example: the line is far larger than the 512 KB capture.
    command = f"""{SANDBOX_PYTHON} -c 'print("x" * 4200000); print("done")'"""
    result = await call(host, {"command": command})
    path = result["spill"]["stdout"]
    assert result["stdout"] == "x" * 98304 + (
        "\n[truncated: no complete line fits the 96KB limit; kept 98304 bytes of a single "
        f"4200000-byte line. Full output saved to {path} — Grep it, or Read it with offset/limit.]"
    )
    assert result["totals"] == counts(4_200_006, 2, 0, 0)


async def test_a_giant_last_line_of_stderr_is_named_by_its_real_size(host: ToolHost) -> None:
    script = 'import sys; sys.stderr.write("first\\nsecond\\n" + "y" * 4200000 + "\\n")'
    result = await call(host, {"command": f"{SANDBOX_PYTHON} -c '{script}'"})
    path = result["spill"]["stderr"]
    assert result["stderr"] == (
        "[truncated: no complete line fits the 96KB limit; kept 98304 bytes of a single "
        f"4200000-byte line. Full output saved to {path} — Grep it, or Read it with "
        "offset/limit.]\n" + "y" * 98303 + "\n"
    )
    assert result["totals"] == counts(0, 0, 4_200_014, 3)
