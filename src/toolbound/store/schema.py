"""The store's schema: ordered, named migrations, never edited once released.

A change to the schema is a new entry at the end of ``MIGRATIONS``; an applied
migration is recorded in ``schema_migrations`` with its name, and a database
whose record disagrees with this list (an edited or unknown migration) is
refused rather than guessed at.

Pieces:
    Migration         one numbered, named step of SQL
    MIGRATIONS        every step, in order
    SchemaError       the database does not match this code's migrations
    migrate           apply the missing steps in one transaction
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


_APPEND_ONLY = """
CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table}
BEGIN SELECT RAISE(ABORT, '{table} are append-only: rows are never updated'); END;
CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table}
BEGIN SELECT RAISE(ABORT, '{table} are append-only: rows are never deleted'); END;
"""

_INITIAL = """
CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    ended_at   REAL
);

-- The transcript: one row per appended message, its JSON exactly as appended.
-- kind: 'user' (user-authored), 'results' (user, only tool results), 'assistant'.
CREATE TABLE messages (
    session_id TEXT    NOT NULL REFERENCES sessions(id),
    seq        INTEGER NOT NULL CHECK (seq >= 0),
    kind       TEXT    NOT NULL CHECK (kind IN ('user', 'results', 'assistant')),
    body       TEXT    NOT NULL,
    tokens     INTEGER NOT NULL,
    created_at REAL    NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE INDEX messages_user_authored ON messages (session_id, seq) WHERE kind = 'user';
CREATE TRIGGER messages_session_open BEFORE INSERT ON messages
WHEN (SELECT ended_at FROM sessions WHERE id = NEW.session_id) IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'session has ended'); END;

-- Every tool_use id of a session, so a duplicate is refused across the transcript.
CREATE TABLE tool_uses (
    session_id  TEXT    NOT NULL REFERENCES sessions(id),
    tool_use_id TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    PRIMARY KEY (session_id, tool_use_id)
) WITHOUT ROWID;

-- A checkpoint covers messages 0..through_seq; retained is the JSON list of
-- the user messages it keeps, as they go into the context.
CREATE TABLE checkpoints (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id      TEXT    NOT NULL REFERENCES sessions(id),
    through_seq     INTEGER NOT NULL,
    summary         TEXT    NOT NULL,
    retained        TEXT    NOT NULL,
    retained_seqs   TEXT    NOT NULL,
    cut_seq         INTEGER,
    retained_tokens INTEGER NOT NULL,
    context_tokens  INTEGER NOT NULL,
    created_at      REAL    NOT NULL
);
CREATE INDEX checkpoints_by_session ON checkpoints (session_id, id);

-- Tool calls the host ran, and every event each one streamed, by seq.
CREATE TABLE tool_calls (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id   TEXT NOT NULL REFERENCES sessions(id),
    tool_call_id TEXT NOT NULL,
    tool         TEXT NOT NULL,
    args         TEXT NOT NULL,
    started_at   REAL NOT NULL
);
CREATE INDEX tool_calls_by_call_id ON tool_calls (tool_call_id, id);
CREATE INDEX tool_calls_by_session ON tool_calls (session_id, id);

CREATE TABLE tool_events (
    call_id    INTEGER NOT NULL REFERENCES tool_calls(id),
    seq        INTEGER NOT NULL CHECK (seq >= 0),
    type       TEXT    NOT NULL CHECK (type IN ('chunk', 'result')),
    stream     TEXT    CHECK (stream IN ('stdout', 'stderr')),
    data       TEXT,
    result     TEXT,
    created_at REAL    NOT NULL,
    PRIMARY KEY (call_id, seq),
    CHECK ((type = 'chunk') = (stream IS NOT NULL AND data IS NOT NULL AND result IS NULL))
) WITHOUT ROWID;
""" + "".join(
    _APPEND_ONLY.format(table=t)
    for t in ("messages", "tool_uses", "checkpoints", "tool_calls", "tool_events")
)

MIGRATIONS: tuple[Migration, ...] = (Migration(1, "0001_initial", _INITIAL),)


class SchemaError(RuntimeError):
    """The database's applied migrations do not match this code's."""


def _applied(conn: sqlite3.Connection) -> dict[int, str]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
    )
    return {v: n for v, n in conn.execute("SELECT version, name FROM schema_migrations")}


def migrate(conn: sqlite3.Connection, migrations: tuple[Migration, ...] = MIGRATIONS) -> int:
    """Apply the missing migrations in order, in one transaction; return how many.

    Raises :class:`SchemaError` when an applied migration has another name
    (it was edited or renamed) or is unknown (a newer toolbound wrote it).
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        applied = _applied(conn)
        known = {m.version: m.name for m in migrations}
        for version, name in sorted(applied.items()):
            if known.get(version) != name:
                raise SchemaError(
                    f"the database has migration {version} {name!r}, which this toolbound "
                    "does not know; use the toolbound that created it or a newer one"
                )
        missing = [m for m in migrations if m.version not in applied]
        for m in missing:
            # executescript would commit; split on the statement terminator instead.
            for statement in _statements(m.sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (m.version, m.name, time.time()),
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return len(missing)


def _statements(sql: str) -> list[str]:
    """Split a script into complete statements (triggers hold inner ';')."""
    out: list[str] = []
    current = ""
    for line in sql.splitlines(keepends=True):
        if line.lstrip().startswith("--"):
            continue
        current += line
        if sqlite3.complete_statement(current):
            out.append(current.strip())
            current = ""
    if current.strip():
        out.append(current.strip())
    return out
