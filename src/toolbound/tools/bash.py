"""The Bash tool: run a command, stream it, bound it, and leave nothing behind.

One call is a chain of stages:

1. **spawn**: ``bash -c COMMAND`` in the workspace as a new process tree
   (``exec.tree``), through ``exec.sandbox.spawn``, the one way in, confined
   when a sandbox is asked for; one reader per stream (``exec.reader``), which
   starts on the event loop and moves to a worker thread once its stream is
   past the capture ceiling.
2. **watch**: wait for the shell to exit (a pidfd on the loop), the timeout,
   or an abort.
3. **stop**: on timeout or abort, stop the whole tree in a worker thread
   (SIGTERM, grace, SIGKILL, reap: ``Tree.stop``). When the shell exited by
   itself, drain the pipes for ``linger_drain_s`` and stop whatever it left
   running. A call cancelled or failing mid-way still stops its tree (on the
   loop, bounded) before the cancellation goes on.
4. **close**: wait (bounded) for both readers to reach EOF; a pipe still held
   open after that is abandoned. The streams close only after the tree is
   gone, and no chunk is emitted after this stage, so none can follow the
   result.
5. **shape**: each stream's capture through ``bounds.cut`` (stdout head,
   stderr tail), spilling the fuller captured copy of a cut stream; invalid
   UTF-8 is counted for the notice.

Each stream keeps the end(s) the call's budgets say (``ctx.budgets.streams``).
Under the economy profile (CONTRACT section 8) that is both ends: captured
at both ends (``exec.capture.capture_for``: half the capture ceiling each),
shown as a terminal would show them (``\r`` and erase-line rewrites
collapsed, styling removed: ``bounds.headtail.shown_ends``), then cut to
the economy budget, head and tail with the marker between (``cut`` with
``keep="both"``); the spill holds both shown ends. The budgets shrink as
the context fills (``toolbound.shrink``). The chunks keep the raw bytes;
``totals`` and ``omitted`` count the raw stream, so what the model did not
see is ``totals`` minus what it did.

Pieces:
    run            the tool's entry point
    Ending         how the shell's run ended
    Shaped         one stream as the result reports it
    shape_stream   a capture -> the model's text (pure but for the spill)
    shape_ends     economy: both ends of a capture -> the model's text
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from toolbound import notices
from toolbound.bounds import Cut, cut
from toolbound.bounds.headtail import HeadTailBudget, Retained, shown_ends
from toolbound.exec import sandbox
from toolbound.exec.abort import on_abort
from toolbound.exec.capture import (
    BothEndsCapture,
    Captured,
    HeadCapture,
    TailCapture,
    capture_for,
    invalid_utf8_bytes,
    is_utf8,
)
from toolbound.exec.reader import StopSignal, StreamReader
from toolbound.exec.shield import run_unstoppable
from toolbound.exec.stopping import signal_name
from toolbound.exec.tree import Tree
from toolbound.jobs.models import JobStartResult
from toolbound.jobs.table import require
from toolbound.limits import Budget, Limits
from toolbound.models.bash import BashArgs, BashResult, SpillPaths, StreamCounts, StreamPair
from toolbound.results import ErrorCode, Stream, ToolError
from toolbound.scratch import Scratch
from toolbound.tools import ToolContext

# How often a stopping tree is rescanned for members that have not exited yet.
_STOP_POLL_S = 0.01

# Economy: ends up to this size are collapsed on the loop, larger ones in a
# worker thread. Collapsing a progress bar, the worst case, measured 0.29 ms
# for 1KB and 4.0 ms for 16KB against 0.10 ms for a thread hop (load 11.8 on
# 2 cores); plain text costs a small part of that.
_SHOW_ON_LOOP_BYTES = 1024


class Ending(Enum):
    EXITED = "exited"
    TIMED_OUT = "timed out"
    ABORTED = "aborted"


@dataclass(slots=True)
class _Readers:
    """Both streams' reader threads and the event set when both are done."""

    stdout: StreamReader
    stderr: StreamReader
    done: asyncio.Event
    stop: StopSignal
    # The economy profile's captures (stdout, stderr), None under the exact profile.
    ends: tuple[BothEndsCapture, BothEndsCapture] | None = None

    def join(self, timeout_s: float) -> None:
        """Block until both readers ended, bounded (in a worker thread)."""
        self.stdout.join(timeout_s)
        self.stderr.join(timeout_s)

    def abandon(self) -> None:
        """Stop reading both pipes now, wherever each reader runs."""
        self.stop.set()
        self.stdout.stop()
        self.stderr.stop()

    def close(self) -> None:
        """Close the stop descriptor once both readers have ended."""
        # A reader still running would poll a closed (maybe reused) descriptor:
        # leak the eventfd instead in that never-seen case.
        if not (self.stdout.is_alive() or self.stderr.is_alive()):
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


async def run(args: BashArgs, ctx: ToolContext) -> BashResult | JobStartResult:
    """Run ``args.command`` and return its bounded result (CONTRACT section 4); with
    ``background``, start it as a job and return at once (``toolbound.jobs``)."""
    if args.background:
        return await require(ctx.jobs).start(
            args, args.model_dump(by_alias=True, exclude_none=True)
        )
    limits = ctx.limits
    timeout_s = args.timeout if args.timeout is not None else limits.bash_timeout_default_s
    started = time.monotonic()
    shell = await _spawn(args.command, ctx)
    readers = _start_readers(shell, ctx)
    finished = False
    try:
        ending = await _watch(shell, timeout_s=timeout_s, abort=ctx.abort)
        stopped = await _stop(shell, ending, readers, limits=limits, abort=ctx.abort)
        await _close_streams(readers, limits=limits)
        finished = True
    finally:
        if not finished:
            # Cancelled or failed mid-way: the tree still goes and the readers
            # are released before the cancellation goes on.
            await _abandon(shell, readers, limits=limits)
        readers.close()
    if readers.ends is None:
        out, err, invalid = await _shape_exact(readers, ctx)
        said: list[str] = []
    else:
        out, err, invalid, said = await _shape_economy(readers.ends, ctx)
    run_notice = notices.bash_run(
        timed_out=ending is Ending.TIMED_OUT,
        aborted=ending is Ending.ABORTED,
        timeout_s=timeout_s,
        timeout_max_s=limits.bash_timeout_max_s,
        lingering=len(stopped - {shell.pid}) if ending is Ending.EXITED else 0,
        invalid=invalid.items(),
    )
    bound = sandbox.bound_notice(shell, ctx.sandbox, err.payload)
    said += [bound] if bound else []
    return _result(
        shell,
        ending,
        out,
        err,
        notice=notices.join(([run_notice] if run_notice else []) + said),
        duration_ms=int((time.monotonic() - started) * 1000),
    )


async def _shape_exact(
    readers: _Readers, ctx: ToolContext
) -> tuple[Shaped, Shaped, dict[Stream, int]]:
    """The seed's shaping: stdout's head and stderr's tail, each to its budget."""
    limits = ctx.limits
    out_held, err_held = readers.stdout.captured(), readers.stderr.captured()
    out_budget, err_budget = (stream.budget for stream in ctx.budgets.streams(limits))
    out = await _shaped(out_held, out_budget, "stdout", ctx.scratch, limits=limits)
    err = await _shaped(err_held, err_budget, "stderr", ctx.scratch, limits=limits)
    invalid = await _invalid_bytes(out_held, err_held)
    return out, err, invalid


async def _shaped(
    held: Captured, budget: Budget, label: Stream, scratch: Scratch, *, limits: Limits
) -> Shaped:
    """One stream shaped by ``shape_stream``; a stream that printed nothing is
    ``_SILENT`` at once (nothing to cut, count or spill: most short commands'
    stderr, and both of ``true``'s)."""
    if not held.total_bytes:
        return _SILENT
    return Shaped.of_cut(held, await shape_stream(held, budget, label, scratch, limits=limits))


async def _shape_economy(
    ends: tuple[BothEndsCapture, BothEndsCapture], ctx: ToolContext
) -> tuple[Shaped, Shaped, dict[Stream, int], list[str]]:
    """The economy profile's shaping: both ends of each stream as a terminal shows
    them, cut to the (maybe shrunken) economy budgets; the notice sentences it adds."""
    said: list[str] = []
    shaped: list[Shaped] = []
    invalid: dict[Stream, int] = {}
    labels: tuple[Stream, Stream] = ("stdout", "stderr")
    streams = ctx.budgets.streams(ctx.limits)
    for capture, label, stream in zip(ends, labels, streams, strict=True):
        raw = capture.retained()
        shaped_stream, collapsed = await shape_ends(
            raw,
            HeadTailBudget.split(stream.budget, head_share=stream.head_share),
            label,
            ctx.scratch,
            limits=ctx.limits,
        )
        shaped.append(shaped_stream)
        invalid[label] = _invalid_in_ends(raw)
        if collapsed:
            said.append(notices.collapsed(label, collapsed))
        if stream.sentence and shaped_stream.truncated:
            said.append(stream.sentence)
    return shaped[0], shaped[1], invalid, said


async def _spawn(command: str, ctx: ToolContext) -> Tree:
    try:
        return await sandbox.spawn(
            command, cwd=ctx.roots.workspace, policy=ctx.sandbox, scratch=ctx.scratch
        )
    except OSError as err:
        raise ToolError(
            ErrorCode.NOT_FOUND,
            f"Could not start bash in the workspace ({err.strerror or err}); "
            "check that bash is installed and the workspace still exists.",
        ) from err


def _start_readers(shell: Tree, ctx: ToolContext) -> _Readers:
    loop = asyncio.get_running_loop()
    limits = ctx.limits
    done = asyncio.Event()
    remaining = [2]
    lock = threading.Lock()
    stop = StopSignal()

    def on_done() -> None:
        # One wake-up of the loop per call, from whichever reader ends last;
        # none at all when that reader ran on the loop (a short command's).
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if not last:
            return
        if _on_loop(loop):
            done.set()
        else:
            loop.call_soon_threadsafe(done.set)

    def reader(fd: int, stream: Stream, capture: HeadCapture | TailCapture) -> StreamReader:
        return StreamReader(
            fd,
            stream,
            capture=capture,
            live=HeadCapture(
                max_bytes=limits.capture_max_bytes, max_lines=limits.capture_max_lines
            ),
            emit=ctx.emit,
            interval_s=limits.chunk_interval_s,
            chunk_max_bytes=limits.chunk_max_bytes,
            stop=stop,
            on_done=on_done,
        )

    # Each stream's capture keeps the end(s) its result keeps (the profile's).
    out, err = (
        capture_for(
            stream.keep, max_bytes=limits.capture_max_bytes, max_lines=limits.capture_max_lines
        )
        for stream in ctx.budgets.profile.streams(limits)
    )
    ends = None
    if isinstance(out, BothEndsCapture) and isinstance(err, BothEndsCapture):
        ends = (out, err)
    captures = (out, err)
    readers = _Readers(
        reader(shell.stdout_fd, "stdout", captures[0]),
        reader(shell.stderr_fd, "stderr", captures[1]),
        done,
        stop,
        ends,
    )
    readers.stdout.start(loop)
    readers.stderr.start(loop)
    return readers


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether this thread is running ``loop`` now."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


async def _watch(shell: Tree, *, timeout_s: float, abort: asyncio.Event) -> Ending:
    """Wait for the shell to exit, the deadline, or an abort, whichever comes first
    (an exit seen by then wins): one future, woken by whichever comes."""
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

    deadline = loop.call_later(timeout_s, wake)
    forget_abort = on_abort(abort, wake)
    stop_watching = _watch_exit(shell, on_exit)
    try:
        await woken
    finally:
        deadline.cancel()
        forget_abort()
        stop_watching()
    if exited:
        # The shell has exited: reap it now, so its status is known.
        shell.wait()
        return Ending.EXITED
    return Ending.ABORTED if abort.is_set() else Ending.TIMED_OUT


def _watch_exit(shell: Tree, on_exit: Callable[[], None]) -> Callable[[], None]:
    """Call ``on_exit`` (on the loop) when the shell exits: a pidfd on the loop, no
    thread; a waiting thread only on kernels without pidfd (before Linux 5.3).
    Returns the function that stops watching."""
    loop = asyncio.get_running_loop()
    try:
        pidfd = os.pidfd_open(shell.pid)
    except OSError:
        # The thread ends when the shell is reaped, which stopping the tree ensures.
        waiting = asyncio.ensure_future(asyncio.to_thread(shell.wait))
        waiting.add_done_callback(lambda _: on_exit())
        return lambda: None
    loop.add_reader(pidfd, on_exit)

    def stop() -> None:
        loop.remove_reader(pidfd)
        os.close(pidfd)

    return stop


async def _stop(
    shell: Tree, ending: Ending, readers: _Readers, *, limits: Limits, abort: asyncio.Event
) -> set[int]:
    """Stop the tree; returns the PIDs that had to be signalled."""
    if ending is Ending.EXITED and not readers.done.is_set():
        # Let descendants that still hold the pipes finish writing, briefly.
        drained: asyncio.Future[object] = asyncio.ensure_future(readers.wait(limits.linger_drain_s))
        aborted: asyncio.Future[object] = asyncio.ensure_future(abort.wait())
        await asyncio.wait({drained, aborted}, return_when=asyncio.FIRST_COMPLETED)
        drained.cancel()
        aborted.cancel()
    # procfs reads never wait on a disk: this check stays on the loop, so a
    # plain `true` does not pay for a thread hop.
    if ending is Ending.EXITED and not shell.lingering():
        return set()
    return await _stop_tree(shell, limits=limits)


async def _stop_tree(shell: Tree, *, limits: Limits) -> set[int]:
    """SIGTERM, grace, SIGKILL, reap: in a worker thread, waited out even if cancelled."""
    return await run_unstoppable(
        lambda: shell.stop(grace_s=limits.kill_grace_s, poll_s=_STOP_POLL_S)
    )


async def _abandon(shell: Tree, readers: _Readers, *, limits: Limits) -> None:
    """A call that did not finish: stop its tree, then release both readers (bounded),
    off the event loop and waited out through any cancellation."""
    try:
        await _stop_tree(shell, limits=limits)
    finally:
        readers.abandon()
        await run_unstoppable(lambda: readers.join(limits.kill_grace_s))


async def _close_streams(readers: _Readers, *, limits: Limits) -> None:
    """Drain both pipes to EOF, bounded; a pipe still held after that is abandoned."""
    if not await readers.wait(limits.linger_drain_s):
        readers.abandon()
        await readers.done.wait()


async def shape_stream(
    captured: Captured, budget: Budget, label: Stream, scratch: Scratch, *, limits: Limits
) -> Cut:
    """The model's text for one stream: its capture cut to ``budget``, keeping the
    capture's end; a cut stream's fuller copy is spilled and named in the marker
    (only when the spill file was really written)."""
    shown = cut(
        captured.data,
        budget,
        keep=captured.keep,
        total_bytes=captured.total_bytes,
        total_lines=captured.total_lines,
        edge_line_bytes=captured.edge_line_bytes,
    )
    if not shown.truncated:
        return shown
    n = limits.spill_max_bytes
    fuller = captured.data[:n] if captured.keep == "head" else captured.data[-n:]
    path = await asyncio.to_thread(scratch.spill, label, fuller)
    return shown if path is None else shown.with_spill(str(path))


async def shape_ends(
    raw: Retained, budget: HeadTailBudget, label: Stream, scratch: Scratch, *, limits: Limits
) -> tuple[Shaped, int]:
    """Economy: the model's text for one stream captured at both ends, and the bytes
    collapsing its terminal rewrites and styling removed. A cut stream's shown
    ends are spilled (both of them, the capture's gap marked between) and the
    spill named in the marker, only when the file was really written."""
    if len(raw.head) + len(raw.tail) < _SHOW_ON_LOOP_BYTES:
        shown, collapsed = shown_ends(raw)
    else:
        shown, collapsed = await asyncio.to_thread(shown_ends, raw)
    both = cut(shown, budget, keep="both")
    if both.truncated:
        half = min(limits.capture_max_bytes, limits.spill_max_bytes) // 2
        fuller = shown.spill_within(
            limits.spill_max_bytes, head_ceiling_bytes=half, tail_ceiling_bytes=half
        )
        path = await asyncio.to_thread(scratch.spill, label, fuller)
        both = both.with_spill(None if path is None else str(path))
    stream = Shaped(
        payload=both.payload,
        truncated=both.truncated,
        spill_path=both.spill_path,
        omitted=_counts(raw.dropped_bytes, raw.dropped_newlines),
        totals=_counts(raw.total_bytes, raw.total_lines),
    )
    return stream, collapsed


def _invalid_in_ends(raw: Retained) -> int:
    """Invalid UTF-8 in both ends, not counting a character either was cut through."""
    head, tail = raw.whole_char_ends()
    return invalid_utf8_bytes(head) + invalid_utf8_bytes(tail)


async def _invalid_bytes(stdout: Captured, stderr: Captured) -> dict[Stream, int]:
    """Invalid UTF-8 per stream. Valid text is checked in C on the loop; counting
    costs a Python call per bad byte (binary output), so that goes to a thread."""
    if is_utf8(stdout.data) and is_utf8(stderr.data):
        return {"stdout": 0, "stderr": 0}
    return await asyncio.to_thread(
        lambda: {"stdout": stdout.invalid_bytes, "stderr": stderr.invalid_bytes}
    )


@dataclass(frozen=True, slots=True)
class Shaped:
    """One stream as the result reports it: the model's text, whether it was cut
    and where its spill is, and the raw stream's counts."""

    payload: str
    truncated: bool
    spill_path: str | None
    omitted: StreamCounts
    totals: StreamCounts

    @classmethod
    def of_cut(cls, held: Captured, cut: Cut) -> Shaped:
        return cls(
            payload=cut.payload,
            truncated=cut.truncated,
            spill_path=cut.spill_path,
            omitted=_counts(held.omitted_bytes, held.omitted_lines),
            totals=_counts(held.total_bytes, held.total_lines),
        )


# Parts of the result most calls share, made once (the models are frozen):
# about 2 us each a call saved (timeit).
_NOTHING = StreamCounts(bytes=0, lines=0)
_NOTHING_PAIR = StreamPair(stdout=_NOTHING, stderr=_NOTHING)
_NO_SPILL = SpillPaths()
# A stream that printed nothing, as the result reports it.
_SILENT = Shaped(payload="", truncated=False, spill_path=None, omitted=_NOTHING, totals=_NOTHING)


def _counts(size: int, lines: int) -> StreamCounts:
    return _NOTHING if size == 0 and lines == 0 else StreamCounts(bytes=size, lines=lines)


def _pair(stdout: StreamCounts, stderr: StreamCounts) -> StreamPair:
    if stdout is _NOTHING and stderr is _NOTHING:
        return _NOTHING_PAIR
    return StreamPair(stdout=stdout, stderr=stderr)


def _result(
    shell: Tree,
    ending: Ending,
    out: Shaped,
    err: Shaped,
    *,
    notice: str | None,
    duration_ms: int,
) -> BashResult:
    returncode = shell.returncode
    exit_code = returncode if ending is Ending.EXITED and returncode is not None else None
    if exit_code is not None and exit_code < 0:
        exit_code = None
    return BashResult(
        stdout=out.payload,
        stderr=err.payload,
        exit_code=exit_code,
        signal=signal_name(returncode),
        timed_out=ending is Ending.TIMED_OUT,
        aborted=ending is Ending.ABORTED,
        truncated=out.truncated or err.truncated,
        spill=(
            _NO_SPILL
            if out.spill_path is None and err.spill_path is None
            else SpillPaths(stdout=out.spill_path, stderr=err.spill_path)
        ),
        omitted=_pair(out.omitted, err.omitted),
        totals=_pair(out.totals, err.totals),
        notice=notice,
        duration_ms=duration_ms,
    )
