"""The store's schema: ordered, named migrations, never edited once released.

A change to the schema is a new entry at the end of ``MIGRATIONS``; an applied
migration is recorded in ``schema_migrations`` with its name, and a database
whose record disagrees with this list (an edited or unknown migration) is
refused rather than guessed at. Each step is written for both engines, under
one name: the SQLite text and the PostgreSQL text make the same tables, the
same checks and the same append-only triggers.

Pieces:
    Migration         one numbered, named step of SQL, in each dialect
    MIGRATIONS        every step, in order
    SchemaError       the database does not match this code's migrations
    migrate           apply the missing steps in one transaction
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from toolbound.store.errors import StoreUnavailable

if TYPE_CHECKING:
    from toolbound.store.conn import Conn

Dialect = Literal["sqlite", "postgresql"]


@dataclass(frozen=True, slots=True)
class Migration:
    """One step: ``sql`` for SQLite, ``postgresql`` for PostgreSQL, under one name."""

    version: int
    name: str
    sql: str
    postgresql: str = ""

    def script(self, dialect: Dialect) -> str:
        return self.sql if dialect == "sqlite" else self.postgresql


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


_PG_APPEND_ONLY = """
CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table}
FOR EACH ROW EXECUTE FUNCTION toolbound_append_only();
CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table}
FOR EACH ROW EXECUTE FUNCTION toolbound_append_only();
CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table}
FOR EACH STATEMENT EXECUTE FUNCTION toolbound_append_only();
"""

# The same tables as _INITIAL: REAL is float8, rowids are identity columns.
_PG_INITIAL = """
CREATE FUNCTION toolbound_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% are append-only: rows are never %', TG_TABLE_NAME,
        CASE TG_OP WHEN 'UPDATE' THEN 'updated' ELSE 'deleted' END
        USING ERRCODE = 'integrity_constraint_violation';
END $$;

CREATE FUNCTION toolbound_session_open() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT ended_at FROM sessions WHERE id = NEW.session_id) IS NOT NULL THEN
        RAISE EXCEPTION 'session has ended' USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END $$;

CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    created_at DOUBLE PRECISION NOT NULL,
    ended_at   DOUBLE PRECISION
);

CREATE TABLE messages (
    session_id TEXT             NOT NULL REFERENCES sessions(id),
    seq        BIGINT           NOT NULL CHECK (seq >= 0),
    kind       TEXT             NOT NULL CHECK (kind IN ('user', 'results', 'assistant')),
    body       TEXT             NOT NULL,
    tokens     BIGINT           NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX messages_user_authored ON messages (session_id, seq) WHERE kind = 'user';
CREATE TRIGGER messages_session_open BEFORE INSERT ON messages
FOR EACH ROW EXECUTE FUNCTION toolbound_session_open();

CREATE TABLE tool_uses (
    session_id  TEXT   NOT NULL REFERENCES sessions(id),
    tool_use_id TEXT   NOT NULL,
    seq         BIGINT NOT NULL,
    PRIMARY KEY (session_id, tool_use_id)
);

CREATE TABLE checkpoints (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id      TEXT             NOT NULL REFERENCES sessions(id),
    through_seq     BIGINT           NOT NULL,
    summary         TEXT             NOT NULL,
    retained        TEXT             NOT NULL,
    retained_seqs   TEXT             NOT NULL,
    cut_seq         BIGINT,
    retained_tokens BIGINT           NOT NULL,
    context_tokens  BIGINT           NOT NULL,
    created_at      DOUBLE PRECISION NOT NULL
);
CREATE INDEX checkpoints_by_session ON checkpoints (session_id, id);

CREATE TABLE tool_calls (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id   TEXT             NOT NULL REFERENCES sessions(id),
    tool_call_id TEXT             NOT NULL,
    tool         TEXT             NOT NULL,
    args         TEXT             NOT NULL,
    started_at   DOUBLE PRECISION NOT NULL
);
CREATE INDEX tool_calls_by_call_id ON tool_calls (tool_call_id, id);
CREATE INDEX tool_calls_by_session ON tool_calls (session_id, id);

CREATE TABLE tool_events (
    call_id    BIGINT           NOT NULL REFERENCES tool_calls(id),
    seq        BIGINT           NOT NULL CHECK (seq >= 0),
    type       TEXT             NOT NULL CHECK (type IN ('chunk', 'result')),
    stream     TEXT             CHECK (stream IN ('stdout', 'stderr')),
    data       TEXT,
    result     TEXT,
    created_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (call_id, seq),
    CHECK ((type = 'chunk') = (stream IS NOT NULL AND data IS NOT NULL AND result IS NULL))
);
""" + "".join(
    _PG_APPEND_ONLY.format(table=t)
    for t in ("messages", "tool_uses", "checkpoints", "tool_calls", "tool_events")
)

# Retention (store.prune) and bounded recorded events. Rows stay append-only
# while their session is open; once it has ended, its rows may be deleted
# (never updated). tool_call_drops counts the chunks of a call that were not
# stored because their stream had passed the capture ceiling.
_BY_SESSION = ("messages", "tool_uses", "checkpoints", "tool_calls")
_BY_CALL = ("tool_events", "tool_call_drops")
_ENDED_OF = {
    "session": "(SELECT ended_at FROM sessions WHERE id = OLD.session_id)",
    "call": "(SELECT s.ended_at FROM tool_calls c JOIN sessions s ON s.id = c.session_id"
    " WHERE c.id = OLD.call_id)",
}
_DELETE_WHEN_ENDED = """
CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table}
WHEN {ended} IS NULL
BEGIN SELECT RAISE(ABORT,
    '{table} are append-only: rows are never deleted while their session is open'); END;
"""
_DROPS = """
CREATE TABLE tool_call_drops (
    call_id INTEGER NOT NULL REFERENCES tool_calls(id),
    stream  TEXT    NOT NULL CHECK (stream IN ('stdout', 'stderr')),
    chunks  INTEGER NOT NULL CHECK (chunks > 0),
    bytes   INTEGER NOT NULL CHECK (bytes >= 0),
    PRIMARY KEY (call_id, stream)
) WITHOUT ROWID;
CREATE TRIGGER tool_call_drops_no_update BEFORE UPDATE ON tool_call_drops
BEGIN SELECT RAISE(ABORT, 'tool_call_drops are append-only: rows are never updated'); END;
CREATE INDEX sessions_by_end ON sessions (ended_at) WHERE ended_at IS NOT NULL;
"""
_RETENTION = (
    _DROPS
    + "".join(f"DROP TRIGGER {t}_no_delete;\n" for t in (*_BY_SESSION, "tool_events"))
    + "".join(_DELETE_WHEN_ENDED.format(table=t, ended=_ENDED_OF["session"]) for t in _BY_SESSION)
    + "".join(_DELETE_WHEN_ENDED.format(table=t, ended=_ENDED_OF["call"]) for t in _BY_CALL)
)

_PG_RETENTION = (
    """
CREATE FUNCTION toolbound_delete_when_ended() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ended DOUBLE PRECISION;
BEGIN
    IF TG_ARGV[0] = 'call' THEN
        SELECT s.ended_at INTO ended FROM tool_calls c JOIN sessions s ON s.id = c.session_id
        WHERE c.id = OLD.call_id;
    ELSE
        SELECT s.ended_at INTO ended FROM sessions s WHERE s.id = OLD.session_id;
    END IF;
    IF ended IS NULL THEN
        RAISE EXCEPTION '% are append-only: rows are never deleted while their session is open',
            TG_TABLE_NAME USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN OLD;
END $$;

CREATE TABLE tool_call_drops (
    call_id BIGINT NOT NULL REFERENCES tool_calls(id),
    stream  TEXT   NOT NULL CHECK (stream IN ('stdout', 'stderr')),
    chunks  BIGINT NOT NULL CHECK (chunks > 0),
    bytes   BIGINT NOT NULL CHECK (bytes >= 0),
    PRIMARY KEY (call_id, stream)
);
CREATE TRIGGER tool_call_drops_no_update BEFORE UPDATE ON tool_call_drops
FOR EACH ROW EXECUTE FUNCTION toolbound_append_only();
CREATE TRIGGER tool_call_drops_no_truncate BEFORE TRUNCATE ON tool_call_drops
FOR EACH STATEMENT EXECUTE FUNCTION toolbound_append_only();
CREATE INDEX sessions_by_end ON sessions (ended_at) WHERE ended_at IS NOT NULL;
"""
    + "".join(f"DROP TRIGGER {t}_no_delete ON {t};\n" for t in (*_BY_SESSION, "tool_events"))
    + "".join(
        f"CREATE TRIGGER {t}_no_delete BEFORE DELETE ON {t} FOR EACH ROW"
        f" EXECUTE FUNCTION toolbound_delete_when_ended('{by}');\n"
        for by, tables in (("session", _BY_SESSION), ("call", _BY_CALL))
        for t in tables
    )
)

# What a session has Read and written (``edit.record.ReadRecord``), one JSON row per
# session, replaced as it changes: Edit and Write in a later process of the same
# session (``toolbound call``) still know what was Read. Not append-only: it is
# state, not history.
_READ_RECORDS = """
CREATE TABLE read_records (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id),
    record     TEXT NOT NULL,
    updated_at REAL NOT NULL
);
"""
_PG_READ_RECORDS = """
CREATE TABLE read_records (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id),
    record     TEXT NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);
"""

# The context ledger (``store.ledger``): the profile each call's model text was
# rendered for, and one row of figures per call whose result was recorded,
# written with the result. Calls recorded before this migration have no ledger
# row (their figures are measured from the stored result when the ledger is
# read) and the profile they were rendered for, the only one there was.
# Append-only like tool_call_drops: deleted only once the session has ended.
# One text for both engines: SQLite's INTEGER and PostgreSQL's BIGINT.
_LEDGER_TABLE = """
ALTER TABLE tool_calls ADD COLUMN profile TEXT NOT NULL DEFAULT 'exact';
CREATE TABLE tool_call_ledger (
    call_id        {int} PRIMARY KEY REFERENCES tool_calls(id),
    model_tokens   {int} NOT NULL CHECK (model_tokens >= 0),
    model_bytes    {int} NOT NULL CHECK (model_bytes >= 0),
    elided_bytes   {int} NOT NULL CHECK (elided_bytes >= 0),
    spilled_bytes  {int} NOT NULL CHECK (spilled_bytes >= 0),
    reread_avoided {int} NOT NULL CHECK (reread_avoided IN (0, 1))
);
"""
_LEDGER = (
    _LEDGER_TABLE.format(int="INTEGER")
    + """
CREATE TRIGGER tool_call_ledger_no_update BEFORE UPDATE ON tool_call_ledger
BEGIN SELECT RAISE(ABORT, 'tool_call_ledger are append-only: rows are never updated'); END;
"""
    + _DELETE_WHEN_ENDED.format(table="tool_call_ledger", ended=_ENDED_OF["call"])
)
_PG_LEDGER = (
    _LEDGER_TABLE.format(int="BIGINT")
    + """
CREATE TRIGGER tool_call_ledger_no_update BEFORE UPDATE ON tool_call_ledger
FOR EACH ROW EXECUTE FUNCTION toolbound_append_only();
CREATE TRIGGER tool_call_ledger_no_truncate BEFORE TRUNCATE ON tool_call_ledger
FOR EACH STATEMENT EXECUTE FUNCTION toolbound_append_only();
CREATE TRIGGER tool_call_ledger_no_delete BEFORE DELETE ON tool_call_ledger
FOR EACH ROW EXECUTE FUNCTION toolbound_delete_when_ended('call');
"""
)

# Where a session runs: the workspace and the machine (host name) of the host that
# last opened it, so the web view can tell a fleet's sessions apart. Written by
# ``SessionStore.note_origin``; NULL for sessions recorded before it.
_SESSION_ORIGIN = """
ALTER TABLE sessions ADD COLUMN workspace TEXT;
ALTER TABLE sessions ADD COLUMN host TEXT;
"""

# Results that fit the harness (CONTRACT section 14): the client a call's result
# went to (``clientInfo`` "name version") and the per-result cap its model text
# was kept within (``toolbound.fit``), so the replay, the ledger and the web view
# render the text as it was sent. NULL: no client known, no cap (every call
# recorded before this migration).
_FIT = """
ALTER TABLE tool_calls ADD COLUMN client TEXT;
ALTER TABLE tool_calls ADD COLUMN fit_bytes INTEGER;
ALTER TABLE tool_calls ADD COLUMN fit_lines INTEGER;
"""

# A job's input (CONTRACT section 15, JobInput): what the agent wrote to a running
# job's stdin is an event of the job's call, ``type = 'input'``, in seq order with
# its chunks (so a reload shows the inputs exactly where they came), its text in
# ``data``, ``{"close": bool}`` in ``result``. SQLite cannot change a CHECK in
# place: the table is rebuilt (rows copied, its two triggers made again);
# PostgreSQL swaps the constraint.
_EVENT_COLUMNS = "call_id, seq, type, stream, data, result, created_at"
_INPUT_CHECK = "CHECK (type <> 'input' OR (stream IS NULL AND data IS NOT NULL))"
_JOB_INPUT = f"""
CREATE TABLE tool_events_new (
    call_id    INTEGER NOT NULL REFERENCES tool_calls(id),
    seq        INTEGER NOT NULL CHECK (seq >= 0),
    type       TEXT    NOT NULL CHECK (type IN ('chunk', 'result', 'input')),
    stream     TEXT    CHECK (stream IN ('stdout', 'stderr')),
    data       TEXT,
    result     TEXT,
    created_at REAL    NOT NULL,
    PRIMARY KEY (call_id, seq),
    CHECK ((type = 'chunk') = (stream IS NOT NULL AND data IS NOT NULL AND result IS NULL)),
    {_INPUT_CHECK}
) WITHOUT ROWID;
INSERT INTO tool_events_new ({_EVENT_COLUMNS}) SELECT {_EVENT_COLUMNS} FROM tool_events;
DROP TABLE tool_events;
ALTER TABLE tool_events_new RENAME TO tool_events;
CREATE TRIGGER tool_events_no_update BEFORE UPDATE ON tool_events
BEGIN SELECT RAISE(ABORT, 'tool_events are append-only: rows are never updated'); END;
""" + _DELETE_WHEN_ENDED.format(table="tool_events", ended=_ENDED_OF["call"])
_PG_JOB_INPUT = f"""
ALTER TABLE tool_events DROP CONSTRAINT tool_events_type_check;
ALTER TABLE tool_events ADD CONSTRAINT tool_events_type_check
    CHECK (type IN ('chunk', 'result', 'input'));
ALTER TABLE tool_events ADD CONSTRAINT tool_events_input_check {_INPUT_CHECK};
"""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "0001_initial", _INITIAL, _PG_INITIAL),
    Migration(2, "0002_retention", _RETENTION, _PG_RETENTION),
    Migration(3, "0003_read_records", _READ_RECORDS, _PG_READ_RECORDS),
    Migration(4, "0004_ledger", _LEDGER, _PG_LEDGER),
    Migration(5, "0005_session_origin", _SESSION_ORIGIN, _SESSION_ORIGIN),
    Migration(6, "0006_fit", _FIT, _FIT),
    Migration(7, "0007_job_input", _JOB_INPUT, _PG_JOB_INPUT),
)


class SchemaError(StoreUnavailable):
    """The database's applied migrations do not match this code's (the store is unusable)."""


_BEGIN: dict[Dialect, tuple[str, ...]] = {
    "sqlite": ("BEGIN IMMEDIATE",),
    # Two processes migrating one database at once take turns on this lock.
    "postgresql": ("BEGIN", "SELECT pg_advisory_xact_lock(7358127304)"),
}
_REAL: dict[Dialect, str] = {"sqlite": "REAL", "postgresql": "DOUBLE PRECISION"}


def _applied(conn: Conn | sqlite3.Connection, dialect: Dialect) -> dict[int, str]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        f" version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at {_REAL[dialect]} NOT NULL)"
    )
    rows = conn.execute("SELECT version, name FROM schema_migrations").fetchall()
    return {v: n for v, n in rows}


def migrate(
    conn: Conn | sqlite3.Connection,
    migrations: tuple[Migration, ...] = MIGRATIONS,
    *,
    dialect: Dialect = "sqlite",
) -> int:
    """Apply the missing migrations in order, in one transaction; return how many.

    Raises :class:`SchemaError` when an applied migration has another name
    (it was edited or renamed) or is unknown (a newer toolbound wrote it).
    """
    for statement in _BEGIN[dialect]:
        conn.execute(statement)
    try:
        applied = _applied(conn, dialect)
        known = {m.version: m.name for m in migrations}
        for version, name in sorted(applied.items()):
            if known.get(version) != name:
                raise SchemaError(
                    f"the database has migration {version} {name!r}, which this toolbound "
                    "does not know; use the toolbound that created it or a newer one"
                )
        missing = [m for m in migrations if m.version not in applied]
        for m in missing:
            if dialect == "postgresql":
                conn.execute(m.script(dialect))  # a parameterless script runs whole
            else:
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
