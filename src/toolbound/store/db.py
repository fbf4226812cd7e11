"""Opening the SQLite database: WAL, foreign keys, a busy timeout, migrated.

Pieces:
    DB_NAME  the file name inside the data dir
    connect  open (creating if needed) and migrate the database
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from toolbound.store.schema import migrate

DB_NAME = "toolbound.db"


def connect(path: Path, *, busy_timeout_s: float) -> sqlite3.Connection:
    """Open ``path`` in autocommit mode (transactions are explicit), migrated.

    WAL lets readers run beside one writer; ``synchronous=NORMAL`` in WAL mode
    keeps every committed transaction across a crash of the process (kill -9),
    and may lose the last ones only on power loss. The busy timeout makes a
    second process wait for the write lock instead of failing.
    """
    conn = sqlite3.connect(
        path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn
