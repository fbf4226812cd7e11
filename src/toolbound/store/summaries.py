"""What the web view lists of each session: its origin, its times, its size.

A host notes where its session runs when it opens the session
(``note_origin``: the workspace and the machine's host name, migration
``0005_session_origin``), so the sessions of a fleet sharing one store can be
told apart. ``read_summaries`` reads every session's row with its call count
and its last activity (the latest of its start, its last call's start or
event, its last message, its end) in one query, newest first. Each function runs in a
transaction the caller (``SessionStore``) holds.

Pieces:
    SessionSummary   one session as the web view lists it
    machine_name     the host name a session records
    note_origin      record the workspace and host of the host opening a session
    read_summaries   every session's summary (or one), newest first
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from typing import Any

from toolbound.store.backend import Conn


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """A session's row for the list: ``workspace`` and ``host`` are None when unknown."""

    id: str
    created_at: float
    ended_at: float | None
    workspace: str | None
    host: str | None
    tool_calls: int
    last_activity: float

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "createdAt": self.created_at,
            "endedAt": self.ended_at,
            "workspace": self.workspace,
            "host": self.host,
            "toolCalls": self.tool_calls,
            "lastActivity": self.last_activity,
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
# through its (call_id, seq) key for one call per session, never scanned.
_SUMMARIES = """
SELECT s.id, s.created_at, s.ended_at, s.workspace, s.host,
       (SELECT count(*) FROM tool_calls c WHERE c.session_id = s.id),
       (SELECT max(c.started_at) FROM tool_calls c WHERE c.session_id = s.id),
       (SELECT max(e.created_at) FROM tool_events e WHERE e.call_id =
            (SELECT max(c.id) FROM tool_calls c WHERE c.session_id = s.id)),
       (SELECT max(m.created_at) FROM messages m WHERE m.session_id = s.id)
FROM sessions s {where}
ORDER BY s.created_at DESC, s.id
"""


def read_summaries(conn: Conn, session_id: str | None = None) -> list[SessionSummary]:
    """Every session (or only ``session_id``), newest first, with its calls and last activity."""
    where, params = ("", ()) if session_id is None else ("WHERE s.id = ?", (session_id,))
    out: list[SessionSummary] = []
    rows = conn.execute(_SUMMARIES.format(where=where), params)
    for sid, created, ended, workspace, host, calls, *times in rows:
        last = max(float(t) for t in (created, ended, *times) if t is not None)
        out.append(SessionSummary(sid, created, ended, workspace, host, int(calls), last))
    return out
