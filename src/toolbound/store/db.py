"""Opening the SQLite database: WAL, foreign keys, a busy timeout, migrated.

Pieces:
    DB_NAME  the file name inside the data dir
    connect  open (creating if needed, private) and migrate the database
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import stat
from pathlib import Path

from toolbound.store.schema import migrate

DB_NAME = "toolbound.db"


def _make_private(path: Path) -> None:
    """The data dir 0700; the database 0600, created so, and its WAL files 0600.

    SQLite gives the -wal and -shm files the database file's mode, so a
    database created 0600 keeps them private; the chmods fix stores created
    before (0644). No umask change: it is process-wide, and a Bash command
    spawned meanwhile would inherit it.
    """
    _chmod_private(path.parent, 0o700)
    # Created only if missing: closing any descriptor of an open database drops
    # every POSIX lock this process holds on it, and another process's last
    # connection would then delete the WAL under this one's commits.
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    except FileExistsError:
        if path.is_symlink():
            raise OSError(errno.ELOOP, "the database is a symbolic link", str(path)) from None
    for name in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        _chmod_private(name, 0o600)


def _chmod_private(path: Path, mode: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        if stat.S_IMODE(path.stat().st_mode) & 0o077:
            path.chmod(mode)


def connect(path: Path, *, busy_timeout_s: float) -> sqlite3.Connection:
    """Open ``path`` in autocommit mode (transactions are explicit), migrated.

    WAL lets readers run beside one writer; ``synchronous=NORMAL`` in WAL mode
    keeps every committed transaction across a crash of the process (kill -9),
    and may lose the last ones only on power loss. The busy timeout makes a
    second process wait for the write lock instead of failing.
    """
    _make_private(path)
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
