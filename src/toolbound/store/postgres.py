"""The PostgreSQL backend: the same store in a database many hosts share.

``SessionStore("postgresql://user@host/db")`` (or ``postgres://``; libpq's
URL, so ``?host=/run/postgresql`` reaches a unix socket and
``options=-csearch_path%3Dname`` a schema of its own) runs the same queries,
the same named migrations and the same append-only triggers as the SQLite
file. Connections are in autocommit mode and the store opens its
transactions itself, as it does on SQLite. Writers run side by side here, so
a write that reads a session's state first locks the session's row
(``SELECT ... FOR NO KEY UPDATE``): appends to one session still take turns, and
each sees what the previous one wrote.

Committed tool events are announced with NOTIFY on :data:`CHANNEL`, so a web
view on another machine follows a running call live without polling.

A recorder's batch goes in one round trip (:func:`write_calls`): each call's
rows (its start, events, ledger row, drops, and its NOTIFY) are one
statement, and a batch of several calls is one pipelined transaction.
Measured (bench/store.py, 8 processes x 1,000 calls): the five round trips
per call it replaced cost 0.6x raw inserts' rate.

Pieces:
    CHANNEL           the NOTIFY channel of recorded tool events (store.conn)
    PgConn            a psycopg connection with the store's ``?`` placeholders
    PostgresBackend   connect(), the dialect, describe()
    CALL_ROWS_NEW, CALL_ROWS_KNOWN, call_rows_params
                      one call's rows as one statement, and its parameters
    write_calls       a recorder's batch of calls' rows, in one round trip
    listen            a connection LISTENing on CHANNEL, for a web view
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

import psycopg
from psycopg import errors as pg_errors
from psycopg import pq, sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from toolbound.store.conn import CHANNEL, CallRows, Conflict, Conn, Cursor
from toolbound.store.errors import StoreUnavailable
from toolbound.store.schema import migrate

__all__ = [
    "CALL_ROWS_KNOWN",
    "CALL_ROWS_NEW",
    "CHANNEL",
    "PgConn",
    "PostgresBackend",
    "call_rows_params",
    "listen",
    "write_calls",
]


def _placeholders(sql: str) -> str:
    """The store's ``?`` placeholders as psycopg's ``%s`` (no query holds a literal % or ?)."""
    return sql.replace("?", "%s")


class PgConn:
    """A psycopg connection speaking the store's SQL: ``?`` placeholders, explicit BEGIN."""

    def __init__(self, raw: psycopg.Connection[Any]) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Cursor:
        try:
            if params:
                return self.raw.execute(_placeholders(sql), params, prepare=True)
            return self.raw.execute(sql)
        except psycopg.OperationalError as err:
            raise StoreUnavailable(f"the PostgreSQL store is unreachable: {err}") from err

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]], /) -> Any:
        with self.raw.cursor() as cur:
            cur.executemany(_placeholders(sql), rows)

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != pq.TransactionStatus.IDLE

    @property
    def broken(self) -> bool:
        """Whether the connection was lost (a new one is needed)."""
        return self.raw.broken

    def close(self) -> None:
        self.raw.close()


def _redacted(url: str) -> str:
    """The URL without its password, for messages and logs."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "postgresql://…"
    params.pop("password", None)
    return make_conninfo("", **{k: v for k, v in params.items() if v is not None})


class PostgresBackend:
    """A ``postgresql://`` store: NOTIFY on commit, row locks order a session's writers."""

    kind: Literal["sqlite", "postgresql"] = "postgresql"
    begin_write = "BEGIN"
    begin_read = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
    concurrent_writers = True
    errors: tuple[type[BaseException], ...] = (psycopg.Error,)

    def __init__(self, url: str, *, busy_timeout_s: float) -> None:
        self.url = url
        self.busy_timeout_s = busy_timeout_s

    def _open(self, application_name: str) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(
                self.url,
                autocommit=True,
                connect_timeout=max(1, round(self.busy_timeout_s)),
                application_name=application_name,
            )
        except psycopg.Error as err:
            raise StoreUnavailable(f"cannot open the store {self.describe()}: {err}") from err

    def connect(self) -> Conn:
        return self.connect_as("toolbound")

    def connect_as(self, application_name: str) -> Conn:
        """``connect``, naming the connection's role to the server (``pg_stat_activity``)."""
        raw = self._open(application_name)
        conn = PgConn(raw)
        try:
            # A writer waits this long for a session's row lock, as SQLite waits for its lock.
            raw.execute(f"SET lock_timeout = {int(self.busy_timeout_s * 1000)}")
            migrate(conn, dialect="postgresql")
        except psycopg.Error as err:
            raw.close()
            raise StoreUnavailable(f"cannot open the store {self.describe()}: {err}") from err
        except BaseException:
            raw.close()
            raise
        return conn

    def begin_session_write(self, conn: Conn, session_id: str) -> None:
        """BEGIN and lock the session's row, in one round trip.

        Its own statement, before the session's state is read: under READ
        COMMITTED the next statement's snapshot then sees what the writer
        that held the lock before committed. NO KEY: the lock orders the
        session's writers and its end (an UPDATE of ended_at), but not the
        foreign-key checks of the recorder's inserts.
        """
        query = sql.SQL("BEGIN; SELECT 1 FROM sessions WHERE id = {} FOR NO KEY UPDATE")
        conn.execute(query.format(sql.Literal(session_id)).as_string())

    def conflict(self, err: BaseException) -> Conflict:
        if isinstance(err, pg_errors.UniqueViolation):
            return "taken"
        if isinstance(err, psycopg.IntegrityError) and "session has ended" in str(err):
            return "ended"
        return None

    def commit_notifying(self, conn: Conn, channel: str, payloads: Sequence[str]) -> None:
        """NOTIFY each payload and COMMIT in one round trip (one simple-query string)."""
        statements = [
            sql.SQL("NOTIFY {}, {}").format(sql.Identifier(channel), sql.Literal(p))
            for p in payloads
        ]
        script = sql.SQL("; ").join([*statements, sql.SQL("COMMIT")])
        conn.execute(script.as_string())

    def describe(self) -> str:
        return _redacted(self.url)


# One call's rows in one statement: its row (inserted, or the id it already
# has), then its events, ledger row and drops as JSON records (one parameter
# each, so the prepared statement's types never change), and its NOTIFY, sent
# when the statement's transaction commits. The events' foreign key is checked
# at the statement's end, when the call's row is there.
_CALL_ROWS = """
WITH c AS ({call}),
e AS (
    INSERT INTO tool_events (call_id, seq, type, stream, data, result, created_at)
    SELECT c.id, r.seq, r.type, r.stream, r.data, r.result, r.created_at
    FROM c, json_to_recordset(%s::json) AS r(
        seq bigint, type text, stream text, data text, result text, created_at float8)
),
l AS (
    INSERT INTO tool_call_ledger (call_id, model_tokens, model_bytes, elided_bytes,
        spilled_bytes, reread_avoided)
    SELECT c.id, r.t, r.b, r.e, r.s, r.r
    FROM c, json_to_recordset(%s::json) AS r(t bigint, b bigint, e bigint, s bigint, r bigint)
    ON CONFLICT (call_id) DO NOTHING
),
d AS (
    INSERT INTO tool_call_drops (call_id, stream, chunks, bytes)
    SELECT c.id, r.stream, r.chunks, r.bytes
    FROM c, json_to_recordset(%s::json) AS r(stream text, chunks bigint, bytes bigint)
)
SELECT c.id, pg_notify(%s, %s)::text FROM c
"""
CALL_ROWS_NEW = _CALL_ROWS.format(
    call="INSERT INTO tool_calls (session_id, tool_call_id, tool, args, started_at, profile,"
    " client, fit_bytes, fit_lines) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"
)
CALL_ROWS_KNOWN = _CALL_ROWS.format(call="SELECT %s::bigint AS id")

_to_json = json.JSONEncoder(ensure_ascii=False).encode


def call_rows_params(rows: CallRows, channel: str) -> tuple[Any, ...]:
    """The parameters of ``rows``' statement: CALL_ROWS_NEW's when its call is new
    (``rows.call``), else CALL_ROWS_KNOWN's."""
    events = _to_json(
        [
            {"seq": q, "type": t, "stream": s, "data": d, "result": r, "created_at": at}
            for q, t, s, d, r, at in rows.events
        ]
    )
    # Integers only: written as JSON without the encoder.
    ledger = "[]"
    if rows.ledger is not None:
        t, b, e, s, r = rows.ledger
        ledger = f'[{{"t":{t},"b":{b},"e":{e},"s":{s},"r":{r}}}]'
    drops = (
        _to_json([{"stream": s, "chunks": c, "bytes": b} for s, c, b in rows.drops])
        if rows.drops
        else "[]"
    )
    tail = (events, ledger, drops, channel, rows.payload)
    if rows.call is not None:
        return (*rows.call, *tail)
    return (rows.call_id, *tail)


def _execute_call(raw: psycopg.Connection[Any], rows: CallRows, channel: str) -> Any:
    query = CALL_ROWS_NEW if rows.call is not None else CALL_ROWS_KNOWN
    return raw.execute(query, call_rows_params(rows, channel), prepare=True)


def write_calls(conn: Conn, channel: str, calls: Sequence[CallRows]) -> list[int]:
    """Write each call's rows and NOTIFY ``channel``, all in one transaction and
    one round trip; the calls' row ids, in order.

    One call is one statement in autocommit mode (its own transaction); more
    are pipelined between BEGIN and COMMIT. Raises the driver's error, with
    nothing written and no transaction left open.
    """
    assert isinstance(conn, PgConn)
    raw = conn.raw
    try:
        if len(calls) == 1:
            cursors = [_execute_call(raw, calls[0], channel)]
        else:
            with raw.pipeline():
                raw.execute("BEGIN")
                cursors = [_execute_call(raw, rows, channel) for rows in calls]
                raw.execute("COMMIT")
        return [cur.fetchone()[0] for cur in cursors]
    except BaseException:
        if raw.info.transaction_status != pq.TransactionStatus.IDLE:
            raw.execute("ROLLBACK")
        raise


def listen(url: str, channel: str = CHANNEL) -> psycopg.Connection[Any]:
    """A new autocommit connection LISTENing on ``channel`` (its ``notifies()`` yields)."""
    try:
        raw = psycopg.connect(url, autocommit=True, application_name="toolbound-listen")
    except psycopg.Error as err:
        raise StoreUnavailable(f"cannot open the store {_redacted(url)}: {err}") from err
    raw.execute(f"LISTEN {channel}")
    return raw
