"""Recording a host's tool calls and their events; the event loop never waits on the store.

The host hands each call's start and each event (chunk or result, with its
``seq``) to a :class:`CallRecorder`, which only queues them (or holds them a
moment, below); one background thread with its own connection writes
whatever is queued in one transaction at a time, so a burst of chunks costs
one commit, and the event loop never waits for a lock. A call's result is
awaited (``CallHandle.settled``) until its transaction committed, so a call
that returned can be replayed at once.
When a write fails (the database stayed locked past the busy timeout, the
disk is full or read-only), that batch is lost (logged once), later batches
are tried again, and the calls themselves go on untouched.

A call's stored events are bounded like its result: each stream's chunks are
stored while that stream's stored bytes and lines stay within the capture
ceiling (``capture_max_bytes`` / ``capture_max_lines``, where a Bash call's
live stream stops anyway); later chunks of the stream (a long background
job's) are not stored, and when the result comes their count and bytes go
into ``tool_call_drops``. What is stored keeps its ``seq``. With the result
goes the call's row of the context ledger (``store.ledger.measure``: its
model text's tokens and bytes, what was elided and spilled), measured in the
writer thread too. On PostgreSQL,
each committed batch NOTIFYs the calls it wrote, so a web view of another
host follows them live.

The recorder is a host's call listener (``toolbound.listeners``): a call's
start, each of its events and its settle go to the call's handle. A call
started on the event loop is held there for up to ``chunk_interval_s`` (the
live chunks' own coalescing, so a viewer sees no later) before its start and
events go to the writer thread. Most calls end sooner: at their settle the
whole call (start, events, result) is written in one transaction on the
loop's thread itself, through a second connection that never waits
(``connect_unwaiting``: SQLite only), when nothing else of this recorder is
being written; if the write lock is taken (another process writes), the call
goes to the writer thread as any other. Either way the result is committed
before the call returns, and ``close`` hands every held call to the writer
first, so nothing is lost; a call's start reaches the database at most that
interval later than before (and a crash of the host meanwhile loses it, as it
loses the call). A call run inside a consumer's ``listeners.answer_first`` (the
stdio wire, which answers first) settles without waiting: it is written on
the loop within ``chunk_interval_s`` with the calls answered meanwhile, in one
transaction (about 0.1 ms of CPU a call less, bench/mcp.py), before any later
call's rows and at the latest when the recorder closes. A short call so costs
no thread hop and one transaction
(measured, 500 x ``true`` through Bash: 2.85 -> 2.39 ms per call, the writer
thread's 0.45 ms of CPU per call gone, the loop's transaction about 0.2 ms).
On PostgreSQL the writer thread groups a batch by call and writes each call's
rows as one statement, the whole batch in one round trip
(``store.postgres.write_calls``), instead of five round trips per call
(measured, one process recording 1,000 calls: about 1.0 -> 0.6 ms of CPU a call).
There a call settled whole is not written on the loop's thread (a round trip
it would wait for) but sent from it (``store.pg_loop.LoopWriter``): its
statement goes out on a nonblocking connection of its own, and the call
settles when the loop reads the answer; the call's rows and the kept record
are one transaction, as on SQLite. It is sent only when nothing of the writer
thread is pending, and the thread writes only once the loop's writes are
answered, so rows keep the order the calls started in. The thread opens its
connection at its first write and closes it after a second with nothing to
write: a session of short calls holds one. A connection the server cut (a
restart) costs the write in flight on it: the thread's is opened again by its
next batch, the loop's by the thread after a write of its own went through
(meanwhile short calls go through the thread). (Measured, bench/store.py's call:
one process, 0.48 -> 0.22 ms of this process's CPU a call, raw inserts' client
0.16, and 1.31x raw's rate, its one round trip against their four; 2
processes 0.83x; 8 processes on 2 cores 0.54-0.98x, about 0.7x typical,
against 0.54-0.66x before, side by side.)

The session's read record (what it has Read, so the session's next host
knows it: a restart's Edit relies on it) is kept by the recorder too
(``keep``): every transaction the recorder writes, on the loop or in its
thread, writes the record in it when it changed since last written, as
``to_json`` gives it inside the transaction (so a later transaction always
holds a later record), and ``close`` writes it once more if it changed after
the last. A call that changed the record is so written with it, after its
answer when the call answered first (the wire), and no call pays a thread hop
and a transaction of its own for the record (a Read in the exact profile
changes it every call; bench/mcp.py, quiet machine: its in-process exact Read
0.74-0.91 -> 0.48 ms, and over stdio a new economy window each call, whose
record holds 64 windows of the file, 2.8-3.0x -> 1.1x node's round trip).

Pieces:
    KeptRecord    what the recorder keeps for the session: a version and its JSON
    save_read_record  one upsert of a session's read record, inside a transaction
    CallHandle    one call being recorded: event(), settled()
    StreamBudget  one stream's stored bytes and lines against the capture ceiling
    CallRecorder  the queue and its writer thread: start(), close(); the listener;
                  checkpoint_count() for an economy Read on the loop (SQLite);
                  keep() the read record, written with the calls
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from toolbound import busy
from toolbound.fit import NO_FIT, Fit
from toolbound.limits import DEFAULT_LIMITS, Limits, ProfileName
from toolbound.listeners import CallListener, CallStart, answers_first, is_job_call
from toolbound.model_text import model_text
from toolbound.store.backend import connect_unwaiting
from toolbound.store.conn import CHANNEL, SAVE_READ_RECORD, Backend, CallRows, Conn
from toolbound.store.ledger import measure

if TYPE_CHECKING:
    from toolbound.store.pg_loop import LoopWriter

log = logging.getLogger(__name__)

# How many queued operations one transaction takes at most.
_BATCH = 2048

# json.dumps(value, ensure_ascii=False) and the same with allow_nan=False: made
# once, not per call (json.dumps builds an encoder for every call given options;
# 2 us of a short call's 13 for its result, 2 of 4.7 for its arguments, timeit).
_to_json = json.JSONEncoder(ensure_ascii=False).encode
_to_strict_json = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode

# How long the writer thread waits for the writes sent from the loop (older than
# its own) to be answered before it writes anyway: only a loop that stopped
# with writes owed and a recorder never closed would make it wait that long.
_LOOP_WRITES_WAIT_S = 30.0

# How long the writer thread keeps its PostgreSQL connection (a second one, beside
# the loop's) once it has nothing to write: a session holds it while a call runs
# past the hold, and a fleet's sessions do not hold two each.
_THREAD_CONN_IDLE_S = 1.0
# How often the writer thread tries to open the loop's connection again once it
# broke (a restarted server): at most once a second, after a write of its own went through.
_REOPEN_EVERY_S = 1.0

# After this many calls written on the loop's thread (whose connection never
# checkpoints), the writer thread checkpoints the WAL, keeping it small.
_CHECKPOINT_EVERY = 100


class KeptRecord(Protocol):
    """The session's read record as the recorder keeps it (``ReadRecord``)."""

    # Bumped by every change: written again only when it moved.
    version: int

    def to_json(self) -> str:
        """The record as saved (thread-safe)."""
        ...


def save_read_record(conn: Conn, session_id: str, record: str) -> None:
    """Replace ``session_id``'s saved read record (``record``, its JSON) in the
    transaction ``conn`` is in (the session must exist)."""
    conn.execute(SAVE_READ_RECORD, (session_id, record, time.time()))


@dataclass(eq=False)
class CallHandle:
    """One call being recorded. ``event`` is safe from any thread."""

    _recorder: CallRecorder
    tool_call_id: str
    tool: str
    profile: ProfileName
    # The client's per-result cap the call's model text is kept within.
    fit: Fit = NO_FIT
    row_id: int | None = None
    # Touched by whoever writes the call's operations (the writer thread, or the
    # loop's thread for a call written whole there).
    budgets: dict[str, StreamBudget] = field(default_factory=dict)
    # The call's operations held on the event loop, not yet queued (None: queued as they come).
    held: list[_Op] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    release_timer: asyncio.TimerHandle | None = None
    # Whether the result event is committed (or lost); the future is made only
    # when someone waits (most calls are written whole and nobody does).
    written: bool = False
    _done: concurrent.futures.Future[None] | None = None
    # Its own lock: a result is settled under ``lock`` too (``release`` on a closed recorder).
    _done_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def done(self) -> concurrent.futures.Future[None]:
        """A future resolved once the result event is committed (or recording gave up on it)."""
        with self._done_lock:
            if self._done is None:
                self._done = concurrent.futures.Future()
                if self.written:
                    self._done.set_result(None)
            return self._done

    def mark_written(self) -> None:
        """The result event is committed, or lost (any thread)."""
        with self._done_lock:
            if self.written:
                return
            self.written = True
            done = self._done
        if done is not None:
            done.set_result(None)

    def event(self, event: dict[str, Any]) -> None:
        """Queue one wire event (``{"type": "chunk"|"input"|"result", "seq", ...}``)."""
        op: _Op = ("event", self, event, time.time())
        with self.lock:
            if self.held is not None:
                self.held.append(op)
                return
        self._recorder._put(op)

    def take_held(self) -> list[_Op] | None:
        """The held operations, if any, now the caller's to write; later ones are queued."""
        with self.lock:
            held, self.held = self.held, None
        return held

    def release(self) -> None:
        """Queue the held operations, in order, and every later one as it comes."""
        with self.lock:
            held, self.held = self.held, None
            for op in held or ():
                # Under the lock: an event from a reader thread waits its turn.
                self._recorder._put(op)

    async def settled(self) -> None:
        """Wait until the result event is committed (or recording gave up on it)."""
        if not self.written:  # wrapping a done future still costs a self-pipe wake-up
            await asyncio.wrap_future(self.done)


_Op = tuple[Any, ...]


@dataclass
class StreamBudget:
    """One stream's stored chunks against the capture ceiling, and what it dropped."""

    max_bytes: int
    max_lines: int
    kept_bytes: int = 0
    kept_lines: int = 0
    dropped_chunks: int = 0
    dropped_bytes: int = 0

    def admit(self, data: str) -> bool:
        """Whether this chunk is stored: it keeps the stream within both ceilings.

        A chunk is stored whole or not at all, so a stored chunk is always
        the chunk as it was streamed; once one is refused, so are the later
        ones (the stored part of a stream is a prefix of it).
        """
        size = len(data.encode("utf-8", "surrogatepass"))
        lines = data.count("\n")
        if (
            not self.dropped_chunks
            and self.kept_bytes + size <= self.max_bytes
            and self.kept_lines + lines <= self.max_lines
        ):
            self.kept_bytes += size
            self.kept_lines += lines
            return True
        self.dropped_chunks += 1
        self.dropped_bytes += size
        return False


class CallRecorder(CallListener):
    """Writes one session's tool calls and events from a background thread."""

    def __init__(
        self, backend: Backend, session_id: str, *, limits: Limits = DEFAULT_LIMITS
    ) -> None:
        """Open the recorder's own connection (raising if the store is unusable) and start."""
        self.backend = backend
        self.session_id = session_id
        self.limits = limits
        self._conn: Conn | None = None
        self._unwaiting: Conn | None = None
        self._loop_writer: LoopWriter | None = None
        # The writer thread replaces a broken loop writer (under _count_lock) until close.
        self._reopening = True
        self._reopen_after = 0.0
        if backend.kind == "postgresql":
            from toolbound.store.pg_loop import LoopWriter
            from toolbound.store.postgres import PostgresBackend

            assert isinstance(backend, PostgresBackend)
            # The thread's connection is opened when the thread first writes: a
            # session of short calls needs only this one.
            self._loop_writer = LoopWriter.open(backend)
        else:
            self._conn = backend.connect()
            try:
                self._unwaiting = connect_unwaiting(backend)
            except BaseException:
                self._conn.close()
                raise
        self._queue: queue.SimpleQueue[_Op] = queue.SimpleQueue()
        self._closed = False
        self._degraded = False
        # Operations queued and not yet written (or given up), under _count_lock.
        self._pending = 0
        self._count_lock = threading.Lock()
        # Writes sent from the loop (``_send_here``) not yet answered, under _count_lock;
        # the writer thread writes once there are none (they are older than its own).
        self._owed = 0
        self._owed_done = threading.Condition(self._count_lock)
        self._written_here = 0
        # The calls being recorded as a listener, by tool call id; those held on the loop.
        self._handles: dict[str, CallHandle] = {}
        self._held: dict[str, CallHandle] = {}
        # The operations of whole calls settled inside ``answer_first``, in order, and
        # the timer that writes them (all at once) on the loop.
        self._deferred: list[_Op] = []
        self._deferred_timer: asyncio.TimerHandle | None = None
        # The session's read record (``keep``) and the version last written (under
        # _count_lock: the loop and the writer thread both write it).
        self._kept: KeptRecord | None = None
        self._kept_version = 0
        self._thread = threading.Thread(target=self._run, name="toolbound-recorder", daemon=True)
        self._thread.start()

    def start(
        self,
        tool_call_id: str,
        tool: str,
        args: object,
        *,
        profile: ProfileName = "exact",
        fit: Fit = NO_FIT,
    ) -> CallHandle:
        """Queue a call's start; the returned handle records its events.

        ``profile`` is the one its result's model text is rendered for and
        ``fit`` the cap it is kept within, kept with the call so the replay
        renders the text as it was sent.
        """
        handle = CallHandle(self, tool_call_id, tool, profile, fit)
        self._put(("call", handle, _args_json(args), time.time()))
        return handle

    def call_started(self, call: CallStart) -> None:
        if call.session_id != self.session_id:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None or self._closed:
            handle = self.start(
                call.tool_call_id, call.tool, call.args, profile=call.profile, fit=call.fit
            )
        else:
            # Calls start in order: one started before this one is no longer held,
            # so the calls' rows keep the order the calls started in (and every
            # deferred call is older than every held one).
            self._release_held()
            handle = CallHandle(self, call.tool_call_id, call.tool, call.profile, call.fit)
            handle.held = [("call", handle, _args_json(call.args), time.time())]
            handle.release_timer = loop.call_later(
                self.limits.chunk_interval_s, self._release, handle
            )
            self._held[call.tool_call_id] = handle
        self._handles[call.tool_call_id] = handle

    def call_event(self, call: CallStart, event: dict[str, Any]) -> None:
        handle = self._handles.get(call.tool_call_id)
        if handle is not None:
            handle.event(event)

    async def settle(self, call: CallStart) -> None:
        """Recorded before it is handed out, so a finished call replays at once."""
        handle = self._handles.get(call.tool_call_id)
        if handle is None:
            return
        if handle.held is not None:
            self._forget_held(handle)
            held = handle.take_held()
            if held is not None and answers_first():
                self._defer(held)
                return
            self._write_deferred()  # older calls first
            if held is not None:
                sending = self._send_here(held)
                if sending is not None:
                    await sending
                    return
                if not self._write_here(held):
                    for op in held:
                        self._put(op)
        await handle.settled()

    def call_ended(self, call: CallStart, failure: BaseException | None) -> None:
        handle = self._handles.pop(call.tool_call_id, None)
        if handle is not None:
            # A crashed tool's call (no result) is recorded as it was.
            self._release(handle)

    @property
    def counts_on_loop(self) -> bool:
        """Whether :meth:`checkpoint_count` can answer on the event loop (SQLite)."""
        return self._unwaiting is not None

    def checkpoint_count(self, session_id: str) -> int | None:
        """How many checkpoints ``session_id`` has, counted through the connection that
        never waits (a WAL read takes no lock), so the event loop may ask; None when it
        cannot answer now (PostgreSQL, a closed recorder, a busy database)."""
        conn = self._unwaiting
        if conn is None or self._closed:
            return None
        try:
            row = conn.execute(
                "SELECT count(*) FROM checkpoints WHERE session_id = ?", (session_id,)
            ).fetchone()
        except Exception:  # busy, or the store went away: the caller knows no count
            return None
        return int(row[0])

    def keep(self, record: KeptRecord) -> None:
        """Write ``record``, the session's read record as the store holds it now (its
        version saved), with the calls: in every later transaction of this recorder
        when it changed since, and on close."""
        with self._count_lock:
            self._kept, self._kept_version = record, record.version

    def _kept_changed(self) -> bool:
        record = self._kept
        return record is not None and record.version != self._kept_version

    def _kept_to_write(self) -> tuple[int, str] | None:
        """The kept record's version and JSON when it changed since last written."""
        record = self._kept
        if record is None:
            return None
        version = record.version  # before its JSON: a change meanwhile is written later
        if version == self._kept_version:
            return None
        return version, record.to_json()

    def _write_kept(self, conn: Conn) -> int | None:
        """Inside a write transaction: the kept record when it changed since last
        written; the version written (to pass to ``_kept_written`` once committed), else None."""
        kept = self._kept_to_write()
        if kept is None:
            return None
        save_read_record(conn, self.session_id, kept[1])
        return kept[0]

    def _kept_written(self, version: int | None) -> None:
        if version is not None:
            with self._count_lock:
                # Versions only rise; a slower writer's older one never goes back.
                self._kept_version = max(self._kept_version, version)

    def close(self) -> None:
        """Write everything queued and held (and the kept record, if it changed), then
        stop the thread (blocking: call it in a thread)."""
        with self._count_lock:
            self._reopening = False
            writer = self._loop_writer
        if writer is not None and not writer.loop_elsewhere():
            # No loop will take the answers in (it ended, or it is this thread's):
            # wait for them here, before the thread, which writes after them.
            writer.finish(_LOOP_WRITES_WAIT_S)
        if not self._closed:
            if self._deferred_timer is not None:
                self._deferred_timer.cancel()
            deferred, self._deferred = self._deferred, []
            for op in deferred:
                self._put(op)
            for handle in list(self._held.values()):
                handle.release()
            self._closed = True
            self._queue.put(("close",))
        self._thread.join()
        if self._unwaiting is not None:
            self._unwaiting.close()
        if writer is not None:
            self._close_loop_writer(writer)

    def _close_loop_writer(self, writer: LoopWriter) -> None:
        """Close the loop's connection on the loop's thread (which watches its socket)
        when that loop runs elsewhere, else here."""
        if writer.loop_elsewhere():
            closed = threading.Event()

            def close_there() -> None:
                writer.close()
                closed.set()

            with contextlib.suppress(RuntimeError):  # that loop closed meanwhile
                writer.bound_loop().call_soon_threadsafe(close_there)
                if closed.wait(_LOOP_WRITES_WAIT_S):
                    return
        writer.close()

    def _defer(self, ops: list[_Op]) -> None:
        """Keep a whole answered call's operations for the next deferred write (on the loop)."""
        self._deferred += ops
        if self._deferred_timer is None:
            self._deferred_timer = asyncio.get_running_loop().call_later(
                self.limits.chunk_interval_s, self._write_deferred
            )

    def _write_deferred(self) -> None:
        """Write the deferred calls, in order, in one transaction (on the loop); the
        writer thread takes them when that is not possible now."""
        if self._deferred_timer is not None:
            self._deferred_timer.cancel()
            self._deferred_timer = None
        ops, self._deferred = self._deferred, []
        if ops and self._send_here(ops) is None and not self._write_here(ops):
            for op in ops:
                self._put(op)

    def _release(self, handle: CallHandle) -> None:
        """Hand a held call to the writer thread (on the loop), after the deferred
        calls, which started before it."""
        self._forget_held(handle)
        if handle.held is not None:
            self._write_deferred()
        handle.release()

    def _release_held(self) -> None:
        for handle in list(self._held.values()):
            self._release(handle)

    def _forget_held(self, handle: CallHandle) -> None:
        self._held.pop(handle.tool_call_id, None)
        if handle.release_timer is not None:
            handle.release_timer.cancel()
            handle.release_timer = None

    def _write_here(self, ops: list[_Op]) -> bool:
        """Write whole held calls in one transaction on this thread, without
        waiting; False (nothing written) when that is not possible now: another
        connection holds the write lock, or this recorder's writer thread has
        operations pending, which must be written first."""
        conn = self._unwaiting
        if conn is None:
            return False
        with self._count_lock:
            if self._pending:
                return False
        inserted: list[CallHandle] = []
        try:
            conn.execute(self.backend.begin_write)
            for op in ops:
                self._apply(conn, op, inserted, {})
            kept = self._write_kept(conn)
            conn.execute("COMMIT")
        except Exception:
            # Most likely the write lock is taken: the writer thread, which waits, writes it.
            with contextlib.suppress(Exception):
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            for handle in inserted:
                handle.row_id = None
            for op in ops:
                op[1].budgets.clear()
            return False
        self._kept_written(kept)
        _settle(ops)
        before = self._written_here
        self._written_here += len(inserted)
        if (
            self._written_here // _CHECKPOINT_EVERY > before // _CHECKPOINT_EVERY
            and not self._closed
        ):
            # Not counted as pending: the loop's next call need not wait for it.
            self._queue.put(("checkpoint",))
        return True

    def _send_here(self, ops: list[_Op]) -> asyncio.Future[None] | None:
        """Send whole held calls from the loop in one transaction (PostgreSQL), and
        a future done once it is answered (written, or lost and logged); None
        (nothing sent) when that is not possible now: no loop writer, or this
        recorder's writer thread has operations pending, which must be written first."""
        writer = self._loop_writer
        if writer is None or self._closed:
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop runs in this thread: the writer thread writes
            return None
        if not writer.usable_on(loop):
            return None
        groups: dict[CallHandle, CallRows] = {}
        with self._count_lock:
            if self._pending:
                return None
            self._owed += 1
        try:
            for op in ops:
                self._group(op, groups)
            calls = [(h, rows) for h, rows in groups.items() if rows.call or rows.events]
            kept = self._kept_to_write()
            record = None if kept is None else (self.session_id, kept[1], time.time())
            written = loop.create_future()

            def done(ids: list[int] | None, error: str | None) -> None:
                if ids is None:
                    self._degrade(error or "the write was lost")
                else:
                    for (handle, rows), row_id in zip(calls, ids, strict=True):
                        if rows.call is not None:
                            handle.row_id = row_id
                    self._kept_written(None if kept is None else kept[0])
                _settle(ops)
                with self._count_lock:
                    self._owed -= 1
                    if not self._owed:  # what the writer thread waits for
                        self._owed_done.notify_all()
                if not written.done() and not written.get_loop().is_closed():
                    written.set_result(None)

            writer.send([rows for _, rows in calls], CHANNEL, record, done)
        except Exception:
            # Not sent (a value the driver cannot encode, a broken connection): the
            # writer thread takes the calls as it takes any other.
            for op in ops:
                op[1].budgets.clear()
            with self._count_lock:
                self._owed -= 1
                self._owed_done.notify_all()
            return None
        return written

    def _wait_loop_writes(self) -> None:
        """Let the writes sent from the loop be answered first: they are older than
        anything this thread writes (the loop sends only while nothing here is pending)."""
        deadline = time.monotonic() + _LOOP_WRITES_WAIT_S
        with self._count_lock:
            while self._owed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._owed_done.wait(left)

    def _put(self, op: _Op) -> None:
        if self._closed:
            _settle([op])
            return
        with self._count_lock:
            self._pending += 1
        self._queue.put(op)

    def _run(self) -> None:
        conn = self._conn
        try:
            while True:
                try:
                    ops = [self._queue.get(timeout=self._idle_timeout(conn))]
                except queue.Empty:
                    assert conn is not None
                    conn.close()  # idle: opened again by the next write
                    conn = self._conn = None
                    continue
                while len(ops) < _BATCH:
                    try:
                        ops.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                closing = any(op[0] == "close" for op in ops)
                writes = [op for op in ops if op[0] in ("call", "event")]
                if self._loop_writer is not None:
                    self._wait_loop_writes()
                if conn is None and (writes or (closing and self._kept_changed())):
                    conn = self._conn = self._connect()
                busy.begin()  # a small Read on the loop waits for this thread's GIL
                try:
                    if conn is None:
                        _settle(writes)  # the store cannot be reached: lost, and logged
                    else:
                        self._write(conn, writes, final=closing)
                    with self._count_lock:
                        self._pending -= len(writes)
                    # After the writes, which need not wait for its sync of the disk
                    # (one in 100 calls waited ~60 ms for it here).
                    if conn is not None and any(op[0] == "checkpoint" for op in ops):
                        self._checkpoint(conn)
                finally:
                    busy.end()
                if conn is not None and getattr(conn, "broken", False):
                    # Lost (a restarted server): the next batch connects again.
                    conn.close()
                    conn = self._conn = None
                elif conn is not None and writes and not closing:
                    self._reopen_loop_writer()
                if closing:
                    return
        finally:
            if conn is not None:
                conn.close()
            # Whatever raced past close() is not written, but never left waiting.
            leftover: list[_Op] = []
            while True:
                try:
                    leftover.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            _settle(leftover)

    def _reopen_loop_writer(self) -> None:
        """In the writer thread, its own write just through: when the loop's connection
        broke (a restarted server), open a new one, so short calls are sent from the
        loop again instead of through this thread."""
        broken = self._loop_writer
        if broken is None or not broken.broken or time.monotonic() < self._reopen_after:
            return
        self._reopen_after = time.monotonic() + _REOPEN_EVERY_S
        from toolbound.store.pg_loop import LoopWriter
        from toolbound.store.postgres import PostgresBackend

        assert isinstance(self.backend, PostgresBackend)
        try:
            writer = LoopWriter.open(self.backend)
        except Exception:  # unreachable again: tried after a later write, a second on
            return
        with self._count_lock:
            reopening = self._reopening
            if reopening:
                self._loop_writer = writer
        # The broken one is watched by no loop any more (``LoopWriter._break``).
        (broken if reopening else writer).close()

    def _idle_timeout(self, conn: Conn | None) -> float | None:
        """How long the thread waits for work before it closes its connection (None: no end)."""
        if conn is None or self._loop_writer is None:
            return None
        return _THREAD_CONN_IDLE_S

    def _connect(self) -> Conn | None:
        """The writer thread's own connection, opened at its first write (PostgreSQL)."""
        from toolbound.store.pg_loop import THREAD_APPLICATION_NAME
        from toolbound.store.postgres import PostgresBackend

        try:
            assert isinstance(self.backend, PostgresBackend)
            return self.backend.connect_as(THREAD_APPLICATION_NAME)
        except Exception as err:
            self._degrade(err)
            return None

    def _checkpoint(self, conn: Conn) -> None:
        """Copy the WAL into the database (what the loop's connection never does)."""
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except Exception as err:
            self._degrade(err)

    def _degrade(self, err: BaseException | str) -> None:
        if not self._degraded:
            self._degraded = True
            log.warning(
                "toolbound: some tool calls could not be recorded in %s: %s",
                self.backend.describe(),
                err,
            )

    def _write(self, conn: Conn, ops: list[_Op], *, final: bool = False) -> None:
        """One batch in one transaction, the kept record with it when it changed
        (the ``final`` batch, on close, writes it even with no call's rows)."""
        if self.backend.kind == "postgresql":
            self._write_grouped(conn, ops, final=final)
            return
        if ops or (final and self._kept_changed()):
            inserted: list[CallHandle] = []
            try:
                conn.execute(self.backend.begin_write)
                touched: dict[str, int] = {}
                for op in ops:
                    self._apply(conn, op, inserted, touched)
                kept = self._write_kept(conn)
                payloads = [
                    json.dumps({"session": self.session_id, "call": call_id, "seq": seq})
                    for call_id, seq in touched.items()
                ]
                self.backend.commit_notifying(conn, CHANNEL, payloads)
                self._kept_written(kept)
            except Exception as err:
                # Whatever went wrong, this thread must live on and settle the
                # waiting calls: recording is never worth a hung tool call.
                with contextlib.suppress(Exception):
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                for handle in inserted:
                    handle.row_id = None
                self._degrade(err)
        _settle(ops)

    def _write_grouped(self, conn: Conn, ops: list[_Op], *, final: bool = False) -> None:
        """Write a batch as its calls' rows, one round trip (PostgreSQL: every
        statement is a round trip, five per call when written one by one)."""
        from toolbound.store.postgres import write_calls

        groups: dict[CallHandle, CallRows] = {}
        try:
            for op in ops:
                self._group(op, groups)
            calls = [(h, rows) for h, rows in groups.items() if rows.call or rows.events]
            if calls:
                ids = write_calls(conn, CHANNEL, [rows for _, rows in calls])
                for (handle, rows), row_id in zip(calls, ids, strict=True):
                    if rows.call is not None:
                        handle.row_id = row_id
            if ops or final:
                # Its own statement (autocommit) after the calls' (this thread is the one writer).
                self._kept_written(self._write_kept(conn))
        except Exception as err:
            # As _write: the batch is lost, the thread lives on, the calls settle.
            self._degrade(err)
        _settle(ops)

    def _group(self, op: _Op, groups: dict[CallHandle, CallRows]) -> None:
        """Add one operation's rows to its call's (budgets and ledger as _apply)."""
        handle: CallHandle = op[1]
        if op[0] == "call":
            _, _, args, at = op
            fit = handle.fit
            call = (
                *(self.session_id, handle.tool_call_id, handle.tool, args, at, handle.profile),
                *(fit.client, fit.max_bytes, fit.max_lines),
            )
            groups[handle] = CallRows(None, call, self.session_id, handle.tool_call_id)
            return
        _, _, event, at = op
        rows = groups.get(handle)
        if rows is None:
            if handle.row_id is None:
                return  # its call could not be recorded
            rows = groups[handle] = CallRows(
                handle.row_id, None, self.session_id, handle.tool_call_id
            )
        if event["type"] == "input":
            rows.events.append((event["seq"], "input", *_input_columns(event), at))
            rows.seq = event["seq"]
            return
        is_chunk = event["type"] == "chunk"
        if is_chunk and not self._budget(handle, event["stream"]).admit(event["data"]):
            return
        rows.events.append(
            (
                event["seq"],
                event["type"],
                event["stream"] if is_chunk else None,
                event["data"] if is_chunk else None,
                None if is_chunk else _storable(_to_json(event["result"]), event["result"]),
                at,
            )
        )
        rows.seq = event["seq"]
        if not is_chunk:
            if not is_job_call(handle.tool_call_id):
                result = event["result"]
                text = event.get("text")
                if not isinstance(text, str):
                    text = model_text(handle.tool, result, fit=handle.fit)
                rows.ledger = measure(handle.tool, result, text).row()
            rows.drops = [
                (s, b.dropped_chunks, b.dropped_bytes)
                for s, b in sorted(handle.budgets.items())
                if b.dropped_chunks
            ]

    def _budget(self, handle: CallHandle, stream: str) -> StreamBudget:
        budget = handle.budgets.get(stream)
        if budget is None:
            budget = StreamBudget(self.limits.capture_max_bytes, self.limits.capture_max_lines)
            handle.budgets[stream] = budget
        return budget

    def _apply(
        self, conn: Conn, op: _Op, inserted: list[CallHandle], touched: dict[str, int]
    ) -> None:
        if op[0] == "call":
            _, handle, args, at = op
            fit = handle.fit
            cur = conn.execute(
                "INSERT INTO tool_calls (session_id, tool_call_id, tool, args, started_at, profile,"
                " client, fit_bytes, fit_lines) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    self.session_id,
                    handle.tool_call_id,
                    handle.tool,
                    args,
                    at,
                    handle.profile,
                    fit.client,
                    fit.max_bytes,
                    fit.max_lines,
                ),
            )
            (handle.row_id,) = cur.fetchone()
            inserted.append(handle)
            touched[handle.tool_call_id] = -1
            return
        _, handle, event, at = op
        if handle.row_id is None:
            return  # its call could not be recorded
        if event["type"] == "input":
            conn.execute(
                "INSERT INTO tool_events (call_id, seq, type, stream, data, result, created_at)"
                " VALUES (?, ?, 'input', ?, ?, ?, ?)",
                (handle.row_id, event["seq"], *_input_columns(event), at),
            )
            touched[handle.tool_call_id] = event["seq"]
            return
        is_chunk = event["type"] == "chunk"
        if is_chunk and not self._budget(handle, event["stream"]).admit(event["data"]):
            return
        conn.execute(
            "INSERT INTO tool_events (call_id, seq, type, stream, data, result, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                handle.row_id,
                event["seq"],
                event["type"],
                event["stream"] if is_chunk else None,
                event["data"] if is_chunk else None,
                None if is_chunk else _storable(_to_json(event["result"]), event["result"]),
                at,
            ),
        )
        touched[handle.tool_call_id] = event["seq"]
        if not is_chunk:
            if not is_job_call(handle.tool_call_id):
                # A job's own output reaches the model only through JobOutput calls.
                self._write_ledger(conn, handle, event)
            drops = [(s, b) for s, b in sorted(handle.budgets.items()) if b.dropped_chunks]
            if drops:
                conn.executemany(
                    "INSERT INTO tool_call_drops (call_id, stream, chunks, bytes)"
                    " VALUES (?, ?, ?, ?)",
                    [(handle.row_id, s, b.dropped_chunks, b.dropped_bytes) for s, b in drops],
                )

    def _write_ledger(self, conn: Conn, handle: CallHandle, event: dict[str, Any]) -> None:
        """The call's ledger row, from its result and the model text it was sent as."""
        result = event["result"]
        text = event.get("text")
        if not isinstance(text, str):
            text = model_text(handle.tool, result, fit=handle.fit)
        conn.execute(
            "INSERT INTO tool_call_ledger (call_id, model_tokens, model_bytes, elided_bytes,"
            " spilled_bytes, reread_avoided) VALUES (?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (call_id) DO NOTHING",
            (handle.row_id, *measure(handle.tool, result, text).row()),
        )


def _input_columns(event: dict[str, Any]) -> tuple[None, str, str]:
    """A job's input event as its row's stream, data and result: what was written,
    and whether the job's stdin was closed after it (it is not a stream's output:
    the capture ceiling does not count it)."""
    return None, event["data"], _to_json({"close": bool(event.get("close"))})


def _settle(ops: list[_Op]) -> None:
    """Resolve the futures of the result events among ``ops``: they are written (or lost)."""
    for op in ops:
        if op[0] == "event" and op[2]["type"] == "result":
            op[1].mark_written()


def _storable(text: str, value: object) -> str:
    """``text`` (``value`` as JSON), or, when it holds a lone surrogate that no UTF-8
    column can take (an agent's broken text, a name that is not UTF-8), ``value`` as
    JSON with ASCII escapes: the same value read back, and the call still recorded."""
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return json.dumps(value)
    return text


def _args_json(args: object) -> str:
    try:
        return _storable(_to_strict_json(args), args)
    except (TypeError, ValueError):
        # A caller passed something JSON cannot hold; the call itself will say so.
        return json.dumps(repr(args), ensure_ascii=False)
