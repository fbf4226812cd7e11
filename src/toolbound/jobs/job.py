"""One background job: its process tree, its two logs, its state, and waiting on it.

A job is ``bash -c COMMAND`` started like any Bash call (``exec.sandbox.spawn``:
its own session and marker, confined when the host's sandbox asks, killed by
the host's guard when the host dies) whose output goes to its logs instead of
a result. Its life is one task on the host's event loop:

1. **watch**: the shell's exit (a pidfd on the loop), the timeout, or a stop
   request (JobStop, the host closing), whichever comes first;
2. **stop**: on timeout or request the whole tree is stopped in a worker
   thread (SIGTERM, grace, SIGKILL, reap: ``Tree.stop``); after an exit, the
   pipes are drained for ``linger_drain_s`` and whatever the shell left
   running is stopped the same way;
3. **close**: both pumps reach EOF (bounded; a pipe still held after that is
   abandoned), then the state is set, every waiter woken, and the listeners
   get the job's result event (``jobs.emitter``).

So a state is never stale by more than that drain: a job whose shell exited is
reaped and marked at once. Each stream is read by a pump thread of its own
(``os.readv`` into one reused buffer, then ``StreamLog.append``): a job lives
for hours, and a reader parked on the event loop would stall every other
session whenever its log compacts (pumps run on ``exec.reader``'s reusable
threads, never fewer than the pumps and readers running). A pump wakes
JobOutput waiters through the loop only when someone waits, at most once per
loop turn.

Pieces:
    Waiters  wake the JobOutput calls waiting on a job, from any thread
    Pump     one stream's reader thread: pipe -> log, live chunks, wake-ups
    Job      the process, logs, state; run(), request_stop(), wait_for(), page()
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import select
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from toolbound import notices
from toolbound.exec.capture import HeadCapture
from toolbound.exec.reader import WORKERS, StopSignal
from toolbound.exec.shield import run_unstoppable, wait_stopped
from toolbound.exec.stopping import signal_name
from toolbound.exec.tree import Tree
from toolbound.jobs.emitter import JobEmitter
from toolbound.jobs.log import Span, StreamLog
from toolbound.jobs.models import JobEntry, JobOutputResult, JobPositions, JobState
from toolbound.jobs.page import StreamPage, page_stream
from toolbound.limits import Limits
from toolbound.linear_regex import LinearRegex
from toolbound.models.bash import StreamCounts, StreamPair
from toolbound.results import Stream

# One read of a pipe at most; the pipe itself is 1 MiB (exec.tree).
READ_BYTES = 256 * 1024
# After a read that found the pipe less than half this full, a fast stream's
# pump naps so the pipe fills (as exec.reader does past the capture ceiling).
_NAP_S = 0.0002
# How often a stopping tree is rescanned for members that have not exited yet.
_STOP_POLL_S = 0.01
# An `until` scan reads at most this much of a stream at a time; a scan of more
# than _SCAN_INLINE_BYTES goes to a worker thread.
_SCAN_BYTES = 1024 * 1024
_SCAN_INLINE_BYTES = 64 * 1024

STREAMS: tuple[Stream, Stream] = ("stdout", "stderr")


class Waiters:
    """The JobOutput calls waiting on one job, each with its own event."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._lock = threading.Lock()
        self._events: set[asyncio.Event] = set()
        self._pending = False

    @contextlib.contextmanager
    def watch(self) -> Iterator[asyncio.Event]:
        """An event set whenever the job printed or ended, for the block (on the loop)."""
        event = asyncio.Event()
        with self._lock:
            self._events.add(event)
        try:
            yield event
        finally:
            with self._lock:
                self._events.discard(event)

    def poke(self) -> None:
        """From any thread: wake the waiters, once per loop turn, only if there are any."""
        with self._lock:
            if not self._events or self._pending:
                return
            self._pending = True
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            self._loop.call_soon_threadsafe(self.fire)

    def fire(self) -> None:
        """On the loop: set every waiter's event."""
        with self._lock:
            self._pending = False
            events = list(self._events)
        for event in events:
            event.set()


class Pump:
    """Reads one pipe to EOF (or a stop) into the stream's log, in a thread of its own."""

    def __init__(
        self,
        fd: int,
        stream: Stream,
        log: StreamLog,
        *,
        emit: Callable[[Stream, str], None],
        live: HeadCapture,
        stop: StopSignal,
        poke: Callable[[], None],
        on_done: Callable[[], None],
    ) -> None:
        self._fd = fd
        self._stream: Stream = stream
        self.log = log
        self._emit = emit
        self._live = live
        self._stop_fd = stop.fd
        self._poke = poke
        self._on_done = on_done
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.error: OSError | None = None
        self.finished = threading.Event()

    def start(self) -> None:
        # On the readers' reusable threads: an idle one takes the pump at once,
        # where starting a thread waits for it (about 1.5 ms a job here).
        WORKERS.submit(self._run)

    def _run(self) -> None:
        try:
            self._pump()
        finally:
            os.close(self._fd)
            self.finished.set()
            self._poke()
            self._on_done()

    def _pump(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._stop_fd, select.POLLIN)
        stop_only = select.poll()
        stop_only.register(self._stop_fd, select.POLLIN)
        buf = bytearray(READ_BYTES)
        while True:
            try:
                n = os.readv(self._fd, [buf])
            except BlockingIOError:
                if any(fd == self._stop_fd for fd, _ in poller.poll()):
                    return
                continue
            if not n:
                self._show(b"", final=True)
                return
            self._take(buf, n)
            self._poke()
            if n < READ_BYTES // 2 and self._live.full:
                time.sleep(_NAP_S)
                if stop_only.poll(0):
                    return

    def _take(self, buf: bytearray, n: int) -> None:
        if self.error is None:
            try:
                self.log.append(buf, n)
            except OSError as err:
                # The disk refused: the job goes on (its pipe is still drained), its log stops.
                self.error = err
        if not self._live.full:
            self._show(bytes(memoryview(buf)[:n]), final=False)

    def _show(self, data: bytes, *, final: bool) -> None:
        """Live chunks to the listeners, up to the capture ceiling, whole characters."""
        if self._live.full:
            return
        text = self._decoder.decode(self._live.feed(data), final=final)
        self._emit(self._stream, text)


@dataclass(frozen=True, slots=True)
class Match:
    """An ``until`` line found, and where each stream's scan got to."""

    line: str | None
    scanned: dict[Stream, int]


def _counts(span: Span) -> StreamCounts:
    return StreamCounts(bytes=span.bytes, lines=span.lines)


class Job:
    """One background job of a host (see the module docstring)."""

    def __init__(
        self,
        job_id: str,
        command: str,
        tree: Tree,
        logs: dict[Stream, StreamLog],
        *,
        emitter: JobEmitter,
        limits: Limits,
        timeout_s: float | None,
    ) -> None:
        self.job_id = job_id
        self.command = command
        self.tree = tree
        self.logs = logs
        self.emitter = emitter
        self.limits = limits
        self.timeout_s = timeout_s
        self.started_at = datetime.now(UTC).isoformat(timespec="milliseconds")
        self.state: JobState = "running"
        self.exit_code: int | None = None
        self.signal: str | None = None
        # Where the previous JobOutput of this job stopped: the default `since`.
        self.cursor: dict[Stream, int] = {"stdout": 0, "stderr": 0}
        self.lingering = 0
        self._loop = asyncio.get_running_loop()
        self.waiters = Waiters(self._loop)
        self._stop_asked = asyncio.Event()
        self._stop_as: JobState = "killed"
        # How the host stopped it (None: it ended by itself).
        self._stopped_as: JobState | None = None
        self._pumps_done = asyncio.Event()
        self._stop = StopSignal()
        self.task: asyncio.Task[None] | None = None
        remaining = [len(STREAMS)]
        lock = threading.Lock()

        def on_done() -> None:
            with lock:
                remaining[0] -= 1
                last = remaining[0] == 0
            if last:
                with contextlib.suppress(RuntimeError):
                    self._loop.call_soon_threadsafe(self._pumps_done.set)

        fds = {"stdout": tree.stdout_fd, "stderr": tree.stderr_fd}
        self.pumps = {
            stream: Pump(
                fds[stream],
                stream,
                logs[stream],
                emit=emitter.chunk,
                live=HeadCapture(
                    max_bytes=limits.capture_max_bytes, max_lines=limits.capture_max_lines
                ),
                stop=self._stop,
                poke=self.waiters.poke,
                on_done=on_done,
            )
            for stream in STREAMS
        }

    # --- life -----------------------------------------------------------------

    def start(self) -> None:
        """Start the pumps and the job's task (on the loop)."""
        self.emitter.started()
        for pump in self.pumps.values():
            pump.start()
        self.task = asyncio.create_task(self._run(), name=f"toolbound-{self.job_id}")

    @property
    def running(self) -> bool:
        return self.state == "running"

    async def _run(self) -> None:
        finished = False
        try:
            asked = await self._watch()
            if asked is None:
                await self._stop_lingering()
            else:
                self._stopped_as = asked
                await self._stop_tree()
            await self._close_pumps()
            finished = True
        finally:
            if not finished:
                self._stopped_as = self._stopped_as or "killed"
                await self._stop_tree()
                self._abandon_pumps()
            self._conclude()
        final = await asyncio.to_thread(self.page, {"stdout": 0, "stderr": 0})
        await self.emitter.finish(final.to_wire())

    async def _watch(self) -> JobState | None:
        """None when the shell exited; else how it is to be stopped."""
        asked: asyncio.Future[object] = asyncio.ensure_future(self._stop_asked.wait())
        pidfd: int | None
        try:
            pidfd = os.pidfd_open(self.tree.pid)
        except OSError:
            pidfd = None
        exited: asyncio.Future[object]
        if pidfd is None:
            # Kernels without pidfd (before 5.3): a thread waits; stopping reaps the shell.
            exited = asyncio.ensure_future(asyncio.to_thread(self.tree.wait))
        else:
            exited = self._loop.create_future()

            def on_exit() -> None:
                if not exited.done():
                    exited.set_result(None)

            self._loop.add_reader(pidfd, on_exit)
        try:
            await asyncio.wait(
                {asked, exited}, timeout=self.timeout_s, return_when="FIRST_COMPLETED"
            )
        finally:
            asked.cancel()
            if pidfd is not None:
                self._loop.remove_reader(pidfd)
                os.close(pidfd)
        if exited.done():
            self.tree.wait()
            return None
        if not self._stop_asked.is_set():
            return "timedOut"
        return self._stop_as

    async def _stop_lingering(self) -> None:
        """The shell exited: let what still holds its pipes finish briefly, then stop it."""
        if not self._pumps_done.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._pumps_done.wait(), self.limits.linger_drain_s)
        if self.tree.lingering():
            self.lingering = len(await self._stop_tree() - {self.tree.pid})

    async def _stop_tree(self) -> set[int]:
        limits = self.limits
        return await run_unstoppable(
            lambda: self.tree.stop(grace_s=limits.kill_grace_s, poll_s=_STOP_POLL_S)
        )

    async def _close_pumps(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._pumps_done.wait(), self.limits.linger_drain_s)
        if not self._pumps_done.is_set():
            self._abandon_pumps()
            await run_unstoppable(self._join_pumps)

    def _abandon_pumps(self) -> None:
        self._stop.set()

    def _join_pumps(self) -> None:
        for pump in self.pumps.values():
            pump.finished.wait(self.limits.kill_grace_s)

    def _conclude(self) -> None:
        returncode = self.tree.returncode
        self.exit_code = returncode if returncode is not None and returncode >= 0 else None
        self.signal = signal_name(returncode)
        if self._stopped_as is not None:
            self.state = self._stopped_as
        else:
            self.state = "exited" if self.exit_code is not None else "killed"
        if all(p.finished.is_set() for p in self.pumps.values()):
            self._stop.close()
        self.waiters.fire()

    def request_stop(self, as_state: JobState = "killed") -> None:
        """Ask the job's task to stop the tree (JobStop, the host closing)."""
        if not self._stop_asked.is_set():
            self._stop_as = as_state
            self._stop_asked.set()

    async def stopped(self) -> None:
        """Wait until the job's task is done (its tree gone, its result emitted)."""
        if self.task is not None:
            await wait_stopped(self.task)

    def close(self) -> None:
        """Release the logs' files (the job is forgotten or the host closes)."""
        for log in self.logs.values():
            log.close()

    # --- waiting ----------------------------------------------------------------

    async def wait_for(
        self,
        since: dict[Stream, int],
        *,
        wait_s: float,
        until: LinearRegex | None,
        abort: asyncio.Event,
    ) -> str | None:
        """Wait up to ``wait_s`` for output past ``since`` (or, with ``until``, a line
        from ``since`` on that matches), the job's end, or an abort; the matched line."""
        deadline = self._loop.time() + wait_s
        scanned = dict(since)
        with self.waiters.watch() as woken:
            while True:
                woken.clear()
                ended = not self.running
                if until is not None:
                    match = await self._scan(until, scanned, final=ended)
                    if match.line is not None:
                        return match.line
                    scanned = match.scanned
                elif any(self.logs[s].total_bytes > since[s] for s in STREAMS):
                    return None
                remaining = deadline - self._loop.time()
                if ended or remaining <= 0 or abort.is_set():
                    return None
                await _first_of(woken, abort, timeout_s=remaining)

    async def _scan(self, until: LinearRegex, scanned: dict[Stream, int], *, final: bool) -> Match:
        pending = sum(self.logs[s].total_bytes - scanned[s] for s in STREAMS)
        if pending > _SCAN_INLINE_BYTES:
            return await asyncio.to_thread(self._scan_logs, until, scanned, final)
        return self._scan_logs(until, scanned, final)

    def _scan_logs(self, until: LinearRegex, scanned: dict[Stream, int], final: bool) -> Match:
        """Complete lines of each stream from ``scanned`` on (a final unterminated one too
        once the job ended), searched for ``until``; lines the log dropped are skipped."""
        at = dict(scanned)
        max_chars = self.limits.max_line_chars
        for stream in STREAMS:
            log = self.logs[stream]
            while at[stream] < log.total_bytes:
                seg = log.segment(at[stream], _SCAN_BYTES)
                data = seg.data
                if not (final and seg.end >= log.total_bytes):
                    last = data.rfind(b"\n")
                    if last < 0 and len(data) < _SCAN_BYTES:
                        at[stream] = seg.start
                        break
                    data = data[: last + 1] if last >= 0 else data
                if not data:
                    break
                at[stream] = seg.start + len(data)
                found = until.search(data)
                if found is not None:
                    start = data.rfind(b"\n", 0, found[0]) + 1
                    end = data.find(b"\n", found[0])
                    line = data[start : end if end >= 0 else len(data)]
                    return Match(line.decode("utf-8", "replace")[:max_chars], at)
        return Match(None, at)

    # --- pages ------------------------------------------------------------------

    def check_since(self, since: dict[Stream, int]) -> str | None:
        """What is wrong with ``since`` (a position past a stream's end), or None."""
        for stream in STREAMS:
            total = self.logs[stream].total_bytes
            if since[stream] > total:
                return (
                    f"since.{stream} {since[stream]} is past the end of the job's {stream} "
                    f"({total} bytes so far); pass a `next` a JobOutput returned, or leave "
                    "`since` out to go on from where the last JobOutput stopped"
                )
        return None

    def page(
        self,
        since: dict[Stream, int],
        *,
        matched: str | None = None,
        notes: tuple[str, ...] = (),
    ) -> JobOutputResult:
        """The job's output from ``since`` within the shell budgets (reads the logs)."""
        state = self.state
        running = state == "running"
        pages: dict[Stream, StreamPage] = {
            "stdout": page_stream(
                self.logs["stdout"],
                since["stdout"],
                self.limits.shell_stdout,
                "head",
                running=running,
            ),
            "stderr": page_stream(
                self.logs["stderr"],
                since["stderr"],
                self.limits.shell_stderr,
                "tail",
                running=running,
            ),
        }
        for stream in STREAMS:
            self.logs[stream].remember(pages[stream].next)
        out, err = pages["stdout"], pages["stderr"]
        # What a log dropped is said while a page's range still reaches back over it.
        dropped = {s: self.logs[s].dropped_after(since[s]) for s in STREAMS}
        notice = notices.job_output(
            state=state,
            more_stdout=out.cut.truncated and out.next < self.logs["stdout"].total_bytes,
            dropped=[(s, dropped[s].bytes, dropped[s].lines) for s in STREAMS],
            head_bytes=self.limits.job_log_head_bytes,
            tail_bytes=self.limits.job_log_tail_bytes,
            lingering=self.lingering if not running else 0,
            log_errors=[(s, str(p.error)) for s, p in self.pumps.items() if p.error is not None],
            extra=notes,
        )
        return JobOutputResult(
            job_id=self.job_id,
            state=state,
            exit_code=None if running else self.exit_code,
            signal=None if running else self.signal,
            stdout=out.cut.payload,
            stderr=err.cut.payload,
            next=JobPositions(stdout=out.next, stderr=err.next),
            matched=matched,
            truncated=out.cut.truncated or err.cut.truncated,
            totals=self._totals(),
            omitted=StreamPair(stdout=_counts(out.omitted), stderr=_counts(err.omitted)),
            notice=notice,
        )

    def _totals(self) -> StreamPair:
        return StreamPair(
            stdout=_counts(self.logs["stdout"].totals()),
            stderr=_counts(self.logs["stderr"].totals()),
        )

    def entry(self) -> JobEntry:
        return JobEntry(
            job_id=self.job_id,
            command=self.command,
            state=self.state,
            exit_code=self.exit_code,
            started_at=self.started_at,
            totals=self._totals(),
        )


async def _first_of(woken: asyncio.Event, abort: asyncio.Event, *, timeout_s: float) -> None:
    """Wait until either event is set, or ``timeout_s``."""
    waits = {asyncio.ensure_future(woken.wait()), asyncio.ensure_future(abort.wait())}
    try:
        await asyncio.wait(waits, timeout=timeout_s, return_when="FIRST_COMPLETED")
    finally:
        for wait in waits:
            wait.cancel()
