"""Where a store lives: an SQLite file in a data dir, or a PostgreSQL database.

The store's queries are written once, in the SQL both engines share, with
``?`` placeholders; a ``Backend`` is the whole difference between them: how to
connect, how a write transaction takes its lock, which foreign errors mean
"the session has ended" or "another writer took this position", and how a
committed change is announced to other processes (PostgreSQL's NOTIFY, sent
with the COMMIT; an SQLite store has no other machine to tell).

Pieces:
    Cursor, Conn       the DB-API subset the store uses, met by sqlite3 and the
                       PostgreSQL adapter alike
    StoreUnavailable   the database cannot be reached, opened or migrated (store.errors)
    Conflict           what an integrity error meant: "ended", "taken" or None
    CallRows           one call's rows in a recorder's write (store.postgres.write_calls)
    Backend            one store location: connect(), its dialect, describe()
    SqliteBackend      ``<data_dir>/toolbound.db``
    is_url             does a store location name a PostgreSQL database
    store_location     --store / $TOOLBOUND_STORE / the data dir: where a host records
    open_backend       a store location -> its Backend
    connect_unwaiting  a connection whose writes never wait for a lock (SQLite), or None
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from toolbound.store.db import DB_NAME, connect
from toolbound.store.errors import StoreUnavailable

Conflict = Literal["ended", "taken"] | None

URL_SCHEMES = ("postgresql://", "postgres://")
STORE_ENV = "TOOLBOUND_STORE"


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
    payload announcing them."""

    call_id: int | None
    call: tuple[Any, ...] | None
    payload: str = ""
    events: list[tuple[Any, ...]] = field(default_factory=list)
    ledger: tuple[int, ...] | None = None
    drops: list[tuple[str, int, int]] = field(default_factory=list)


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


class SqliteBackend:
    """``<data_dir>/toolbound.db``: WAL, one writer at a time (``BEGIN IMMEDIATE``)."""

    kind: Literal["sqlite", "postgresql"] = "sqlite"
    begin_write = "BEGIN IMMEDIATE"
    begin_read = "BEGIN"
    concurrent_writers = False
    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)

    def __init__(self, data_dir: Path, *, busy_timeout_s: float) -> None:
        self.data_dir = data_dir
        self.path = data_dir / DB_NAME
        self.busy_timeout_s = busy_timeout_s

    def connect(self) -> Conn:
        """The data dir created (0700) if missing, the database opened and migrated."""
        try:
            self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            conn: Conn = connect(self.path, busy_timeout_s=self.busy_timeout_s)
        except StoreUnavailable:
            raise
        except (sqlite3.Error, OSError) as err:
            raise StoreUnavailable(f"cannot open the store {self.path}: {err}") from err
        return conn

    def begin_session_write(self, conn: Conn, session_id: str) -> None:
        """The database's one write lock orders every writer already."""
        conn.execute(self.begin_write)

    def conflict(self, err: BaseException) -> Conflict:
        if not isinstance(err, sqlite3.IntegrityError):
            return None
        if "session has ended" in str(err):
            return "ended"
        return "taken" if "UNIQUE" in str(err) else None

    def commit_notifying(self, conn: Conn, channel: str, payloads: Sequence[str]) -> None:
        """Commit; there is no one to tell: an SQLite store is read on its own machine."""
        conn.execute("COMMIT")

    def describe(self) -> str:
        return str(self.path)


def is_url(location: str | Path) -> bool:
    """Whether ``location`` is a PostgreSQL URL rather than a data dir."""
    return isinstance(location, str) and location.startswith(URL_SCHEMES)


def store_location(store: str | Path | None, data_dir: Path) -> str | Path:
    """Where a host records: ``store`` if given, else ``$TOOLBOUND_STORE``, else the data dir."""
    return store or os.environ.get(STORE_ENV) or data_dir


def open_backend(location: str | Path, *, busy_timeout_s: float) -> Backend:
    """The backend of a data dir (SQLite) or a ``postgresql://`` URL."""
    if is_url(location):
        # Imported here: a data dir store never loads the PostgreSQL driver.
        from toolbound.store.postgres import PostgresBackend

        return PostgresBackend(str(location), busy_timeout_s=busy_timeout_s)
    return SqliteBackend(Path(location).absolute(), busy_timeout_s=busy_timeout_s)


def connect_unwaiting(backend: Backend) -> Conn | None:
    """A second connection to ``backend`` for short writes on the event loop's
    thread, or None where the engine has none (PostgreSQL: every statement is
    a network round trip).

    It never waits: no busy timeout (a write lock held elsewhere fails the
    write at once, and the caller hands it to its writer thread instead) and
    no automatic checkpoint (the one step of a commit that syncs the disk is
    left to other connections).
    """
    if not isinstance(backend, SqliteBackend):
        return None
    conn = backend.connect()
    try:
        conn.execute("PRAGMA busy_timeout = 0")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
    except sqlite3.Error as err:
        conn.close()
        raise StoreUnavailable(f"cannot open the store {backend.path}: {err}") from err
    return conn
