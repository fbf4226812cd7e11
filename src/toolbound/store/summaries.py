"""What the web view lists of each session: its origin, its times, its size.

A host notes where its session runs when it opens the session
(``note_origin``: the workspace and the machine's host name, migration
``0005_session_origin``), so the sessions of a fleet sharing one store can be
told apart. ``read_summaries`` reads every session's row with its call count,
its last activity (the latest of its start, its last call's start or event,
its last message, its end) and its context tokens (the ledger's
``total.modelTokens``: the sum of its calls' ledger rows) in one query,
newest first. A session with a call whose result has no ledger row (recorded
before migration 0004) has its total from ``read_ledger``, which measures such
calls from their results. ``read_call_profiles`` tells the profile each of a
session's calls was rendered for, as the store's replay renders it. Each
function runs in a transaction the caller (``SessionStore``) holds.

Pieces:
    SessionSummary   one session as the web view lists it
    machine_name     the host name a session records
    note_origin      record the workspace and host of the host opening a session
    read_summaries   every session's summary (or one), newest first
    read_call_profiles  a session's calls -> the profile each was sent under
    read_call_fits      a session's calls -> the client and cap each was sent with
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from typing import Any

from toolbound.fit import Fit
from toolbound.limits import ProfileName
from toolbound.store.conn import Conn
from toolbound.store.ledger import read_ledger


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """A session's row for the list: ``workspace`` and ``host`` are None when unknown.

    ``tokens`` is the ledger's ``total.modelTokens``: what the session's call
    results cost the model's context.
    """

    id: str
    created_at: float
    ended_at: float | None
    workspace: str | None
    host: str | None
    tool_calls: int
    last_activity: float
    tokens: int

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "createdAt": self.created_at,
            "endedAt": self.ended_at,
            "workspace": self.workspace,
            "host": self.host,
            "toolCalls": self.tool_calls,
            "lastActivity": self.last_activity,
            "tokens": self.tokens,
        }


def machine_name() -> str:
    """This machine's name, as a session records it (``socket.gethostname``)."""
    return socket.gethostname()


def note_origin(conn: Conn, session_id: str, *, workspace: str, host: str) -> None:
    """The session runs in ``workspace`` on machine ``host`` (the latest host to open it).

    Creates the session when it does not exist yet, as ``SessionStore.session`` does.
    """
    conn.execute(
        "INSERT INTO sessions (id, created_at, workspace, host) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET workspace = excluded.workspace, host = excluded.host",
        (session_id, time.time(), workspace, host),
    )


# The last call's events stand for the session's activity: tool_events is read
# through its (call_id, seq) key for one call per session, never scanned. The
# tokens sum the session's ledger rows (through tool_calls_by_session and the
# ledger's key); the calls counted as unmeasured have a result but no ledger
# row, and only calls without a ledger row (running, crashed, or older than
# the ledger) have their events looked at.
_SUMMARIES = """
SELECT s.id, s.created_at, s.ended_at, s.workspace, s.host,
       (SELECT count(*) FROM tool_calls c WHERE c.session_id = s.id),
       (SELECT max(c.started_at) FROM tool_calls c WHERE c.session_id = s.id),
       (SELECT max(e.created_at) FROM tool_events e WHERE e.call_id =
            (SELECT max(c.id) FROM tool_calls c WHERE c.session_id = s.id)),
       (SELECT max(m.created_at) FROM messages m WHERE m.session_id = s.id),
       (SELECT coalesce(sum(l.model_tokens), 0) FROM tool_calls c
            JOIN tool_call_ledger l ON l.call_id = c.id WHERE c.session_id = s.id),
       (SELECT count(*) FROM tool_calls c WHERE c.session_id = s.id
            AND NOT EXISTS (SELECT 1 FROM tool_call_ledger l WHERE l.call_id = c.id)
            AND EXISTS (SELECT 1 FROM tool_events e
                        WHERE e.call_id = c.id AND e.type = 'result'))
FROM sessions s {where}
ORDER BY s.created_at DESC, s.id
"""


def read_summaries(conn: Conn, session_id: str | None = None) -> list[SessionSummary]:
    """Every session (or only ``session_id``), newest first: calls, last activity, tokens."""
    where, params = ("", ()) if session_id is None else ("WHERE s.id = ?", (session_id,))
    out: list[SessionSummary] = []
    rows = conn.execute(_SUMMARIES.format(where=where), params).fetchall()
    for sid, created, ended, workspace, host, calls, *times, tokens, unmeasured in rows:
        last = max(float(t) for t in (created, ended, *times) if t is not None)
        if unmeasured:
            tokens = read_ledger(conn, sid)["total"]["modelTokens"]
        summary = SessionSummary(
            sid, created, ended, workspace, host, int(calls), last, int(tokens)
        )
        out.append(summary)
    return out


def read_call_fits(conn: Conn, session_id: str) -> dict[str, Fit]:
    """The client and per-result cap each of the session's calls was sent with, by
    tool call id (the latest call's for an id used more than once)."""
    rows = conn.execute(
        "SELECT tool_call_id, client, fit_bytes, fit_lines FROM tool_calls"
        " WHERE session_id = ? ORDER BY id",
        (session_id,),
    )
    return {call_id: Fit(client, size, lines) for call_id, client, size, lines in rows}


def read_call_profiles(conn: Conn, session_id: str) -> dict[str, ProfileName]:
    """The profile each of the session's calls was rendered for, by tool call id.

    An id used more than once gives the latest call's, as the replay does.
    """
    rows = conn.execute(
        "SELECT tool_call_id, profile FROM tool_calls WHERE session_id = ? ORDER BY id",
        (session_id,),
    )
    return {call_id: profile for call_id, profile in rows}
