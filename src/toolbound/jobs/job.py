"""One background job: its process tree, its two logs, its state, and waiting on it.

A job is ``bash -c COMMAND`` run as any Bash call runs (``exec.run``: spawned
through ``exec.sandbox``, its own session and marker, confined when the
host's sandbox asks, killed by the host's guard when the host dies) whose
output goes to its logs instead of a capture. Its life is one task on the
host's event loop: ``exec.run.run_tree`` watches the shell's exit, the
timeout, or a stop request (JobStop, the host closing), stops the tree as the
host's ``KillPolicy`` says or reaps what the shell left, and drains both
streams; then the state is set, every waiter woken, and the listeners get the
job's result event (``exec.events``).

So a state is never stale by more than that drain: a job whose shell exited is
reaped and marked at once. Each stream is read by ``exec.reader``'s reader on
a worker thread from the start (a job lives for hours, and a reader parked on
the event loop would stall every other session whenever its log compacts),
feeding a ``LogSink`` (the stream's log) and emitting each read's chunk at
once; after each read JobOutput waiters are woken through the loop, only when
someone waits, at most once per loop turn.

Pieces:
    Waiters  wake the JobOutput calls waiting on a job, from any thread
    LogSink  a reader's sink: the stream's log
    Job      the process, logs, stdin, state; start(), request_stop(), send(),
             wait_for(), wait_exit(), wait_quiet(), page()
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from toolbound import notices
from toolbound.bounds.terminal import collapse
from toolbound.exec.abort import Abort
from toolbound.exec.events import CallEvents
from toolbound.exec.reader import DRAIN_READ_BYTES
from toolbound.exec.run import Ending, KillPolicy, Outcome, Streams, read_streams, run_tree
from toolbound.exec.shield import wait_stopped
from toolbound.exec.stopping import signal_name
from toolbound.exec.tree import Tree
from toolbound.jobs.log import Span, StreamLog
from toolbound.jobs.models import JobEntry, JobOutputResult, JobPositions, JobState
from toolbound.jobs.page import StreamPage, page_stream
from toolbound.jobs.stdin import JobStdin
from toolbound.limits import Limits
from toolbound.linear_regex import LinearRegex
from toolbound.models.bash import StreamCounts, StreamPair
from toolbound.results import Stream

# One read of a pipe at most past the live chunks; the pipe itself is 1 MiB (exec.tree).
READ_BYTES = DRAIN_READ_BYTES
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


class LogSink:
    """One stream's log as a reader's sink (``exec.reader.Sink``): what is read is
    appended. A disk that refuses a write stops the log, never the job (its pipe
    is still drained); ``error`` says why."""

    def __init__(self, log: StreamLog) -> None:
        self.log = log
        self._buf = bytearray(READ_BYTES)
        self.error: OSError | None = None

    def feed(self, data: bytes) -> None:
        self._append(data, len(data))

    def reserve(self, size: int) -> memoryview:
        return memoryview(self._buf)[: min(size, READ_BYTES)]

    def commit(self, n: int) -> None:
        self._append(self._buf, n)

    def _append(self, data: bytes | bytearray, n: int) -> None:
        if self.error is None:
            try:
                self.log.append(data, n)
            except OSError as err:
                self.error = err


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
        emitter: CallEvents,
        limits: Limits,
        timeout_s: float | None,
        stdin: JobStdin,
    ) -> None:
        self.job_id = job_id
        self.stdin = stdin
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
        self._stop_asked = Abort()
        self._stop_as: JobState = "killed"
        self.sinks = {stream: LogSink(logs[stream]) for stream in STREAMS}
        self._streams: Streams | None = None
        self.task: asyncio.Task[None] | None = None

    # --- life -----------------------------------------------------------------

    def start(self) -> None:
        """Start the readers and the job's task (on the loop)."""
        self.emitter.started()
        limits = self.limits
        self._streams = read_streams(
            self.tree,
            (self.sinks["stdout"], self.sinks["stderr"]),
            emit=self.emitter.chunk,
            live_bytes=limits.capture_max_bytes,
            live_lines=limits.capture_max_lines,
            # Each read's chunk at once (a job's chunks are not coalesced), then
            # the waiters woken: a JobOutput that returns has its chunks out.
            interval_s=0.0,
            chunk_max_bytes=limits.chunk_max_bytes,
            on_worker=True,
            on_read=self.waiters.poke,
            on_done=self.waiters.poke,
            of_call=False,
        )
        self.task = asyncio.create_task(self._run(self._streams), name=f"toolbound-{self.job_id}")

    @property
    def running(self) -> bool:
        return self.state == "running"

    async def _run(self, streams: Streams) -> None:
        outcome: Outcome | None = None
        try:
            outcome = await run_tree(
                self.tree,
                streams,
                timeout_s=self.timeout_s,
                stop=self._stop_asked,
                policy=KillPolicy.of(self.limits),
            )
        finally:
            self._conclude(outcome)
        final = await asyncio.to_thread(self.page, {"stdout": 0, "stderr": 0})
        await self.emitter.finish(final.to_wire())

    def _conclude(self, outcome: Outcome | None) -> None:
        """The job's state from how its run ended (None: it did not finish: killed)."""
        returncode = self.tree.returncode
        self.exit_code = returncode if returncode is not None and returncode >= 0 else None
        self.signal = signal_name(returncode)
        if outcome is None:
            self.state = "killed"
        elif outcome.ending is Ending.TIMED_OUT:
            self.state = "timedOut"
        elif outcome.ending is Ending.ABORTED:
            self.state = self._stop_as
        else:
            self.lingering = outcome.lingering
            self.state = "exited" if self.exit_code is not None else "killed"
        self.stdin.close()
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

    # --- input ------------------------------------------------------------------

    async def send(self, text: str, *, close: bool) -> int:
        """Tell the listeners (an ``input`` event: ``text``, as the agent sent it), write
        it to the job's stdin (then close it, with ``close``), and return the bytes
        written. The event goes first, so it precedes every chunk the job prints in
        answer (a short write is the JobInput result's to say)."""
        data = text.encode()
        if data or close:
            self.emitter.input(text, close=close)
        written = await self.stdin.write(data, timeout_s=self.limits.job_input_wait_s)
        if close:
            self.stdin.close()
        return written

    # --- waiting ----------------------------------------------------------------

    async def wait_exit(self, *, wait_s: float, abort: asyncio.Event) -> None:
        """Wait up to ``wait_s`` for the job to end (JobOutput ``waitFor: exit``)."""
        deadline = self._loop.time() + wait_s
        with self.waiters.watch() as woken:
            while True:
                woken.clear()
                remaining = deadline - self._loop.time()
                if not self.running or abort.is_set() or remaining <= 0:
                    return
                await _first_of(woken, abort, timeout_s=remaining)

    async def wait_quiet(self, *, wait_s: float, quiet_s: float, abort: asyncio.Event) -> None:
        """After input: wait up to ``wait_s`` for what the job prints, returning once it
        printed and then paused for ``quiet_s``, or ended (JobInput)."""
        loop = self._loop
        deadline = loop.time() + wait_s
        seen = sum(self.logs[s].total_bytes for s in STREAMS)
        quiet_at: float | None = None
        with self.waiters.watch() as woken:
            while True:
                # Cleared before the logs are looked at: a wake-up after the look is kept.
                woken.clear()
                now = loop.time()
                total = sum(self.logs[s].total_bytes for s in STREAMS)
                if total > seen:
                    seen, quiet_at = total, now + quiet_s
                until = deadline if quiet_at is None else min(deadline, quiet_at)
                if not self.running or abort.is_set() or now >= until:
                    return
                await _first_of(woken, abort, timeout_s=until - now)

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
        stdout = out.cut.payload
        if self.stdin.tty:
            # One stream from a terminal: shown as the terminal would show it, and said.
            shown = collapse(stdout)
            stdout = shown.text
            if shown.elided_bytes:
                log = str(self.logs["stdout"].path)
                notes = (*notes, notices.collapsed("stdout", shown.elided_bytes, log=log))
        # What a log dropped is said while a page's range still reaches back over it.
        dropped = {s: self.logs[s].dropped_after(since[s]) for s in STREAMS}
        notice = notices.job_output(
            state=state,
            more_stdout=out.cut.truncated and out.next < self.logs["stdout"].total_bytes,
            dropped=[(s, dropped[s].bytes, dropped[s].lines) for s in STREAMS],
            head_bytes=self.limits.job_log_head_bytes,
            tail_bytes=self.limits.job_log_tail_bytes,
            lingering=self.lingering if not running else 0,
            log_errors=[(s, str(k.error)) for s, k in self.sinks.items() if k.error is not None],
            extra=notes,
        )
        return JobOutputResult(
            job_id=self.job_id,
            state=state,
            exit_code=None if running else self.exit_code,
            signal=None if running else self.signal,
            stdout=stdout,
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
