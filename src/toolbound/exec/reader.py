"""Read one pipe to EOF: feed it to a sink, and emit live chunks.

The sink is where the stream goes: a capture (``exec.capture``) for a Bash
call's result, a job's log (``jobs.log``) for a background job. Both take
bytes (``feed``) while live chunks flow and, past the capture ceiling, give a
buffer to read into (``reserve``) and take what was read (``commit``).

Two reader threads per command, one per stream, with plain ``os.read``: the
issue's measurement on 2 GiB put that at about 1.5 GB/s against 1.2 GB/s for
selectors and 0.9 or 0.7 GB/s for asyncio protocols or streams
(``bench/bash.py`` measures the whole tool). Reads are one chunk (64 KB) while
live chunks flow; past the capture ceiling the pipe grows to 1 MiB and reads
go straight into the capture's memory (stdout: one reused buffer; stderr: the
blocks of its tail ring), where they are counted in place.

The pipe is non-blocking; when it is empty the reader ``poll``s it together
with a stop descriptor, with a timeout that is the next coalescing deadline.
So the same wait serves three purposes: data, a pending chunk due (about
``interval_s``), and a stop request after a bounded drain (a process the host
could not stop may hold the pipe open forever).

Live chunks are decoded incrementally, so ``data`` never splits a UTF-8
character; invalid bytes become U+FFFD (``Captured.invalid_bytes`` counts
them in what the result shows). They are coalesced
up to ``chunk_max_bytes`` or ``interval_s`` and stop at the capture ceiling.
Only the reader emits its stream's chunks, so they stay in order.

A stream starts on the event loop (``add_reader``): most commands print
little, and reading it there spares two thread wake-ups per call (measured:
3.3 -> 2.9 ms per ``true``). Once a stream is past its capture ceiling it
moves to a reusable worker thread, where a gigabyte is only counted; creating
threads per command instead cost 0.3 ms (median) to 1.3 ms (mean, on a busy
machine) per call here.

Past its ceiling a stream is a bulk stream, and gives way (``busy.BulkStream``):
between reads it pauses while another call of the process is young and in
flight, then reads at least a burst before it may pause again, so a stream
never stops; from its first pause its thread's priority drops for the rest
of the stream, and its command's tree is lowered (``give_way``, from
``exec.run``). A paused reader leaves its writer blocked on the full pipe.

Pieces:
    Sink          where a stream's bytes go: a capture or a job's log
    StopSignal    a descriptor that wakes every reader of a command at once
    Workers       reusable daemon threads; one idles out after ``idle_s``
    StreamReader  the reader of one stream: on the loop, then on a worker (a
                  job's from the start: a log that compacts must not stall the loop)
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import errno
import fcntl
import os
import queue
import select
import threading
import time
from collections.abc import Callable
from typing import Protocol

from toolbound import busy
from toolbound.busy import BulkStream, Work
from toolbound.exec.capture import Captured, HeadCapture, TailCapture
from toolbound.results import Stream

# While live chunks flow, a read is at most one chunk. Once the stream is past
# its capture ceiling only counting is left: the pipe grows to DRAIN_PIPE_BYTES
# (Linux's default pipe-max-size) and reads fill the capture's buffers. A reader
# faster than its writer would otherwise wake for every write (8 KB from
# coreutils, 131072 wake-ups per GiB) and count tiny spans; after a read that
# found the pipe less than half full it naps DRAIN_NAP_S instead and lets the
# pipe fill (at 1 GB/s, 200 us is 200 KB: well within the grown pipe).
DRAIN_READ_BYTES = 256 * 1024
DRAIN_PIPE_BYTES = 1024 * 1024
DRAIN_NAP_S = 0.0002


def _hung_up(err: OSError) -> bytes:
    """A pseudo-terminal's master reads EIO once no one holds its slave: its end of
    file (b""); any other error is raised."""
    if err.errno != errno.EIO:
        raise err
    return b""


class Sink(Protocol):
    """Where a stream's bytes go. ``feed`` takes bytes and returns what it kept, when
    that is what its live chunks would show (a head capture), else None or b"";
    ``reserve`` gives a buffer of up to ``size`` bytes to read into and ``commit``
    takes the first ``n`` bytes read into it. A sink is fed from one thread at a time."""

    def feed(self, data: bytes) -> bytes | None: ...
    def reserve(self, size: int) -> memoryview | bytearray: ...
    def commit(self, n: int) -> None: ...


class StopSignal:
    """An eventfd: once set, every poll on it returns at once."""

    def __init__(self) -> None:
        self.fd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)

    def set(self) -> None:
        os.eventfd_write(self.fd, 1)

    def close(self) -> None:
        os.close(self.fd)


class Workers:
    """Daemon threads that run jobs one at a time and wait for the next one.

    ``submit`` hands a job to an idle worker or starts a new one, so there are
    never fewer workers than running jobs (a reader blocks for the life of its
    command; a fixed-size pool would stall the next command's pipes).
    """

    def __init__(self, *, idle_s: float) -> None:
        self._idle_s = idle_s
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[Callable[[], None]]] = []

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(
                target=self._work, args=(inbox,), name="toolbound-reader", daemon=True
            ).start()
        inbox.put(job)

    def _work(self, inbox: queue.SimpleQueue[Callable[[], None]]) -> None:
        while True:
            try:
                job = inbox.get(timeout=self._idle_s)
            except queue.Empty:
                with self._lock:
                    if inbox in self._idle:
                        self._idle.remove(inbox)
                        return
                # A submitter took this worker just now: its job is on the way.
                job = inbox.get()
            job()
            # An idle worker must not keep its last reader (and that reader's
            # capture buffers, about 1 MB) alive until the next job comes.
            del job
            if busy.spent():
                return  # still at a bulk stream's low priority: not for the next command
            with self._lock:
                self._idle.append(inbox)


# How long an idle reader thread waits for another command before it ends.
_IDLE_S = 30.0
WORKERS = Workers(idle_s=_IDLE_S)


class StreamReader:
    """Drains one pipe to EOF (or until stopped), then closes it and calls ``on_done``;
    ``on_read`` (if given) runs after each read was taken and its chunk emitted."""

    def __init__(
        self,
        fd: int,
        stream: Stream,
        *,
        capture: Sink,
        live: HeadCapture,
        emit: Callable[[Stream, str], None],
        interval_s: float,
        chunk_max_bytes: int,
        stop: StopSignal,
        on_done: Callable[[], None],
        on_read: Callable[[], None] | None = None,
        work: Work | None = None,
        owner: str | None = None,
        give_way: Callable[[int], None] | None = None,
    ) -> None:
        self._fd = fd
        self._stream: Stream = stream
        self._capture = capture
        # stdout's capture keeps the same head its live chunks show (the same
        # ceiling): it gates them itself, so the first bytes are counted once
        # and held once (512 KB less per call).
        self._live = (
            capture if isinstance(capture, HeadCapture) and capture.gates_like(live) else live
        )
        self._emit = emit
        self._interval_s = interval_s
        self._chunk_max_bytes = chunk_max_bytes
        self._stop_fd = stop.fd
        self._on_done = on_done
        self._on_read = on_read
        self._bulk = BulkStream(work, owner=owner, give_way=give_way)
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending: list[str] = []
        self._pending_bytes = 0
        self._due: float | None = None
        self.reached_eof = False
        self._ended = False
        # Made when the stream moves to a worker, the only place join() waits on
        # (a reader on the loop ends there, stop() included): 5 us a reader saved.
        self._finished: threading.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None

    def start(self, loop: asyncio.AbstractEventLoop, *, on_worker: bool = False) -> None:
        """Start reading on ``loop``; the stream moves to a worker thread once it
        is past its capture ceiling, where only fast counting is left. With
        ``on_worker`` it is read on a worker thread from the start."""
        if on_worker:
            self._finished = threading.Event()
            WORKERS.submit(self._run)
            return
        self._loop = loop
        loop.add_reader(self._fd, self._on_readable)

    def stop(self) -> None:
        """Abandon the pipe now (call on the loop, after setting the StopSignal,
        which a reader already on a worker obeys)."""
        if self._loop is not None:
            self._leave_loop()
            self._finish()

    def join(self, timeout_s: float) -> bool:
        """Wait for a reader on a worker to end; True if it has."""
        if self._ended or self._finished is None:
            return self._ended
        return self._finished.wait(timeout_s)

    def is_alive(self) -> bool:
        return not self._ended

    def captured(self) -> Captured:
        """What the sink kept, when it is a capture (a Bash call's reader)."""
        if not isinstance(self._capture, HeadCapture | TailCapture):
            raise TypeError("this reader's sink is not a capture")
        return self._capture.finish()

    # -- on the loop: short and chatty streams, no thread wake-ups ----------------------

    def _on_readable(self) -> None:
        try:
            data = os.read(self._fd, self._chunk_max_bytes)
        except BlockingIOError:
            return
        except OSError as err:
            data = _hung_up(err)
        if not data:
            self.reached_eof = True
            self._leave_loop()
            self._finish()
            return
        self._take(data)
        if self._live.full:
            self._leave_loop()
            self._finished = threading.Event()
            WORKERS.submit(self._run)
        elif self._pending and self._timer is None and self._due is not None:
            assert self._loop is not None
            delay = max(0.0, self._due - time.monotonic())
            self._timer = self._loop.call_later(delay, self._on_due)

    def _on_due(self) -> None:
        self._timer = None
        self._flush(final=False)

    def _leave_loop(self) -> None:
        if self._loop is not None:
            self._loop.remove_reader(self._fd)
            self._loop = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # -- on a worker: a stream past its ceiling, drained at thread speed ----------------

    def _run(self) -> None:
        try:
            self._drain()
        finally:
            self._finish()

    def _finish(self) -> None:
        try:
            self._flush(final=self.reached_eof)
        finally:
            self._bulk.stop()
            os.close(self._fd)
            self._ended = True
            if self._finished is not None:
                self._finished.set()
            self._on_done()

    def _drain(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._stop_fd, select.POLLIN)
        while not self._live.full:
            try:
                data = os.read(self._fd, self._chunk_max_bytes)
            except BlockingIOError:
                if not self._wait(poller):
                    return
                continue
            except OSError as err:
                data = _hung_up(err)
            if not data:
                self.reached_eof = True
                return
            self._take(data)
        self._count_rest(poller)

    def _count_rest(self, poller: select.poll) -> None:
        """Past the ceiling: big reads straight into the capture's memory, counted there.
        A bulk stream now: it yields to young other work (``busy``) between reads."""
        with contextlib.suppress(OSError):
            # A bigger pipe means fewer reads and fewer writer wake-ups; a
            # refusal (the per-user pipe quota) leaves it as it was.
            fcntl.fcntl(self._fd, fcntl.F_SETPIPE_SZ, DRAIN_PIPE_BYTES)
        reserve, commit = self._capture.reserve, self._capture.commit
        on_read = self._on_read
        bulk = self._bulk
        bulk.start()
        burst = busy.POLICY.burst_bytes
        stop_only = select.poll()
        stop_only.register(self._stop_fd, select.POLLIN)
        # Bytes to read before the stream may pause again: after a pause, at least
        # the policy's burst, so a stream never stops however busy the process is.
        owed = 0
        while True:
            if owed <= 0 and bulk.should_yield():
                bulk.pause()
                owed = burst
            target = reserve(DRAIN_READ_BYTES)
            try:
                n = os.readv(self._fd, [target])
            except BlockingIOError:
                if not self._wait(poller):
                    return
                continue
            except OSError as err:
                n = len(_hung_up(err))
            if not n:
                self.reached_eof = True
                return
            commit(n)
            owed -= n
            if on_read is not None:
                on_read()
            # A read that found the pipe less than half as full as the room offered.
            if n < len(target) // 2:
                time.sleep(DRAIN_NAP_S)
                if stop_only.poll(0):
                    return

    def _wait(self, poller: select.poll) -> bool:
        """Wait for data or a due chunk; False when told to stop."""
        timeout_ms = None
        if self._due is not None:
            timeout_ms = max(0, int((self._due - time.monotonic()) * 1000) + 1)
        ready = poller.poll(timeout_ms)
        if any(fd == self._stop_fd for fd, _ in ready):
            return False
        if not ready:
            self._flush(final=False)
        return True

    def _take(self, data: bytes) -> None:
        """Feed one read to the sink and the live chunks; then ``on_read``, if any (a
        job's waiters are woken after the chunk is out, never before)."""
        self._feed(data)
        if self._on_read is not None:
            self._on_read()

    def _feed(self, data: bytes) -> None:
        if self._live.full:
            self._capture.feed(data)
            return
        kept = self._capture.feed(data)
        shown = kept if self._live is self._capture and kept is not None else self._live.feed(data)
        if self._pending_bytes + len(shown) > self._chunk_max_bytes:
            # Reads are at most a chunk while live, so no chunk exceeds the maximum.
            self._flush(final=False)
        if shown:
            text = self._decoder.decode(shown)
            if text:
                self._pending.append(text)
                self._pending_bytes += len(shown)
        now = time.monotonic()
        if self._due is None:
            self._due = now + self._interval_s
        if self._pending_bytes >= self._chunk_max_bytes or now >= self._due or self._live.full:
            self._flush(final=False)

    def _flush(self, *, final: bool) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if final and not self._live.full:
            # A stream cut at the ceiling drops an incomplete character instead.
            tail = self._decoder.decode(b"", final=True)
            if tail:
                self._pending.append(tail)
        self._due = None
        if self._pending:
            text = "".join(self._pending)
            self._pending.clear()
            self._pending_bytes = 0
            self._emit(self._stream, text)
