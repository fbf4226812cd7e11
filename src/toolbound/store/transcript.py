"""The transcript of one session: appending a checked message, reading it back.

A message is judged (``messages.check_message``) against the transcript's
state, the next position and the tool calls awaiting results, cached in the
``Session`` and re-read inside the write transaction whenever another writer
moved it on. Checkpoints and the context are ``context``'s; ``Session``
opens their transactions.

Pieces:
    SessionInfo   a session's row and counts
    StoreAccess   what a Session needs of its store (sessions.SessionStore meets it)
    SessionError  an unknown or ended session (a ValueError)
    Session       append, transcript; checkpoint, checkpoints, last_summary, context; ledger
"""

from __future__ import annotations

import json
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from toolbound.limits import Limits
from toolbound.store.conn import Backend, Conn
from toolbound.store.context import (
    CheckpointRecord,
    ContextTally,
    Provider,
    read_checkpoints,
    read_context,
    read_last_summary,
    tally_context,
    write_checkpoint,
)
from toolbound.store.ledger import read_ledger
from toolbound.store.messages import TranscriptError, check_message, dumps, to_openai
from toolbound.store.tokens import Estimator, message_tokens


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


class StoreAccess(Protocol):
    """What a ``Session`` needs of its store (``sessions.SessionStore`` meets it):
    its transactions, its backend, limits and estimator, and a session's row."""

    backend: Backend
    limits: Limits
    estimator: Estimator

    def _write(self, session_id: str | None = None) -> AbstractContextManager[Conn]:
        """One write transaction; with ``session_id``, ordered among that session's writers."""
        ...

    def _read(self) -> AbstractContextManager[Conn]:
        """One read transaction: a consistent snapshot across its queries."""
        ...

    def info(self, session_id: str) -> SessionInfo:
        """The session's row and counts; SessionError if it does not exist."""
        ...


class SessionError(ValueError):
    """The session does not exist, or has ended and takes no more messages."""


class _StaleState(Exception):
    """Another writer appended since this session object last looked."""


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

    def __init__(self, store: StoreAccess, session_id: str) -> None:
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
            body = dumps(message)
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
        with self._store._write(self.id) as conn:
            next_seq, pending, _ended = self._state(conn)
            return write_checkpoint(
                conn,
                self.id,
                through=next_seq - 1 - (1 if pending else 0),
                summary=summary,
                limits=self._store.limits,
                estimator=self._store.estimator,
            )

    def checkpoints(self) -> list[CheckpointRecord]:
        """Every checkpoint of the session, oldest first."""
        with self._store._read() as conn:
            return read_checkpoints(conn, self.id)

    def last_summary(self) -> str | None:
        """The latest checkpoint's summary, to build the next one on; None before any."""
        with self._store._read() as conn:
            return read_last_summary(conn, self.id)

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
            messages = read_context(conn, self.id)
        return to_openai(messages) if provider == "openai" else messages

    def context_tally(
        self, estimator: Estimator, known: ContextTally | None = None
    ) -> ContextTally:
        """The context's estimated tokens (``context()``'s messages, by ``estimator``),
        reading only the messages appended since ``known``, a tally of this
        session by the same estimator, while no checkpoint came in between."""
        with self._store._read() as conn:
            return tally_context(conn, self.id, estimator, known)

    def transcript(self) -> list[dict[str, Any]]:
        """Every message as it was appended, in order; checkpoints never change it."""
        with self._store._read() as conn:
            rows = conn.execute(
                "SELECT body FROM messages WHERE session_id = ? ORDER BY seq", (self.id,)
            ).fetchall()
        return [json.loads(body) for (body,) in rows]

    def ledger(self) -> dict[str, Any]:
        """Where the session's context went: its recorded calls' figures (``store.ledger``).

        ``{"sessionId", "calls", "tools", "total"}``: each call with a recorded
        result, oldest first, with ``toolCallId``, ``tool``, ``at`` (its start,
        ISO 8601 UTC), ``modelTokens``, ``modelBytes``, ``elidedBytes``,
        ``spilledBytes``, ``rereadAvoided`` and ``runningTokens`` (the model
        tokens up to and including it); per tool and in all, ``calls``, the
        four figures and ``rereadsAvoided``.
        """
        with self._store._read() as conn:
            return read_ledger(conn, self.id)

    def info(self) -> SessionInfo:
        return self._store.info(self.id)
