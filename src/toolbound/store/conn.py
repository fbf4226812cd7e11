"""The store's connection protocols and names, shared by both engines: a leaf.

Every store module speaks to a database through these protocols; the SQLite
backend (``store.backend``) and the PostgreSQL one (``store.postgres``) meet
them. Kept apart from both so that neither engine, nor the recorder, imports
the other to learn a type or a constant.

Pieces:
    Cursor, Conn       the DB-API subset the store uses, met by sqlite3 and the
                       PostgreSQL adapter alike
    Conflict           what an integrity error meant: "ended", "taken" or None
    CallRows           one call's rows in a recorder's write (store.postgres.write_calls)
    Backend            one store location: connect(), its dialect, describe()
    URL_SCHEMES        the prefixes that name a PostgreSQL database
    STORE_ENV          the environment variable naming the store
    CHANNEL            the NOTIFY channel of recorded tool events
    SAVE_READ_RECORD   the upsert of a session's read record
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Conflict = Literal["ended", "taken"] | None

URL_SCHEMES = ("postgresql://", "postgres://")
STORE_ENV = "TOOLBOUND_STORE"
# Recorded tool events are announced on this channel (PostgreSQL NOTIFY).
CHANNEL = "toolbound_events"
# Replace a session's saved read record (session id, its JSON, the time): the
# recorder's upsert, on either engine's connection or prepared by the PostgreSQL
# loop writer (store.pg_loop).
SAVE_READ_RECORD = (
    "INSERT INTO read_records (session_id, record, updated_at) VALUES (?, ?, ?)"
    " ON CONFLICT (session_id) DO UPDATE"
    " SET record = excluded.record, updated_at = excluded.updated_at"
)


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...

    def close(self) -> None: ...


class Conn(Protocol):
    """A connection in autocommit mode: transactions are explicit BEGIN/COMMIT."""

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Cursor: ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]], /) -> Any: ...

    @property
    def in_transaction(self) -> bool: ...

    def close(self) -> None: ...


@dataclass(eq=False)
class CallRows:
    """One call's rows in one write of a recorder: its start (``call``, when its
    row is new) or its known ``call_id``, then its events
    ``(seq, type, stream, data, result, created_at)``, its ledger row's columns
    after ``call_id``, its drops ``(stream, chunks, bytes)``, and the NOTIFY
    payload announcing them: the session, the call and its last ``seq`` written
    (-1: its start), encoded once, when the write is sent."""

    call_id: int | None
    call: tuple[Any, ...] | None
    session_id: str = ""
    tool_call_id: str = ""
    seq: int = -1
    events: list[tuple[Any, ...]] = field(default_factory=list)
    ledger: tuple[int, ...] | None = None
    drops: list[tuple[str, int, int]] = field(default_factory=list)

    @property
    def payload(self) -> str:
        return json.dumps({"session": self.session_id, "call": self.tool_call_id, "seq": self.seq})


class Backend(Protocol):
    """One store location and the dialect of its engine."""

    kind: Literal["sqlite", "postgresql"]
    # Starts a write transaction holding the lock that orders writers.
    begin_write: str
    # Starts a read transaction that sees one snapshot across its queries.
    begin_read: str
    # Whether writers run side by side (each write to a session then locks its
    # row, and a session's cached state is re-read under that lock).
    concurrent_writers: bool
    # The foreign errors of this engine's driver, mapped at the store's boundary.
    errors: tuple[type[BaseException], ...]

    def connect(self) -> Conn:
        """A new connection to the migrated database (StoreUnavailable if it cannot)."""
        ...

    def begin_session_write(self, conn: Conn, session_id: str) -> None:
        """Start a write transaction that orders the writers of one session."""
        ...

    def conflict(self, err: BaseException) -> Conflict:
        """What an error raised by a write means for the store, if it is one it knows."""
        ...

    def commit_notifying(self, conn: Conn, channel: str, payloads: Sequence[str]) -> None:
        """Commit the current transaction, announcing ``payloads`` on ``channel`` with it."""
        ...

    def describe(self) -> str:
        """The location for messages: a path, or a URL without its password."""
        ...
