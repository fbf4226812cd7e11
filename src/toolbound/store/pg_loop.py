"""A recorder's short writes to PostgreSQL, sent from the event loop: no thread, no waiting.

Most calls end within the recorder's hold and are written whole when they
settle. On SQLite that is one transaction on the loop's own thread, through a
connection that never waits (``store.backend.connect_unwaiting``). On
PostgreSQL every statement is a network round trip, which the loop must not
block on, so the recorder's writer thread made it: a hop to that thread and
back for every call (a queue, two wake-ups, the loop's self-pipe) around
psycopg's cursor. Measured on one process recording 3,000 calls
(bench/store.py's call, Glob refused), that cost 0.18 ms of the thread's CPU
and 0.13 ms of the loop's per call, more than the whole client of raw inserts
(0.19 ms for its four round trips).

:class:`LoopWriter` sends such writes from the loop itself, on a nonblocking
libpq connection in pipeline mode that the loop watches. A write is its
statements (prepared once, when the writer opens) followed by a sync, so the
server runs them as one transaction; writes queue behind each other in the
pipeline and their answers come back in order. When the socket turns
readable the loop takes the answers in and calls each finished write's
``done`` with its calls' row ids, or with the error that lost it. A write so
costs one send and one wake-up: the statement alone, from the loop, 0.08-0.11
ms of CPU against 0.20-0.22 ms through a thread and psycopg's cursor
(timeit-style loop of 3,000, side by side).

One loop at a time: the writer binds to the loop of its first write, and
moves to another only when it owes none (a writer whose loop runs in another
thread is not usable from here; the recorder then uses its thread). When no
loop will ever run again (a host closed after its loop ended), ``finish``
waits for the owed answers in the calling thread.

Pieces:
    APPLICATION_NAME, THREAD_APPLICATION_NAME  the recorder's connections, as the server lists them
    Done          the callback of one write: its calls' row ids, or the error
    LoopWriter    open(backend); usable_on(loop); send(); owed; finish(); close();
                  bound_loop(), loop_elsewhere()
"""

from __future__ import annotations

import asyncio
import select
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import psycopg
from psycopg import pq

from toolbound.store.conn import SAVE_READ_RECORD, CallRows
from toolbound.store.errors import StoreUnavailable
from toolbound.store.postgres import (
    CALL_ROWS_KNOWN,
    CALL_ROWS_NEW,
    PgConn,
    PostgresBackend,
    call_rows_params,
)

__all__ = ["APPLICATION_NAME", "THREAD_APPLICATION_NAME", "Done", "LoopWriter"]

# How a recorder's connections name themselves to the server: the loop's, and
# its writer thread's (open only while it has calls to write).
APPLICATION_NAME = "toolbound-recorder"
THREAD_APPLICATION_NAME = "toolbound-recorder-thread"

# One write's outcome: its calls' row ids in order (None when lost), and why it was lost.
Done = Callable[[list[int] | None, str | None], None]

_NEW = b"toolbound_call_new"
_KNOWN = b"toolbound_call_known"
_RECORD = b"toolbound_read_record"


def _numbered(query: str) -> bytes:
    """psycopg's ``%s`` placeholders as libpq's ``$1``, ``$2``..."""
    first, *rest = query.split("%s")
    return (first + "".join(f"${i}{part}" for i, part in enumerate(rest, 1))).encode()


def _text(values: Sequence[object]) -> list[bytes | None]:
    """Parameters in PostgreSQL's text format (floats whole: ``repr`` round-trips)."""
    return [
        None
        if v is None
        else v.encode()
        if type(v) is str
        else repr(v).encode()
        if type(v) is float
        else str(v).encode()
        for v in values
    ]


@dataclass
class _Write:
    """One sent write: how many of its statements return a call's id, and its answers."""

    calls: int
    done: Done
    ids: list[int] = field(default_factory=list)
    error: str | None = None


class LoopWriter:
    """A nonblocking PostgreSQL connection in pipeline mode, driven by one event loop."""

    def __init__(self, conn: PgConn) -> None:
        self._conn = conn
        self._pg = conn.raw.pgconn
        self._fd = self._pg.socket
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        self._writes: deque[_Write] = deque()
        self._results: list[pq.abc.PGresult] = []
        self._writing = False  # the loop watches for writability (a send did not fit)
        self.broken = False

    @classmethod
    def open(cls, backend: PostgresBackend) -> LoopWriter:
        """Connect (blocking), prepare the statements, and enter pipeline mode."""
        conn = backend.connect_as(APPLICATION_NAME)
        assert isinstance(conn, PgConn)
        pg = conn.raw.pgconn
        try:
            for name, query in (
                (_NEW, CALL_ROWS_NEW),
                (_KNOWN, CALL_ROWS_KNOWN),
                (_RECORD, SAVE_READ_RECORD.replace("?", "%s")),
            ):
                result = pg.prepare(name, _numbered(query))
                if result.status != pq.ExecStatus.COMMAND_OK:
                    raise psycopg.OperationalError(pg.get_error_message())
            pg.nonblocking = 1
            pg.enter_pipeline_mode()
        except psycopg.Error as err:
            conn.close()
            raise StoreUnavailable(f"cannot open the store {backend.describe()}: {err}") from err
        return cls(conn)

    @property
    def owed(self) -> int:
        """Writes sent and not yet answered."""
        return len(self._writes)

    def usable_on(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Whether a write may be sent from ``loop`` (the running loop of this thread),
        binding the writer to it: False when broken, or still owing writes to another loop."""
        if self.broken:
            return False
        if self._loop is loop:
            return True
        if self._writes or (self._loop is not None and self._loop.is_running()):
            return False
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._fd)
            if self._writing:
                self._loop.remove_writer(self._fd)
                self._writing = False
        loop.add_reader(self._fd, self._on_readable)
        self._loop, self._thread = loop, threading.get_ident()
        return True

    def send(
        self,
        calls: Sequence[CallRows],
        channel: str,
        record: tuple[str, str, float] | None,
        done: Done,
    ) -> None:
        """Send one transaction: each call's rows (and NOTIFY), then ``record`` (session
        id, read record JSON, time) when given. ``done`` is called on the loop once
        the server answered. Raises (nothing sent) if a parameter cannot be encoded
        or the connection is broken; call ``usable_on`` first."""
        statements: list[tuple[bytes, list[bytes | None]]] = []
        for rows in calls:
            params = _text(call_rows_params(rows, channel))
            statements.append((_NEW if rows.call is not None else _KNOWN, params))
        if record is not None:
            statements.append((_RECORD, _text(record)))
        pg = self._pg
        try:
            for name, params in statements:
                pg.send_query_prepared(name, params)
            pg.pipeline_sync()
        except psycopg.Error:
            self._break(f"the PostgreSQL store's connection failed: {pg.get_error_message()}")
            raise
        self._writes.append(_Write(len(calls), done))
        self._flush()

    def _flush(self) -> None:
        try:
            pending = self._pg.flush()
        except psycopg.Error as err:
            self._break(f"the PostgreSQL store's connection failed: {err}")
            return
        if pending and not self._writing and self._loop is not None:
            self._loop.add_writer(self._fd, self._on_writable)
            self._writing = True
        elif not pending and self._writing and self._loop is not None:
            self._loop.remove_writer(self._fd)
            self._writing = False

    def _on_writable(self) -> None:
        self._flush()

    def _on_readable(self) -> None:
        """Take in what the server sent; finish every write whose sync came back."""
        pg = self._pg
        try:
            pg.consume_input()
        except psycopg.Error as err:
            self._break(f"the PostgreSQL store's connection failed: {err}")
            return
        while not pg.is_busy():
            result = pg.get_result()
            if result is None:
                if not self._results:
                    break
                self._answered(self._results)
                self._results = []
            elif result.status == pq.ExecStatus.PIPELINE_SYNC:
                self._finish_write()
            else:
                self._results.append(result)

    def _answered(self, results: list[pq.abc.PGresult]) -> None:
        """One statement's results, for the oldest write owed."""
        if not self._writes:
            return
        write = self._writes[0]
        for result in results:
            if result.status == pq.ExecStatus.TUPLES_OK and len(write.ids) < write.calls:
                value = result.get_value(0, 0)
                write.ids.append(int(value) if value is not None else -1)
            elif result.status == pq.ExecStatus.FATAL_ERROR and write.error is None:
                message = result.error_message.decode("utf-8", "replace").strip()
                write.error = message or "a statement failed"

    def _finish_write(self) -> None:
        if not self._writes:
            return
        write = self._writes.popleft()
        if write.error is None and len(write.ids) != write.calls:
            write.error = "the transaction was aborted"
        write.done(None if write.error else write.ids, write.error)

    def _break(self, why: str) -> None:
        """The connection is gone: every owed write is lost, and no later one is sent."""
        self.broken = True
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._fd)
            if self._writing:
                self._loop.remove_writer(self._fd)
        self._writing = False
        owed, self._writes = self._writes, deque()
        for write in owed:
            write.done(None, why)

    def finish(self, timeout_s: float) -> None:
        """Wait (blocking, in the calling thread) for the owed answers, when no loop
        will take them in; after ``timeout_s`` of silence what is still owed is lost."""
        while self._writes and not self.broken:
            self._flush()
            ready, _, _ = select.select([self._fd], [], [], timeout_s)
            if not ready:
                self._break("the PostgreSQL store did not answer in time")
                return
            self._on_readable()

    def bound_loop(self) -> asyncio.AbstractEventLoop:
        """The loop this writer is bound to (after a first ``usable_on``)."""
        assert self._loop is not None
        return self._loop

    def loop_elsewhere(self) -> bool:
        """Whether the loop this writer is bound to runs in another thread (it takes the
        answers in itself); False when none runs, or when this thread is the loop's."""
        loop = self._loop
        return loop is not None and loop.is_running() and self._thread != threading.get_ident()

    def close(self) -> None:
        """Stop watching the socket and close the connection (what is owed is lost)."""
        if self._loop is not None and not self._loop.is_closed() and not self.broken:
            self._loop.remove_reader(self._fd)
            if self._writing:
                self._loop.remove_writer(self._fd)
        self.broken = True
        self._conn.close()
