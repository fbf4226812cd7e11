"""Bulk streams give way to other sessions' short calls (``toolbound.busy``, issue 30).

Real racing processes: one session's command prints tens of megabytes while
another session's call is held in flight by a file the test creates. What is
asserted is order and counters (the bulk reader paused while the short call
was in flight, and every byte still arrived), never a duration; a stream that
stopped instead of pausing would hang, and the hang bound catches it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support import WAIT_S, wait_for, wait_for_async
from toolbound import DEFAULT_LIMITS, ToolHost, busy
from toolbound.busy import BulkStream, YieldPolicy
from toolbound.exec import niceness
from toolbound.exec.members import read_proc
from toolbound.exec.sandbox import find_bwrap
from toolbound.listeners import CallListener, CallStart

MB = 1024 * 1024
LINE = "0123456789"  # 11 bytes with its newline
LIMITS = DEFAULT_LIMITS.replace(kill_grace_s=0.3)
# A call held in flight stays young for the whole test: what makes a stream yield
# is then the call alone, however slow the machine (no clock in the assertion).
CALLS_ONLY = YieldPolicy(young_s=10 * WAIT_S, nice=None, command_nice=None, recent_s=None)


@pytest.fixture
def calls_only(monkeypatch: pytest.MonkeyPatch) -> YieldPolicy:
    monkeypatch.setattr(busy, "POLICY", CALLS_ONLY)
    return CALLS_ONLY


@pytest.fixture
async def hosts(tmp_path: Path) -> AsyncIterator[tuple[ToolHost, ToolHost]]:
    """Two sessions of one workspace, in this one process (as a server holds them)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    async with (
        ToolHost(ws, tmp_path / "data", "streaming", limits=LIMITS) as a,
        ToolHost(ws, tmp_path / "data", "short", limits=LIMITS) as b,
    ):
        yield a, b


def lines_of(size: int) -> int:
    return -(-size // len(LINE + "\n"))


def in_context() -> contextvars.Context:
    """A fresh context, as a tool call's task or a recorder's thread has its own."""
    return contextvars.Context()


# --- the policy, on real threads --------------------------------------------------------


def test_a_bulk_stream_yields_to_young_work_only_and_never_to_another_bulk_stream(
    calls_only: YieldPolicy,
) -> None:
    stream = BulkStream(None)
    stream.start()
    short, long_call = in_context(), in_context()
    try:
        assert not stream.should_yield()
        short.run(busy.begin, call=True)
        assert stream.should_yield()
        # Another call that is itself a bulk stream is not waited on.
        long_call.run(busy.begin, call=True)
        other = BulkStream(long_call.run(busy.current))
        other.start()
        short.run(busy.end)
        assert not stream.should_yield()
        assert not other.should_yield()
        other.stop()
        assert stream.should_yield()  # that call is no longer a bulk stream's
        long_call.run(busy.end)
        assert not stream.should_yield()
    finally:
        stream.stop()


def test_work_that_is_not_a_call_is_not_waited_on(calls_only: YieldPolicy) -> None:
    stream = BulkStream(None)
    stream.start()
    batch = in_context()  # a recorder's writer thread writing a batch
    batch.run(busy.begin)
    try:
        assert not stream.should_yield()
    finally:
        batch.run(busy.end)
        stream.stop()


def test_a_call_streaming_in_bulk_leaves_another_call_alone_as_a_jobs_stream_does(
    calls_only: YieldPolicy,
) -> None:
    """A short call may run on the event loop (``busy.alone``: a Read's choice) beside
    calls whose output is a bulk stream, since those pause for it; beside any other
    call, or a recorder's batch, it is not alone."""
    streaming, short, batch = in_context(), in_context(), in_context()
    streaming.run(busy.begin, call=True)
    short.run(busy.begin, call=True)
    stream = BulkStream(streaming.run(busy.current))
    try:
        assert not short.run(busy.alone)
        stream.start()
        assert short.run(busy.alone)
        batch.run(busy.begin)
        assert not short.run(busy.alone)
        batch.run(busy.end)
        assert short.run(busy.alone)
        stream.stop()
        assert not short.run(busy.alone)  # that call's output is no longer a bulk stream
    finally:
        stream.stop()
        short.run(busy.end)
        streaming.run(busy.end)
    job = BulkStream(None)  # a job's stream: never counted
    job.start()
    try:
        short.run(busy.begin, call=True)
        assert short.run(busy.alone)
    finally:
        short.run(busy.end)
        job.stop()


def test_work_older_than_the_young_bound_is_not_waited_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(busy, "POLICY", YieldPolicy(young_s=0.0, nice=None, command_nice=None))
    stream = BulkStream(None)
    stream.start()
    quiet = in_context()
    quiet.run(busy.begin, call=True)
    try:
        assert not stream.should_yield()
    finally:
        quiet.run(busy.end)
        stream.stop()


def test_a_pause_ends_when_the_work_it_yields_to_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    # A pause as long as the hang bound: only the work's end can end it sooner.
    policy = YieldPolicy(young_s=10 * WAIT_S, pause_s=10 * WAIT_S, nice=None, command_nice=None)
    monkeypatch.setattr(busy, "POLICY", policy)
    stream = BulkStream(None)
    stream.start()
    short = in_context()
    short.run(busy.begin, call=True)
    before = busy.stats().pauses
    pausing = threading.Thread(target=stream.pause)
    pausing.start()
    try:
        wait_for(lambda: busy.stats().pauses > before, "the stream to pause")
        assert pausing.is_alive()
    finally:
        short.run(busy.end)
        pausing.join(WAIT_S)
        stream.stop()
    assert not pausing.is_alive()


# --- two sessions, real commands --------------------------------------------------------


async def test_a_bulk_stream_pauses_while_another_sessions_short_call_is_in_flight(
    hosts: tuple[ToolHost, ToolHost], tmp_path: Path, calls_only: YieldPolicy
) -> None:
    streaming, short = hosts
    ws = tmp_path / "ws"
    size = 64 * MB
    # The short call is in flight until the test lets it go.
    held = asyncio.create_task(
        short.call("Bash", {"command": "touch held; until [ -e go ]; do sleep 0.01; done"})
    )
    await wait_for_async(lambda: (ws / "held").exists(), "the short call to start")
    before = busy.stats().pauses
    stream = asyncio.create_task(
        streaming.call("Bash", {"command": f"yes {LINE} | head -c {size}", "timeout": 120})
    )
    # Each pause is followed by at least a burst (1 MiB): 64 MiB gives room for 16.
    await wait_for_async(
        lambda: busy.stats().pauses >= before + 16 or stream.done(), "the stream to yield"
    )
    assert not stream.done()
    assert not held.done()
    (ws / "go").touch()
    out, released = await asyncio.wait_for(asyncio.gather(stream, held), WAIT_S)
    assert released["exitCode"] == 0
    assert out["exitCode"] == 0
    assert out["totals"]["stdout"] == {"bytes": size, "lines": lines_of(size)}
    assert out["stdout"].startswith(f"{LINE}\n{LINE}\n")
    assert busy.stats().bulk_streams == 0


class HeldSettle(CallListener):
    """A listener whose settle waits until let go: the call is being recorded meanwhile."""

    def __init__(self) -> None:
        self.settling = asyncio.Event()
        self.go = asyncio.Event()

    async def settle(self, call: CallStart) -> None:
        self.settling.set()
        await self.go.wait()


async def test_a_bulk_stream_gives_way_to_a_call_until_it_is_recorded_too(
    hosts: tuple[ToolHost, ToolHost], calls_only: YieldPolicy
) -> None:
    """A call's recording (its listeners' settle: a PostgreSQL store's round trip) is
    part of the call: a bulk stream still gives way while it runs."""
    streaming, short = hosts
    recording = HeldSettle()
    short.listeners.append(recording)
    held = asyncio.create_task(short.call("Glob", {"pattern": "*"}))
    await asyncio.wait_for(recording.settling.wait(), WAIT_S)
    before = busy.stats().pauses
    size = 64 * MB
    stream = asyncio.create_task(
        streaming.call("Bash", {"command": f"yes {LINE} | head -c {size}", "timeout": 120})
    )
    try:
        await wait_for_async(
            lambda: busy.stats().pauses >= before + 16 or stream.done(), "the stream to yield"
        )
        assert not stream.done()
        assert not held.done()
    finally:
        recording.go.set()
    out, listed = await asyncio.wait_for(asyncio.gather(stream, held), WAIT_S)
    assert listed["count"] == len(listed["matches"])
    assert out["totals"]["stdout"] == {"bytes": size, "lines": lines_of(size)}


async def test_a_job_streaming_in_bulk_still_reaches_a_jobOutput_waiting_on_it(
    hosts: tuple[ToolHost, ToolHost], calls_only: YieldPolicy
) -> None:
    session, _ = hosts
    size = len(LINE + "\n") * 4 * MB  # whole lines: "the end" is a line of its own
    started = await session.call(
        "Bash", {"command": f"yes {LINE} | head -c {size}; echo the end", "background": True}
    )
    job_id = started["jobId"]
    await wait_for_async(lambda: busy.stats().bulk_streams >= 1, "the job's stream to be bulk")
    before = busy.stats().pauses
    # Waiting on the very stream that yields to it (the job's reader counts no call
    # as its own): the wait must still see the end.
    out: dict[str, Any] = await asyncio.wait_for(
        session.call("JobOutput", {"jobId": job_id, "until": "^the end$", "waitS": 10 * WAIT_S}),
        10 * WAIT_S,
    )
    assert out.get("matched") == "the end", {k: v for k, v in out.items() if k != "stdout"}
    assert busy.stats().pauses > before
    ended = await session.call("JobOutput", {"jobId": job_id, "waitFor": "exit", "waitS": WAIT_S})
    assert ended["state"] == "exited"
    assert ended["totals"]["stdout"] == {"bytes": size + 8, "lines": 4 * MB + 1}


async def test_a_bulk_reader_that_gave_way_runs_at_low_priority_until_its_stream_ends(
    hosts: tuple[ToolHost, ToolHost], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(busy, "POLICY", dataclasses.replace(CALLS_ONLY, nice=19))
    streaming, short = hosts
    ws = tmp_path / "ws"
    # A stream alone keeps its priority: only giving way lowers it.
    before = busy.stats().pauses
    command = f"while [ ! -e stop-alone ]; do yes {LINE} | head -c {4 * MB}; done"
    alone = asyncio.create_task(streaming.call("Bash", {"command": command, "timeout": 120}))
    await wait_for_async(lambda: busy.stats().bulk_streams >= 1, "the lone stream to be bulk")
    assert not reader_threads(19)
    (ws / "stop-alone").touch()
    assert (await asyncio.wait_for(alone, WAIT_S))["exitCode"] == 0
    assert busy.stats().pauses == before
    held = asyncio.create_task(
        short.call("Bash", {"command": "touch held; until [ -e go ]; do sleep 0.01; done"})
    )
    await wait_for_async(lambda: (ws / "held").exists(), "the short call to start")
    command = f"while [ ! -e stop ]; do yes {LINE} | head -c {4 * MB}; done"
    stream = asyncio.create_task(streaming.call("Bash", {"command": command, "timeout": 120}))
    low = await wait_for_async(lambda: reader_threads(19), "a reader thread at niceness 19")
    (ws / "go").touch()
    await asyncio.wait_for(held, WAIT_S)
    assert not stream.done()
    (ws / "stop").touch()
    out = await asyncio.wait_for(stream, WAIT_S)
    assert out["exitCode"] == 0
    # Its thread was restored (or, unable to be, retired): no reader stays low.
    await wait_for_async(lambda: not reader_threads(19), "the reader's priority restored")
    assert low


def reader_threads(nice: int) -> list[int]:
    """This process's threads at niceness ``nice`` (only a bulk reader lowers its own)."""
    found = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()
        if int(fields[16]) == nice:
            found.append(int(tid))
    return found


# --- a bulk stream's command tree, lowered once it gave way (exec.niceness) --------------


def marked_stream(name: str, unique: str) -> tuple[str, Callable[[str], str]]:
    """A member's token, and a command printing in bulk until its file ``stop`` exists
    that starts that member first (found by its command line, which alone shows the
    token whole); after each 4 MB it printed it touches ``stop.round`` (its reader
    has then read far past its capture ceiling)."""

    def command(stop: str) -> str:
        return (
            f"tok={name}; bash -c 'sleep 600; :' \"$tok-{unique}\" & "
            f"while [ ! -e {stop} ]; do yes {LINE} | head -c {4 * MB}; touch {stop}.round; "
            "done; kill $!"
        )

    return f"{name}-{unique}", command


async def a_lone_stream_keeps_its_priority(
    host: ToolHost, streaming_command: Callable[[str], str], token: str
) -> None:
    """Alone (no other call about), ``streaming_command(stop)`` (printing in bulk until
    the file ``stop`` exists, with a member marked ``token``) never gives way, so its
    tree keeps its priority."""
    before = busy.stats().pauses
    command = streaming_command("stop-alone")
    alone = asyncio.create_task(host.call("Bash", {"command": command, "timeout": 120}))
    member = await wait_for_async(lambda: marked_process(token), "the tree's marked member")
    # 4 MB read: the reader turned bulk (at its 512 KB ceiling) well before, and any
    # lowering at that turn was done before its next read.
    await wait_for_async(lambda: (host.workspace / "stop-alone.round").exists(), "4 MB read")
    assert niceness.niceness_of(member) == 0
    (host.workspace / "stop-alone").touch()
    assert (await asyncio.wait_for(alone, WAIT_S))["exitCode"] == 0
    assert busy.stats().pauses == before
    await wait_for_async(lambda: marked_process(token) is None, "the lone tree to end")


def marked_process(token: str) -> int | None:
    """The host PID of the process whose command line carries ``token`` (a sandboxed
    one too: the host sees every PID namespace's processes)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if token.encode() in f.read():
                        return int(entry)
            except OSError:
                continue
    return None


def spawn_threaded(*, new_session: bool) -> subprocess.Popen[bytes]:
    """A real process with a second thread, waiting for its stdin to close."""
    code = "import sys, threading\nthreading.Thread(target=sys.stdin.read).start()\n"
    code += "sys.stdin.read()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, start_new_session=new_session
    )
    wait_for(lambda: len(os.listdir(f"/proc/{proc.pid}/task")) >= 2, "the second thread")
    return proc


def finish(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(WAIT_S)


def test_lowering_reaches_every_thread_and_the_commands_own_autogroup() -> None:
    proc = spawn_threaded(new_session=True)
    try:
        lowered = niceness.lower([proc.pid], 10)
        tids = [int(t) for t in os.listdir(f"/proc/{proc.pid}/task")]
        assert [niceness.niceness_of(tid) for tid in tids] == [10] * len(tids)
        assert lowered.tasks == len(tids)
        group = niceness.autogroup_of(proc.pid)
        if group is not None:  # a kernel with autogroups: the session's group is lowered too
            assert group[1] == 10
            assert lowered.groups == 1
        # Never raised back, and never lowered twice: a second lowering changes nothing.
        assert niceness.lower([proc.pid], 5) == niceness.Lowered(0, 0)
        assert niceness.niceness_of(proc.pid) == 10
    finally:
        finish(proc)


def test_lowering_leaves_the_hosts_own_autogroup_and_anything_already_nicer() -> None:
    own_group = niceness.autogroup_of(os.getpid())
    proc = spawn_threaded(new_session=False)  # in the host's own session and group
    try:
        os.setpriority(os.PRIO_PROCESS, proc.pid, 15)
        niceness.lower([proc.pid], 10)
        others = [int(t) for t in os.listdir(f"/proc/{proc.pid}/task") if int(t) != proc.pid]
        # Only the main thread was at 15: it stays there, the other thread comes down to 10.
        assert niceness.niceness_of(proc.pid) == 15
        assert [niceness.niceness_of(tid) for tid in others] == [10]
        assert niceness.autogroup_of(os.getpid()) == own_group
    finally:
        finish(proc)


def test_lowering_never_reaches_the_hosts_own_threads() -> None:
    """A member's PID seen a moment ago may be reused by the host itself."""
    tids = [int(t) for t in os.listdir("/proc/self/task")]
    before = [niceness.niceness_of(tid) for tid in tids]
    try:
        assert niceness.lower([os.getpid(), *tids], 19) == niceness.Lowered(0, 0)
        assert [niceness.niceness_of(tid) for tid in tids] == before
    finally:
        for tid, nice in zip(tids, before, strict=True):
            if nice is not None and niceness.niceness_of(tid) != nice:
                with contextlib.suppress(OSError):  # raising back takes CAP_SYS_NICE
                    os.setpriority(os.PRIO_PROCESS, tid, nice)


@pytest.fixture
def var_tmp() -> Iterator[Path]:
    """A folder under /var/tmp: a sandboxed command's own /tmp is private."""
    root = Path(tempfile.mkdtemp(prefix="toolbound-yield-", dir="/var/tmp"))
    yield root
    shutil.rmtree(root)


@pytest.mark.parametrize("sandbox", ["off", "workspace-write"])
async def test_a_bulk_streams_command_tree_is_lowered_once_it_gave_way_and_never_alone(
    var_tmp: Path, sandbox: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if sandbox != "off" and find_bwrap() is None:
        pytest.fail("the sandboxed case needs bubblewrap (apt-get install bubblewrap)")
    monkeypatch.setattr(busy, "POLICY", dataclasses.replace(CALLS_ONLY, command_nice=10))
    ws = var_tmp / "ws"
    ws.mkdir()
    own_group = niceness.autogroup_of(os.getpid())
    async with (
        ToolHost(ws, var_tmp / "data", "streaming", limits=LIMITS, sandbox=sandbox) as streaming,
        ToolHost(ws, var_tmp / "data", "short", limits=LIMITS) as short,
    ):
        # A member started before any lowering, found by its command line (only its
        # own shows the token whole): the walk must reach it, however the tree was spawned.
        token, streaming_command = marked_stream("member", f"{os.getpid()}-{sandbox}")

        before = busy.stats().pauses
        await a_lone_stream_keeps_its_priority(streaming, streaming_command, token)

        # Giving way to another session's call in flight: the whole tree is lowered.
        held = asyncio.create_task(
            short.call("Bash", {"command": "touch held; until [ -e go ]; do sleep 0.01; done"})
        )
        await wait_for_async(lambda: (ws / "held").exists(), "the short call to start")
        assert niceness.niceness_of(os.getpid()) == 0
        stream = asyncio.create_task(
            streaming.call("Bash", {"command": streaming_command("stop"), "timeout": 120})
        )
        member = await wait_for_async(lambda: marked_process(token), "the tree's marked member")
        await wait_for_async(
            lambda: niceness.niceness_of(member) == 10, "the member lowered to niceness 10"
        )
        assert busy.stats().pauses > before
        group = niceness.autogroup_of(member)
        shell = int(read_proc(f"/proc/{member}/stat").rsplit(b")", 1)[1].split()[1])
        assert niceness.niceness_of(shell) == 10  # the member's parent: the command's shell
        (ws / "go").touch()
        await asyncio.wait_for(held, WAIT_S)
        (ws / "stop").touch()
        out = await asyncio.wait_for(stream, WAIT_S)
        assert out["exitCode"] == 0
    if own_group is not None:
        assert group is not None
        assert group[1] == 10
        # The host's own group (its event loop, its readers) keeps its share.
        assert niceness.autogroup_of(os.getpid()) == own_group
    # The host itself was never lowered.
    assert niceness.niceness_of(os.getpid()) == 0


async def test_a_stream_turning_bulk_just_after_another_call_is_lowered_at_once_and_alone_never(
    var_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no other session's call about (its own session's just before), a bulk
    stream keeps its priority; one that turns bulk just after another session's call
    ended has its command lowered at once, before any pause (the next short call
    finds the CPUs given up already)."""
    policy = dataclasses.replace(CALLS_ONLY, command_nice=10, recent_s=10 * WAIT_S)
    monkeypatch.setattr(busy, "POLICY", policy)
    monkeypatch.setattr(busy, "_last_ends", [])  # no call before this test's
    ws = var_tmp / "ws"
    ws.mkdir()
    async with (
        ToolHost(ws, var_tmp / "data", "streaming", limits=LIMITS) as streaming,
        ToolHost(ws, var_tmp / "data", "short", limits=LIMITS) as short,
    ):
        token, streaming_command = marked_stream("recent", str(os.getpid()))

        # Its own session's call just before does not count: still alone.
        await streaming.call("Glob", {"pattern": "*"})
        before = busy.stats().pauses
        await a_lone_stream_keeps_its_priority(streaming, streaming_command, token)

        # Another session's call, ended: the next stream is lowered as it turns bulk.
        await short.call("Glob", {"pattern": "*"})
        stream = asyncio.create_task(
            streaming.call("Bash", {"command": streaming_command("stop"), "timeout": 120})
        )
        member = await wait_for_async(lambda: marked_process(token), "the tree's marked member")
        await wait_for_async(
            lambda: niceness.niceness_of(member) == 10, "the member lowered to niceness 10"
        )
        assert busy.stats().pauses == before  # lowered before any pause: none was taken
        (ws / "stop").touch()
        assert (await asyncio.wait_for(stream, WAIT_S))["exitCode"] == 0
    assert niceness.niceness_of(os.getpid()) == 0
