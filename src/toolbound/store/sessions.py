"""``SessionStore``: where the sessions live, and their lifecycle.

One SQLite file per data dir (``<data_dir>/toolbound.db``), or one PostgreSQL
database that many hosts share (``SessionStore("postgresql://...")``): the
same queries, the same migrations and the same behaviour (``backend`` holds
the difference). Every write is one transaction holding the lock that orders
writers (SQLite's ``BEGIN IMMEDIATE``, the session's row on PostgreSQL), so
several processes may append to one store (or one session) and lose nothing:
the transcript's state (the next position, the tool calls awaiting results)
is re-read inside the transaction whenever another writer moved it.

A session's transcript is ``transcript``'s, its checkpoints and context
``context``'s, and its recorded calls are written by ``recorder`` and read
back by ``replay``; the store opens their transactions.

Pieces:
    SessionInfo   a session's row and counts
    PruneReport   what store.prune removed
    SessionStore  the store: session(), get(), end(), list(), prune(); events(), recorder();
                  note_origin(), summaries(), call_profiles() (the web view's, ``summaries``)
"""

from __future__ import annotations

import builtins
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from toolbound.fit import Fit
from toolbound.limits import DEFAULT_LIMITS, Limits, ProfileName
from toolbound.paths import default_data_dir
from toolbound.scratch import Scratch, SessionIdError, check_session_id
from toolbound.store.backend import SqliteBackend, open_backend
from toolbound.store.conn import STORE_ENV, Backend, Conn
from toolbound.store.errors import StoreUnavailable
from toolbound.store.recorder import CallRecorder, save_read_record
from toolbound.store.replay import read_dropped, read_events, read_tool_calls
from toolbound.store.summaries import (
    SessionSummary,
    note_origin,
    read_call_fits,
    read_call_profiles,
    read_summaries,
)
from toolbound.store.tokens import Estimator, estimate_tokens
from toolbound.store.transcript import Session, SessionError, SessionInfo


@dataclass(frozen=True, slots=True)
class PruneReport:
    """What ``SessionStore.prune`` removed: rows per table, of how many ended sessions."""

    sessions: int
    tool_calls: int
    tool_events: int
    messages: int

    def to_wire(self) -> dict[str, int]:
        return {
            "sessions": self.sessions,
            "toolCalls": self.tool_calls,
            "toolEvents": self.tool_events,
            "messages": self.messages,
        }


class SessionStore:
    """The session store: ``<data_dir>/toolbound.db``, or a PostgreSQL database.

    ``data_dir`` is a data dir (the SQLite file ``toolbound.db`` in it) or a
    ``postgresql://`` URL (every host of a fleet may share one).
    ``None`` means ``$TOOLBOUND_STORE`` if set, else the default data dir, as
    for ``ToolHost``. ``scratch_dir`` is the data dir whose ``scratch/`` this
    store's ``end`` removes: the data dir itself for a data dir store, else
    the default data dir.

    ``estimator`` (text -> tokens) sizes messages and checkpoints; the default
    is :func:`estimate_tokens`. Safe to share between threads; several
    processes (and, on PostgreSQL, several machines) may open the same store.
    """

    def __init__(
        self,
        data_dir: str | Path | None,
        *,
        limits: Limits = DEFAULT_LIMITS,
        estimator: Estimator = estimate_tokens,
        scratch_dir: str | Path | None = None,
    ) -> None:
        location = data_dir
        if location is None:
            location = os.environ.get(STORE_ENV) or default_data_dir()
        self.limits = limits
        self.estimator = estimator
        self.backend: Backend = open_backend(location, busy_timeout_s=limits.store_busy_timeout_s)
        # The SQLite file's path; None for a PostgreSQL store.
        self.path: Path | None = None
        if isinstance(self.backend, SqliteBackend):
            self.data_dir = self.backend.data_dir
            self.path = self.backend.path
        else:
            self.data_dir = Path(scratch_dir or default_data_dir()).absolute()
        self._conn = self.backend.connect()
        self._lock = threading.RLock()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def describe(self) -> str:
        """Where the store is, for messages: the database file, or the URL without password."""
        return self.backend.describe()

    @contextmanager
    def _failing_as_unavailable(self) -> Iterator[None]:
        """The driver's errors met in a transaction, as the store's one error."""
        try:
            yield
        except self.backend.errors as err:
            raise StoreUnavailable(f"the store {self.describe()} failed: {err}") from err

    @contextmanager
    def _write(self, session_id: str | None = None) -> Iterator[Conn]:
        """One write transaction, holding the lock that orders writers from its start.

        ``session_id``: a write that reads the session's state first (append,
        checkpoint), ordered with the session's other writers.
        """
        with self._lock, self._failing_as_unavailable():
            if session_id is None:
                self._conn.execute(self.backend.begin_write)
            else:
                self.backend.begin_session_write(self._conn, session_id)
            try:
                yield self._conn
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[Conn]:
        """One read transaction: a consistent snapshot across its queries."""
        with self._lock, self._failing_as_unavailable():
            self._conn.execute(self.backend.begin_read)
            try:
                yield self._conn
            finally:
                if self._conn.in_transaction:
                    self._conn.execute("COMMIT")

    def session(self, session_id: str) -> Session:
        """The session ``session_id``, created if it does not exist yet."""
        sid = _checked_id(session_id)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO sessions (id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (sid, time.time()),
            )
        return Session(self, sid)

    def get(self, session_id: str) -> Session | None:
        """The session ``session_id`` if it exists (never creates one)."""
        sid = _checked_id(session_id)
        with self._read() as conn:
            found = conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone()
        return None if found is None else Session(self, sid)

    def info(self, session_id: str) -> SessionInfo:
        """The session's row and counts; SessionError if it does not exist."""
        infos = self._infos("WHERE s.id = ?", (session_id,))
        if not infos:
            raise SessionError(f"session {session_id!r} does not exist")
        return infos[0]

    def list(self) -> builtins.list[SessionInfo]:
        """Every session, oldest first."""
        return self._infos("", ())

    def _infos(self, where: str, params: tuple[Any, ...]) -> builtins.list[SessionInfo]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT s.id, s.created_at, s.ended_at,"
                " (SELECT count(*) FROM messages m WHERE m.session_id = s.id),"
                " (SELECT count(*) FROM checkpoints c WHERE c.session_id = s.id),"
                " (SELECT count(*) FROM tool_calls t WHERE t.session_id = s.id)"
                f" FROM sessions s {where} ORDER BY s.created_at, s.id",
                params,
            ).fetchall()
        return [SessionInfo(*row) for row in rows]

    def note_origin(self, session_id: str, *, workspace: str, host: str) -> None:
        """Record where the session runs: its workspace and machine (``store.summaries``).

        Creates the session if it does not exist yet.
        """
        sid = _checked_id(session_id)
        with self._write() as conn:
            note_origin(conn, sid, workspace=workspace, host=host)

    def summaries(self, *, session_id: str | None = None) -> builtins.list[SessionSummary]:
        """Every session (or only ``session_id``) as the web view lists it, newest first."""
        with self._read() as conn:
            return read_summaries(conn, session_id)

    def call_fits(self, session_id: str) -> dict[str, Fit]:
        """The client and per-result cap each of the session's calls was sent with."""
        with self._read() as conn:
            return read_call_fits(conn, session_id)

    def call_profiles(self, session_id: str) -> dict[str, ProfileName]:
        """The profile each of the session's calls was rendered for (``store.summaries``)."""
        with self._read() as conn:
            return read_call_profiles(conn, session_id)

    def end(self, session_id: str) -> SessionInfo:
        """End the session (it takes no more messages) and remove its scratch dir.

        Ending an ended session again only removes the scratch dir again.
        """
        sid = _checked_id(session_id)
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET ended_at = coalesce(ended_at, ?) WHERE id = ?",
                (time.time(), sid),
            )
            if cur.rowcount == 0:
                raise SessionError(f"session {sid!r} does not exist")
        Scratch(self.data_dir, sid).remove()
        return self.info(sid)

    def is_ended(self, session_id: str) -> bool:
        """Whether the session exists and has ended (the scratch sweep asks this)."""
        with self._read() as conn:
            row = conn.execute("SELECT ended_at FROM sessions WHERE id = ?", (session_id,))
            found = row.fetchone()
        return found is not None and found[0] is not None

    def checkpoint_count(self, session_id: str) -> int:
        """How many checkpoints the session has (0 for an unknown one): one indexed count,
        cheap enough for every economy Read to ask."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT count(*) FROM checkpoints WHERE session_id = ?", (session_id,)
            ).fetchone()
        return int(row[0])

    def tool_calls(self, session_id: str) -> builtins.list[dict[str, Any]]:
        """The session's recorded tool calls, oldest first: id, tool, args, result."""
        with self._read() as conn:
            return read_tool_calls(conn, session_id)

    def events(
        self, tool_call_id: str, *, session_id: str | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Replay a recorded call's events exactly as they were streamed.

        Chunk events, then the result event, each with its original ``seq``.
        When an id was used more than once (within ``session_id`` if given),
        the latest call with it is replayed; an unknown id gives ``[]``.
        """
        return self.events_after(tool_call_id, -1, session_id=session_id)

    def events_after(
        self, tool_call_id: str, after: int, *, session_id: str | None = None
    ) -> builtins.list[dict[str, Any]]:
        """The recorded call's events with ``seq > after``, in seq order (see ``events``)."""
        with self._read() as conn:
            return read_events(conn, tool_call_id, after, session_id)

    def recorder(self, session_id: str) -> CallRecorder:
        """A recorder writing ``session_id``'s tool calls from a background thread.

        Raises StoreUnavailable when the session cannot be written.
        """
        sid = self.session(session_id).id
        return CallRecorder(self.backend, sid, limits=self.limits)

    def dropped(
        self, tool_call_id: str, *, session_id: str | None = None
    ) -> dict[str, dict[str, int]]:
        """What a recorded call's stored events left out, per stream: ``{"chunks", "bytes"}``.

        A call stores its chunks up to the capture ceiling of each stream
        (``limits.capture_max_bytes`` / ``capture_max_lines``), as the live
        stream of a Bash call stops there; the chunks past it (a long
        background job's) are counted here instead, and their ``seq``
        values are absent from the replay. ``{}`` when nothing was dropped.
        """
        with self._read() as conn:
            return read_dropped(conn, tool_call_id, session_id)

    def read_record(self, session_id: str) -> str | None:
        """The session's saved read record (``ReadRecord.to_json``), or None."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT record FROM read_records WHERE session_id = ?", (session_id,)
            ).fetchone()
        return None if row is None else str(row[0])

    def save_read_record(self, session_id: str, record: str) -> None:
        """Replace the session's saved read record (the session must exist)."""
        with self._write() as conn:
            save_read_record(conn, session_id, record)

    def prune(
        self, *, ended_before: float | datetime | timedelta, transcripts: bool = False
    ) -> PruneReport:
        """Remove the recorded tool calls and events of sessions that ended before a time.

        ``ended_before`` is a POSIX timestamp, a datetime, or a timedelta
        (sessions that ended longer ago than that). Open
        sessions are never touched (their rows stay append-only: the
        database's triggers refuse it). The transcript, tool_use ids and
        checkpoints of the pruned sessions stay unless ``transcripts`` is
        true; the session rows always stay, ended.
        """
        if isinstance(ended_before, timedelta):
            cutoff = time.time() - ended_before.total_seconds()
        elif isinstance(ended_before, datetime):
            cutoff = ended_before.timestamp()
        else:
            cutoff = float(ended_before)
        ended = "SELECT id FROM sessions WHERE ended_at IS NOT NULL AND ended_at < ?"
        calls = f"SELECT id FROM tool_calls WHERE session_id IN ({ended})"
        with self._write() as conn:
            sessions = len(conn.execute(ended, (cutoff,)).fetchall())
            events = conn.execute(
                f"DELETE FROM tool_events WHERE call_id IN ({calls})", (cutoff,)
            ).rowcount
            for table in ("tool_call_drops", "tool_call_ledger"):
                conn.execute(f"DELETE FROM {table} WHERE call_id IN ({calls})", (cutoff,))
            conn.execute(f"DELETE FROM read_records WHERE session_id IN ({ended})", (cutoff,))
            tool_calls = conn.execute(
                f"DELETE FROM tool_calls WHERE session_id IN ({ended})", (cutoff,)
            ).rowcount
            messages = 0
            if transcripts:
                for table in ("tool_uses", "checkpoints"):
                    conn.execute(f"DELETE FROM {table} WHERE session_id IN ({ended})", (cutoff,))
                messages = conn.execute(
                    f"DELETE FROM messages WHERE session_id IN ({ended})", (cutoff,)
                ).rowcount
        return PruneReport(
            sessions=sessions, tool_calls=tool_calls, tool_events=events, messages=messages
        )


def _checked_id(session_id: str) -> str:
    try:
        return check_session_id(session_id)
    except SessionIdError as err:
        raise SessionError(str(err)) from None
