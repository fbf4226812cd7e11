"""Where a store lives: an SQLite file in a data dir, or a PostgreSQL database.

The store's queries are written once, in the SQL both engines share, with
``?`` placeholders; a ``Backend`` is the whole difference between them: how to
connect, how a write transaction takes its lock, which foreign errors mean
"the session has ended" or "another writer took this position", and how a
committed change is announced to other processes (PostgreSQL's NOTIFY, sent
with the COMMIT; an SQLite store has no other machine to tell).

Pieces:
    (Cursor, Conn, Conflict, CallRows, Backend: the protocols, in store.conn)
    SqliteBackend      ``<data_dir>/toolbound.db``
    is_url             does a store location name a PostgreSQL database
    store_location     --store / $TOOLBOUND_STORE / the data dir: where a host records
    open_backend       a store location -> its Backend
    connect_unwaiting  a connection whose writes never wait for a lock (SQLite), or None
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from toolbound.store.conn import STORE_ENV, URL_SCHEMES, Backend, Conflict, Conn
from toolbound.store.db import DB_NAME, connect
from toolbound.store.errors import StoreUnavailable


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
