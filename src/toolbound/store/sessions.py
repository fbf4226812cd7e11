"""``SessionStore`` and ``Session``: the transcript, checkpoints and recorded calls.

One SQLite file per data dir (``<data_dir>/toolbound.db``), or one PostgreSQL
database that many hosts share (``SessionStore("postgresql://...")``): the
same queries, the same migrations and the same behaviour (``backend`` holds
the difference). Every write is one transaction holding the lock that orders
writers (SQLite's ``BEGIN IMMEDIATE``, the session's row on PostgreSQL), so
several processes may append to one store (or one session) and lose nothing:
the transcript's state (the next position, the tool calls awaiting results)
is re-read inside the transaction whenever another writer moved it.

Pieces:
    SessionError      an unknown or ended session (a ValueError)
    SessionInfo       a session's row and counts
    CheckpointRecord  one checkpoint: summary, what it retained, its estimates
    PruneReport       what store.prune removed
    Session           append, checkpoint, context, transcript of one session
    SessionStore      the store: session(), end(), list(), events(), prune(), recorder()
"""

from __future__ import annotations

import builtins
import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from toolbound.limits import DEFAULT_LIMITS, Limits
from toolbound.paths import default_data_dir
from toolbound.scratch import Scratch, SessionIdError, check_session_id
from toolbound.store.backend import STORE_ENV, Backend, Conn, SqliteBackend, open_backend
from toolbound.store.checkpoint import plan_retention
from toolbound.store.errors import StoreUnavailable
from toolbound.store.messages import TranscriptError, check_message, to_openai
from toolbound.store.recorder import CallRecorder
from toolbound.store.tokens import Estimator, estimate_tokens, message_tokens

Provider = Literal["anthropic", "openai"]


class SessionError(ValueError):
    """The session does not exist, or has ended and takes no more messages."""


class _StaleState(Exception):
    """Another writer appended since this session object last looked."""


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    created_at: float
    ended_at: float | None
    messages: int
    checkpoints: int
    tool_calls: int

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "createdAt": self.created_at,
            "endedAt": self.ended_at,
            "messages": self.messages,
            "checkpoints": self.checkpoints,
            "toolCalls": self.tool_calls,
        }


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    """A checkpoint: it covers messages ``0..through_seq`` of the transcript.

    ``retained`` are the user messages it keeps (oldest first, tool results
    removed, the one at ``cut_seq`` cut around the marker); ``retained_tokens``
    is their re-estimated size (within the retention limit) and
    ``context_tokens`` the estimate of the whole context when it was taken.
    """

    id: int
    session_id: str
    through_seq: int
    summary: str
    retained: tuple[dict[str, Any], ...]
    retained_seqs: tuple[int, ...]
    cut_seq: int | None
    retained_tokens: int
    context_tokens: int
    created_at: float

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "sessionId": self.session_id,
            "throughSeq": self.through_seq,
            "summary": self.summary,
            "retained": list(self.retained),
            "retainedSeqs": list(self.retained_seqs),
            "cutSeq": self.cut_seq,
            "retainedTokens": self.retained_tokens,
            "contextTokens": self.context_tokens,
            "createdAt": self.created_at,
        }


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


_CHECKPOINT_COLUMNS = (
    "id, session_id, through_seq, summary, retained, retained_seqs, cut_seq,"
    " retained_tokens, context_tokens, created_at"
)


def _checkpoint_from_row(row: tuple[Any, ...]) -> CheckpointRecord:
    return CheckpointRecord(
        id=row[0],
        session_id=row[1],
        through_seq=row[2],
        summary=row[3],
        retained=tuple(json.loads(row[4])),
        retained_seqs=tuple(json.loads(row[5])),
        cut_seq=row[6],
        retained_tokens=row[7],
        context_tokens=row[8],
        created_at=row[9],
    )


# One encoder for every row: json.dumps would build a new one per call for these options.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _dumps(value: object) -> str:
    return _ENCODER.encode(value)


def _pending_after(kind: str, body: str) -> frozenset[str]:
    """The tool_use ids awaiting results after a message (only an assistant opens any)."""
    if kind != "assistant":
        return frozenset()
    content = json.loads(body)["content"]
    if isinstance(content, str):
        return frozenset()
    return frozenset(b["id"] for b in content if b["type"] == "tool_use")


class Session:
    """One session's transcript. Obtain it from :meth:`SessionStore.session`."""

    def __init__(self, store: SessionStore, session_id: str) -> None:
        self._store = store
        self.id = session_id
        # (next seq, pending tool_use ids) as last seen; re-read when stale.
        self._next = -1
        self._pending: frozenset[str] = frozenset()

    def _state(self, conn: Conn) -> tuple[int, frozenset[str], bool]:
        """The next seq, the pending tool_use ids and whether the session ended.

        Inside a write (``_store._write(self.id)``) it reads what the writer
        that held the lock before committed.
        """
        row = conn.execute(
            "SELECT (SELECT max(seq) FROM messages WHERE session_id = ?), ended_at"
            " FROM sessions WHERE id = ?",
            (self.id, self.id),
        ).fetchone()
        if row is None:
            raise SessionError(f"session {self.id!r} does not exist")
        last, ended_at = row
        next_seq = 0 if last is None else last + 1
        if next_seq != self._next:
            pending: frozenset[str] = frozenset()
            if last is not None:
                kind, body = conn.execute(
                    "SELECT kind, body FROM messages WHERE session_id = ? AND seq = ?",
                    (self.id, last),
                ).fetchone()
                pending = _pending_after(kind, body)
            self._next, self._pending = next_seq, pending
        return self._next, self._pending, ended_at is not None

    def append(self, message: dict[str, Any]) -> int:
        """Append one Anthropic-shaped message; return its position (0-based).

        The message is stored exactly as given, every block and key of it
        (``toolbound.store.messages``). Raises :class:`TranscriptError` (a
        ValueError naming the message and block) when its roles or its tool
        pairing would make the transcript invalid for the provider APIs, and
        :class:`SessionError` when the session has ended. Nothing is written
        then.
        """
        with self._store._write(self.id) as conn:
            if self._next < 0 or self._store.backend.concurrent_writers:
                self._state(conn)
            try:
                return self._insert(conn, message)
            except (TranscriptError, _StaleState):
                # Judged against a state another process may have moved on: re-read it
                # (this transaction holds the write lock now) and judge again.
                self._next = -1
                self._state(conn)
                return self._insert(conn, message)

    def _insert(self, conn: Conn, message: dict[str, Any]) -> int:
        """Check and insert ``message`` at the cached next position.

        The primary key (session_id, seq) is what detects a stale cache: a
        writer that appended meanwhile holds that position.
        """
        seq = self._next
        checked = check_message(seq, message, self._pending)
        try:
            body = _dumps(message)
        except (TypeError, ValueError) as err:
            raise TranscriptError(seq, None, "", f"not JSON-serialisable ({err})") from None
        self._refuse_reused_ids(conn, seq, message, checked.tool_use_ids)
        try:
            conn.execute(
                "INSERT INTO messages (session_id, seq, kind, body, tokens, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    self.id,
                    seq,
                    checked.kind,
                    body,
                    message_tokens(message, self._store.estimator),
                    time.time(),
                ),
            )
        except self._store.backend.errors as err:
            conflict = self._store.backend.conflict(err)
            if conflict == "ended":
                raise SessionError(
                    f"session {self.id!r} has ended; it takes no more messages"
                ) from None
            if conflict == "taken":
                raise _StaleState from None
            raise
        if checked.tool_use_ids:
            conn.executemany(
                "INSERT INTO tool_uses (session_id, tool_use_id, seq) VALUES (?, ?, ?)",
                [(self.id, use_id, seq) for use_id in checked.tool_use_ids],
            )
        self._next, self._pending = seq + 1, checked.pending
        return seq

    def _refuse_reused_ids(
        self, conn: Conn, seq: int, message: dict[str, Any], ids: tuple[str, ...]
    ) -> None:
        """A tool_use id is used once per session: the provider pairs results by it."""
        for use_id in ids:
            used = conn.execute(
                "SELECT seq FROM tool_uses WHERE session_id = ? AND tool_use_id = ?",
                (self.id, use_id),
            ).fetchone()
            if used is not None:
                block = next(
                    i
                    for i, b in enumerate(message["content"])
                    if b["type"] == "tool_use" and b["id"] == use_id
                )
                raise TranscriptError(
                    seq,
                    block,
                    "tool_use",
                    f"duplicated id {use_id!r}: message {used[0]} already used it",
                )

    def checkpoint(self, *, summary: str) -> CheckpointRecord:
        """Compact the transcript so far into a checkpoint (D203) and persist it.

        ``context()`` then uses this checkpoint alone: the previous
        checkpoint's summary is not carried over. For a cumulative summary,
        give the summariser :meth:`last_summary` (the previous summary's
        text) with the messages after it, and pass what it writes here.

        It covers every message up to the last one that leaves no tool call
        awaiting its result (an assistant message still waiting for results
        stays after it). It retains user-authored messages only, newest first,
        within ``limits.checkpoint_retained_tokens``; the one that crosses the
        limit keeps a ``checkpoint_head_share`` head/tail share of its text
        around the checkpoint marker, and older ones are dropped. The retained
        part is re-estimated before it is written; the transcript rows are
        never touched.
        """
        if not isinstance(summary, str) or not summary.strip():
            raise ValueError("a checkpoint needs a non-blank summary")
        limits, estimator = self._store.limits, self._store.estimator
        with self._store._write(self.id) as conn:
            next_seq, pending, _ended = self._state(conn)
            through = next_seq - 1 - (1 if pending else 0)
            rows = conn.execute(
                "SELECT seq, body FROM messages WHERE session_id = ? AND kind = 'user'"
                " AND seq <= ? ORDER BY seq DESC",
                (self.id, through),
            )
            retention = plan_retention(
                ((seq, json.loads(body)) for seq, body in rows),
                budget_tokens=limits.checkpoint_retained_tokens,
                head_share=limits.checkpoint_head_share,
                estimator=estimator,
            )
            rows.close()
            # Re-estimate what will actually go into the context before persisting it.
            retained_tokens = sum(message_tokens(m, estimator) for m in retention.messages)
            if retained_tokens > limits.checkpoint_retained_tokens:
                raise RuntimeError(
                    "checkpoint retention exceeded its budget; estimator not monotone"
                )
            # The whole resulting context, under this store's estimator.
            tail = conn.execute(
                "SELECT body FROM messages WHERE session_id = ? AND seq > ?", (self.id, through)
            ).fetchall()
            context_tokens = retained_tokens + sum(
                message_tokens(m, estimator)
                for m in [{"role": "user", "content": summary}]
                + [json.loads(body) for (body,) in tail]
            )
            now = time.time()
            cur = conn.execute(
                "INSERT INTO checkpoints (session_id, through_seq, summary, retained,"
                " retained_seqs, cut_seq, retained_tokens, context_tokens, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    self.id,
                    through,
                    summary,
                    _dumps(list(retention.messages)),
                    _dumps(list(retention.seqs)),
                    retention.cut_seq,
                    retained_tokens,
                    context_tokens,
                    now,
                ),
            )
            (checkpoint_id,) = cur.fetchone()
        return CheckpointRecord(
            id=checkpoint_id,
            session_id=self.id,
            through_seq=through,
            summary=summary,
            retained=retention.messages,
            retained_seqs=retention.seqs,
            cut_seq=retention.cut_seq,
            retained_tokens=retained_tokens,
            context_tokens=context_tokens,
            created_at=now,
        )

    def checkpoints(self) -> list[CheckpointRecord]:
        """Every checkpoint of the session, oldest first."""
        with self._store._read() as conn:
            rows = conn.execute(
                f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE session_id = ? ORDER BY id",
                (self.id,),
            ).fetchall()
        return [_checkpoint_from_row(r) for r in rows]

    def last_summary(self) -> str | None:
        """The latest checkpoint's summary, to build the next one on; None before any."""
        with self._store._read() as conn:
            row = conn.execute(
                "SELECT summary FROM checkpoints WHERE session_id = ? ORDER BY id DESC LIMIT 1",
                (self.id,),
            ).fetchone()
        return None if row is None else str(row[0])

    def context(self, provider: Provider = "anthropic") -> list[dict[str, Any]]:
        """The messages to send the model.

        Without a checkpoint, the transcript. After one: its retained user
        messages (oldest first), the summary as one user message, then every
        message appended after the checkpoint. ``provider="openai"`` renders
        the same context as Chat Completions messages.
        """
        if provider not in ("anthropic", "openai"):
            raise ValueError(f"provider must be 'anthropic' or 'openai', not {provider!r}")
        with self._store._read() as conn:
            row = conn.execute(
                f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE session_id = ?"
                " ORDER BY id DESC LIMIT 1",
                (self.id,),
            ).fetchone()
            head: list[dict[str, Any]] = []
            through = -1
            if row is not None:
                record = _checkpoint_from_row(row)
                head = [*record.retained, {"role": "user", "content": record.summary}]
                through = record.through_seq
            tail = conn.execute(
                "SELECT body FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq",
                (self.id, through),
            ).fetchall()
        messages = head + [json.loads(body) for (body,) in tail]
        return to_openai(messages) if provider == "openai" else messages

    def transcript(self) -> list[dict[str, Any]]:
        """Every message as it was appended, in order; checkpoints never change it."""
        with self._store._read() as conn:
            rows = conn.execute(
                "SELECT body FROM messages WHERE session_id = ? ORDER BY seq", (self.id,)
            ).fetchall()
        return [json.loads(body) for (body,) in rows]

    def info(self) -> SessionInfo:
        return self._store.info(self.id)


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
    def _write(self, session_id: str | None = None) -> Iterator[Conn]:
        """One write transaction, holding the lock that orders writers from its start.

        ``session_id``: a write that reads the session's state first (append,
        checkpoint), ordered with the session's other writers.
        """
        with self._lock:
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
        with self._lock:
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

    def tool_calls(self, session_id: str) -> builtins.list[dict[str, Any]]:
        """The session's recorded tool calls, oldest first: id, tool, args, result."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT c.tool_call_id, c.tool, c.args, c.started_at,"
                " (SELECT e.result FROM tool_events e WHERE e.call_id = c.id AND e.type = 'result')"
                " FROM tool_calls c WHERE c.session_id = ? ORDER BY c.id",
                (session_id,),
            ).fetchall()
        return [
            {
                "toolCallId": call_id,
                "tool": tool,
                "args": json.loads(args),
                "startedAt": started,
                "result": None if result is None else json.loads(result),
            }
            for call_id, tool, args, started, result in rows
        ]

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
            call = self._latest_call(conn, tool_call_id, session_id)
            if call is None:
                return []
            rows = conn.execute(
                "SELECT seq, type, stream, data, result FROM tool_events"
                " WHERE call_id = ? AND seq > ? ORDER BY seq",
                (call, after),
            ).fetchall()
        return [_event_wire(tool_call_id, *row) for row in rows]

    @staticmethod
    def _latest_call(conn: Conn, tool_call_id: str, session_id: str | None) -> int | None:
        """The row id of the latest call with this id (within ``session_id`` if given)."""
        where = "tool_call_id = ?" + ("" if session_id is None else " AND session_id = ?")
        params: tuple[str, ...] = (
            (tool_call_id,) if session_id is None else (tool_call_id, session_id)
        )
        row = conn.execute(
            f"SELECT id FROM tool_calls WHERE {where} ORDER BY id DESC LIMIT 1", params
        ).fetchone()
        return None if row is None else int(row[0])

    def recorder(self, session_id: str) -> CallRecorder:
        """A recorder writing ``session_id``'s tool calls from a background thread.

        Raises StoreUnavailable when the session cannot be written.
        """
        try:
            sid = self.session(session_id).id
        except self.backend.errors as err:
            raise StoreUnavailable(
                f"cannot record in the store {self.backend.describe()}: {err}"
            ) from err
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
            call = self._latest_call(conn, tool_call_id, session_id)
            if call is None:
                return {}
            rows = conn.execute(
                "SELECT stream, chunks, bytes FROM tool_call_drops WHERE call_id = ?"
                " ORDER BY stream",
                (call,),
            ).fetchall()
        return {stream: {"chunks": chunks, "bytes": size} for stream, chunks, size in rows}

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
            conn.execute(f"DELETE FROM tool_call_drops WHERE call_id IN ({calls})", (cutoff,))
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


def _event_wire(
    tool_call_id: str, seq: int, kind: str, stream: str | None, data: str | None, result: str | None
) -> dict[str, Any]:
    if kind == "chunk":
        return {
            "type": "chunk",
            "toolCallId": tool_call_id,
            "stream": stream,
            "seq": seq,
            "data": data,
        }
    return {
        "type": "result",
        "toolCallId": tool_call_id,
        "seq": seq,
        "result": json.loads(result or "null"),
    }


def _checked_id(session_id: str) -> str:
    try:
        return check_session_id(session_id)
    except SessionIdError as err:
        raise SessionError(str(err)) from None
