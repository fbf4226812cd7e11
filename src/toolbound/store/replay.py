"""Reading recorded tool calls back: the reader beside their writer, ``recorder``.

``recorder`` writes each call's row into ``tool_calls``, its stored events
into ``tool_events`` (with their original ``seq``) and what the capture
ceiling left out into ``tool_call_drops``; these functions read the same rows
back in the wire shape the host streamed them in, a result's ``text`` rendered
for the profile stored with its call. Each one runs inside a read
transaction the caller (``SessionStore``) holds. A tool call id used more than
once (within a session, if one is given) means its latest call.

Pieces:
    read_tool_calls  a session's calls, oldest first: id, tool, args, result
    read_events      a call's events after a seq, as chunk, input and result events
    read_dropped     per stream, the chunks and bytes a call's stored events left out
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from toolbound.fit import Fit
from toolbound.limits import ProfileName
from toolbound.results import ResultEvent
from toolbound.store.conn import Conn


def read_tool_calls(conn: Conn, session_id: str) -> list[dict[str, Any]]:
    """The session's recorded tool calls, oldest first: id, tool, args, result."""
    rows = conn.execute(
        "SELECT c.tool_call_id, c.tool, c.args, c.started_at,"
        " (SELECT e.result FROM tool_events e WHERE e.call_id = c.id AND e.type = 'result')"
        " FROM tool_calls c WHERE c.session_id = ? ORDER BY c.id",
        (session_id,),
    ).fetchall()
    return [
        {
            "toolCallId": call_id,
            "tool": tool,
            "args": json.loads(args),
            "startedAt": started,
            "result": None if result is None else json.loads(result),
        }
        for call_id, tool, args, started, result in rows
    ]


def read_events(
    conn: Conn, tool_call_id: str, after: int, session_id: str | None
) -> list[dict[str, Any]]:
    """The latest call's events with ``seq > after``, in seq order; ``[]`` for an unknown id."""
    call = _latest_call(conn, tool_call_id, session_id)
    if call is None:
        return []
    rows = conn.execute(
        "SELECT seq, type, stream, data, result FROM tool_events"
        " WHERE call_id = ? AND seq > ? ORDER BY seq",
        (call.id, after),
    ).fetchall()
    return [_event_wire(call, tool_call_id, *row) for row in rows]


def read_dropped(
    conn: Conn, tool_call_id: str, session_id: str | None
) -> dict[str, dict[str, int]]:
    """Per stream, ``{"chunks", "bytes"}`` the latest call did not store; ``{}`` if none."""
    call = _latest_call(conn, tool_call_id, session_id)
    if call is None:
        return {}
    rows = conn.execute(
        "SELECT stream, chunks, bytes FROM tool_call_drops WHERE call_id = ? ORDER BY stream",
        (call.id,),
    ).fetchall()
    return {stream: {"chunks": chunks, "bytes": size} for stream, chunks, size in rows}


@dataclass(frozen=True, slots=True)
class _Call:
    id: int
    tool: str
    profile: ProfileName
    fit: Fit


def _latest_call(conn: Conn, tool_call_id: str, session_id: str | None) -> _Call | None:
    """The latest call with this id (within ``session_id`` if given): row id, tool, profile."""
    where = "tool_call_id = ?" + ("" if session_id is None else " AND session_id = ?")
    params: tuple[str, ...] = (tool_call_id,) if session_id is None else (tool_call_id, session_id)
    row = conn.execute(
        "SELECT id, tool, profile, client, fit_bytes, fit_lines FROM tool_calls"
        f" WHERE {where} ORDER BY id DESC LIMIT 1",
        params,
    ).fetchone()
    if row is None:
        return None
    return _Call(int(row[0]), str(row[1]), row[2], Fit(row[3], row[4], row[5]))


def _event_wire(
    call: _Call,
    tool_call_id: str,
    seq: int,
    kind: str,
    stream: str | None,
    data: str | None,
    result: str | None,
) -> dict[str, Any]:
    if kind == "chunk":
        return {
            "type": "chunk",
            "toolCallId": tool_call_id,
            "stream": stream,
            "seq": seq,
            "data": data,
        }
    if kind == "input":
        return {
            "type": "input",
            "toolCallId": tool_call_id,
            "seq": seq,
            "data": data,
            "close": bool(json.loads(result or "{}").get("close")),
        }
    # Rendered for the fit the call was sent under: the text as the model read it.
    return ResultEvent.of(
        call.tool,
        tool_call_id,
        seq,
        json.loads(result or "null"),
        fit=call.fit,
    )
