"""One command's run, from spawn to its ending: the one way a process tree is driven.

A Bash call and a background job run their command the same way; only where
the output goes differs (a capture for the call's result, a log for the job):

1. **spawn**: ``bash -c COMMAND`` as a new process tree (``exec.tree``),
   through ``exec.spare.spawn``, the one way in, confined when the sandbox
   asks (``spawn``), in the workspace or a ``workdir`` held by a descriptor
   (``workdir_of``), with a job's stdin or terminal (``exec.tree.Stdio``).
2. **read**: one reader per stream (``exec.reader``) feeds the stream's sink
   and emits its live chunks; a call's readers start on the event loop, a
   job's on worker threads (``read_streams``).
3. **watch**: the shell's exit (a pidfd on the loop), the deadline, or a stop
   request (a call's abort, JobStop, the host closing), whichever comes first;
   an exit seen by then wins.
4. **stop or reap**: on the deadline or a request the whole tree is stopped in
   a worker thread as the ``KillPolicy`` says (TERM, grace, KILL, reap:
   ``Tree.stop``). When the shell exited by itself the pipes are drained for
   ``policy.drain_s`` and whatever it left running is stopped the same way.
5. **drain**: both readers reach EOF (bounded by ``policy.drain_s``; a pipe
   still held after that is abandoned). The streams close only after the tree
   is gone, so no chunk follows the ending.

A run cancelled or failing mid-way still stops its tree (waited out through
the cancellation) and releases its readers before the cancellation goes on.
The kill policy is a value (``KillPolicy``), the one place grace, signals and
their order are set.

Pieces:
    KillPolicy    how a tree is stopped (re-exported from ``exec.stopping``)
    Ending        how the shell's run ended: exited, timed out, aborted
    Outcome       the ending and the PIDs that had to be stopped
    workdir_of    a Bash ``workdir`` as a folder descriptor in the workspace, or its TOOL_ error
    spawn         start ``bash -c COMMAND`` (TOOL_NOT_FOUND when bash cannot start)
    Streams       both streams' readers and the event set when both are done
    read_streams  start one reader per stream, each feeding its sink
    run_tree      watch, stop or reap, drain: the run of a spawned tree
    stop_tree     the policy's stop of a whole tree, off the loop, waited out
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from toolbound import busy
from toolbound.exec import niceness
from toolbound.exec.abort import on_abort
from toolbound.exec.capture import HeadCapture
from toolbound.exec.reader import Sink, StopSignal, StreamReader
from toolbound.exec.shield import run_unstoppable
from toolbound.exec.stopping import KillPolicy
from toolbound.exec.tree import NO_STDIO, Stdio, Tree, Workdir
from toolbound.results import ErrorCode, Stream, ToolError

if TYPE_CHECKING:
    from toolbound.exec.sandbox import SandboxPolicy
    from toolbound.paths import Roots
    from toolbound.scratch import Scratch

__all__ = [
    "Ending",
    "KillPolicy",
    "Outcome",
    "Streams",
    "read_streams",
    "run_tree",
    "spawn",
    "workdir_of",
]


class Ending(Enum):
    EXITED = "exited"
    TIMED_OUT = "timed out"
    ABORTED = "aborted"


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a run ended, and every PID its stop signalled (none for a clean exit)."""

    ending: Ending
    signalled: frozenset[int]
    shell_pid: int

    @property
    def lingering(self) -> int:
        """Members stopped after the shell exited by itself (0 otherwise)."""
        if self.ending is not Ending.EXITED:
            return 0
        return len(self.signalled - {self.shell_pid})


@contextlib.contextmanager
def workdir_of(roots: Roots, workdir: str | None) -> Iterator[Workdir | None]:
    """The folder ``workdir`` names in the workspace, held by a descriptor for the
    block (None: the workspace root). Resolved like any path, from the root's
    descriptor a component at a time (``toolbound.fsroot``): a path or symlink
    leading out of the workspace is TOOL_PATH_NOT_ALLOWED, a missing folder
    TOOL_NOT_FOUND, a file TOOL_INVALID_ARGUMENT."""
    if workdir is None:
        yield None
        return
    with roots.locate(workdir) as located:
        target, spot = located.target, located.spot
        if target.root != "workspace":
            raise ToolError(
                ErrorCode.PATH_NOT_ALLOWED,
                f"workdir {workdir} resolves to {target.real}, outside the workspace "
                f"({roots.workspace}); a command starts in a folder of the workspace. Give "
                "a workspace-relative folder, or leave `workdir` out for the workspace root.",
            )
        if spot.rest:
            if spot.missing() is None and spot.st is None:
                raise ToolError(
                    ErrorCode.NOT_FOUND,
                    f"workdir {target.shown} does not exist in the workspace; create it "
                    "(e.g. Bash `mkdir -p`) or give an existing folder (List shows them).",
                )
            if spot.missing() is not None:
                raise ToolError(
                    ErrorCode.NOT_FOUND,
                    f"workdir {target.shown} does not exist in the workspace (a folder on "
                    "its way is missing or is a file); give an existing folder (List shows "
                    "them).",
                )
            raise ToolError(
                ErrorCode.INVALID_ARGUMENT,
                f"workdir {target.shown} is a file, not a folder; give the folder a command "
                "starts in (its parent, perhaps), or leave `workdir` out for the workspace root.",
            )
        if target.shown == ".":
            yield None
            return
        yield Workdir(spot.proc_path, target.real, target.shown)


async def spawn(
    command: str,
    *,
    cwd: Path,
    policy: SandboxPolicy,
    scratch: Scratch,
    workdir: Workdir | None = None,
    stdio: Stdio = NO_STDIO,
) -> Tree:
    """``bash -c command`` started in ``cwd`` (the workspace; ``workdir`` when given)
    under the sandbox ``policy``, with a job's ``stdio``; TOOL_NOT_FOUND when bash
    cannot be started there."""
    from toolbound.exec import spare

    try:
        return await spare.spawn(
            command, cwd=cwd, policy=policy, scratch=scratch, workdir=workdir, stdio=stdio
        )
    except OSError as err:
        where = "the workspace" if workdir is None else workdir.shown
        folder = "the workspace" if workdir is None else "the folder"
        raise ToolError(
            ErrorCode.NOT_FOUND,
            f"Could not start bash in {where} ({err.strerror or err}); "
            f"check that bash is installed and {folder} still exists.",
        ) from err


@dataclass(slots=True)
class Streams:
    """Both streams' readers and the event set when both are done."""

    stdout: StreamReader
    stderr: StreamReader
    done: asyncio.Event
    stop: StopSignal

    def join(self, timeout_s: float) -> None:
        """Block until both readers ended, bounded (in a worker thread)."""
        self.stdout.join(timeout_s)
        self.stderr.join(timeout_s)

    def abandon(self) -> None:
        """Stop reading both pipes now, wherever each reader runs (on the loop)."""
        self.stop.set()
        self.stdout.stop()
        self.stderr.stop()

    def ended(self) -> bool:
        return not (self.stdout.is_alive() or self.stderr.is_alive())

    def close(self) -> None:
        """Close the stop descriptor once both readers have ended."""
        # A reader still running would poll a closed (maybe reused) descriptor:
        # leak the eventfd instead in that never-seen case.
        if self.ended():
            self.stop.close()

    async def wait(self, timeout_s: float) -> bool:
        """True if both reached their end within ``timeout_s``."""
        if self.done.is_set():
            # Most commands: both pipes were at EOF by the time the shell's
            # exit was seen; no waiting task and loop turn for them.
            return True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.done.wait(), timeout_s)
        return self.done.is_set()


def read_streams(
    tree: Tree,
    sinks: tuple[Sink, Sink],
    *,
    emit: Callable[[Stream, str], None],
    live_bytes: int,
    live_lines: int,
    interval_s: float,
    chunk_max_bytes: int,
    on_worker: bool = False,
    on_read: Callable[[], None] | None = None,
    on_done: Callable[[], None] | None = None,
    of_call: bool = True,
) -> Streams:
    """Start one reader per stream of ``tree``, feeding ``sinks`` (stdout, stderr) and
    emitting live chunks up to ``live_bytes``/``live_lines`` a stream; on the event
    loop, or on worker threads with ``on_worker``. ``on_read`` runs (in the reader's
    thread) after each read was fed and its chunk emitted, ``on_done`` as each
    reader ends. With ``of_call`` (a Bash call's output) the running call's work
    counts as a bulk stream's while a reader is one (``busy``); a job's streams
    outlive the call that started them and pass False. Either reader's first pause
    as a bulk stream lowers the whole ``tree`` (``exec.niceness``), once: a process
    that leaves the tree's session later gets an autogroup of its own, at the
    default niceness (its threads' niceness it inherits)."""
    loop = asyncio.get_running_loop()
    work = busy.current() if of_call else None
    owner = busy.owner()  # a job's streams too: the session that started it
    done = asyncio.Event()
    remaining = [2]
    lock = threading.Lock()
    stop = StopSignal()
    lowered = [False]

    def give_way(nice: int) -> None:
        # Either stream's first pause lowers the whole tree, once (off the loop).
        with lock:
            if lowered[0]:
                return
            lowered[0] = True
        niceness.lower(tree.running(), nice)

    def ended() -> None:
        # One wake-up of the loop per run, from whichever reader ends last;
        # none at all when that reader ran on the loop (a short command's).
        if on_done is not None:
            on_done()
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if not last:
            return
        if _on_loop(loop):
            done.set()
        else:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(done.set)

    def reader(fd: int, stream: Stream, sink: Sink) -> StreamReader:
        return StreamReader(
            fd,
            stream,
            capture=sink,
            live=HeadCapture(max_bytes=live_bytes, max_lines=live_lines),
            emit=emit,
            interval_s=interval_s,
            chunk_max_bytes=chunk_max_bytes,
            stop=stop,
            on_done=ended,
            on_read=on_read,
            work=work,
            owner=owner,
            give_way=give_way,
        )

    streams = Streams(
        reader(tree.stdout_fd, "stdout", sinks[0]),
        reader(tree.stderr_fd, "stderr", sinks[1]),
        done,
        stop,
    )
    streams.stdout.start(loop, on_worker=on_worker)
    streams.stderr.start(loop, on_worker=on_worker)
    return streams


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether this thread is running ``loop`` now."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


async def run_tree(
    tree: Tree,
    streams: Streams,
    *,
    timeout_s: float | None,
    stop: asyncio.Event,
    policy: KillPolicy,
) -> Outcome:
    """Watch ``tree`` until it exits, ``timeout_s`` passes (None: no deadline) or
    ``stop`` is set; stop it or reap what it left; drain ``streams``; the outcome.

    Cancelled or failing mid-way, the tree is still stopped and the readers
    released (waited out through the cancellation) before the error goes on.
    """
    finished = False
    try:
        ending = await _watch(tree, timeout_s=timeout_s, stop=stop)
        signalled = await _stop_or_reap(tree, ending, streams, policy=policy, stop=stop)
        await _drain(streams, policy=policy)
        finished = True
    finally:
        if not finished:
            await _abandon(tree, streams, policy=policy)
        streams.close()
    return Outcome(ending, frozenset(signalled), tree.pid)


async def _watch(tree: Tree, *, timeout_s: float | None, stop: asyncio.Event) -> Ending:
    """Wait for the shell to exit, the deadline, or a stop request, whichever comes
    first (an exit seen by then wins): one future, woken by whichever comes."""
    loop = asyncio.get_running_loop()
    woken: asyncio.Future[None] = loop.create_future()
    exited = False

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    def on_exit() -> None:
        nonlocal exited
        exited = True
        wake()

    deadline = None if timeout_s is None else loop.call_later(timeout_s, wake)
    forget_stop = on_abort(stop, wake)
    stop_watching = _watch_exit(tree, on_exit)
    try:
        await woken
    finally:
        if deadline is not None:
            deadline.cancel()
        forget_stop()
        stop_watching()
    if exited:
        # The shell has exited: reap it now, so its status is known.
        tree.wait()
        return Ending.EXITED
    return Ending.ABORTED if stop.is_set() else Ending.TIMED_OUT


def _watch_exit(tree: Tree, on_exit: Callable[[], None]) -> Callable[[], None]:
    """Call ``on_exit`` (on the loop) when the shell exits: a pidfd on the loop, no
    thread; a waiting thread only on kernels without pidfd (before Linux 5.3).
    Returns the function that stops watching."""
    loop = asyncio.get_running_loop()
    try:
        pidfd = os.pidfd_open(tree.pid)
    except OSError:
        # The thread ends when the shell is reaped, which stopping the tree ensures.
        waiting = asyncio.ensure_future(asyncio.to_thread(tree.wait))
        waiting.add_done_callback(lambda _: on_exit())
        return lambda: None
    loop.add_reader(pidfd, on_exit)

    def forget() -> None:
        loop.remove_reader(pidfd)
        os.close(pidfd)

    return forget


async def _stop_or_reap(
    tree: Tree, ending: Ending, streams: Streams, *, policy: KillPolicy, stop: asyncio.Event
) -> set[int]:
    """Stop the tree, or after a clean exit what it left running; the PIDs signalled."""
    if ending is Ending.EXITED and not streams.done.is_set():
        # Let descendants that still hold the pipes finish writing, briefly.
        drained: asyncio.Future[object] = asyncio.ensure_future(streams.wait(policy.drain_s))
        stopped: asyncio.Future[object] = asyncio.ensure_future(stop.wait())
        await asyncio.wait({drained, stopped}, return_when=asyncio.FIRST_COMPLETED)
        drained.cancel()
        stopped.cancel()
    # procfs reads never wait on a disk: this check stays on the loop, so a
    # plain `true` does not pay for a thread hop.
    if ending is Ending.EXITED and not tree.lingering():
        return set()
    return await stop_tree(tree, policy)


async def stop_tree(tree: Tree, policy: KillPolicy) -> set[int]:
    """``policy``'s stop of the whole tree in a worker thread, waited out even if cancelled."""
    return await run_unstoppable(lambda: tree.stop(policy))


async def _abandon(tree: Tree, streams: Streams, *, policy: KillPolicy) -> None:
    """A run that did not finish: stop its tree, then release both readers (bounded),
    off the event loop and waited out through any cancellation."""
    try:
        await stop_tree(tree, policy)
    finally:
        streams.abandon()
        await run_unstoppable(lambda: streams.join(policy.grace_s))


async def _drain(streams: Streams, *, policy: KillPolicy) -> None:
    """Drain both pipes to EOF, bounded; a pipe still held after that is abandoned."""
    if not await streams.wait(policy.drain_s):
        streams.abandon()
        await streams.done.wait()
