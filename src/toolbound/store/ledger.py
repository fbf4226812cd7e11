"""The context ledger (CONTRACT section 8): where a session's context went, call by call.

Each recorded call keeps what its result cost the model's context and what the
tool saw that the model did not. The recorder measures a call when its result
event comes (``measure``, in its writer thread, never on the event loop) and
writes one ``tool_call_ledger`` row in the result's transaction;
``read_ledger`` reads a session's rows back as the ledger. A call recorded
before migration 0004 has no row: it is measured from its stored result when
the ledger is read, its model text rendered for the profile stored with the
call ('exact', the only one there was), its spill files measured as they are
then (0 once they are gone).

A call's figures:

- ``modelTokens``: ``estimate_tokens`` of its model text, the result event's
  ``text`` (``model_text`` for the call's profile: the text as sent), plus an
  image's tokens (a Read's width x height / 750);
- ``modelBytes``: that text's UTF-8 bytes;
- ``elidedBytes``: what the tool saw that the model did not (its tool's view's
  ``elided_bytes``: Bash's streams' totals past what they kept, the bytes
  Read clipped off the long lines of a whole file; 0 for an error and for a
  page whose cut entries come back with the next page);
- ``spilledBytes``: the sizes of the spill files its result names, measured
  when it was recorded;
- ``rereadAvoided``: a Read answered ``"unchanged": true`` instead of
  sending the window again;
- ``client`` and ``fitBytes``: the client the result went to
  (``clientInfo``'s "name version") and the per-result cap in bytes its text
  was kept within (``toolbound.fit``; None: none known, no cap).

A call with no recorded result (still running, or its tool crashed) sent the
model nothing yet and is not in the ledger.

Pieces:
    Measure        one call's figures
    measure        tool, result and model text -> its Measure
    spilled_bytes  the sizes of the spill files a result names
    read_ledger    a session's ledger: per call with the running total, per tool, in all
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from toolbound import views
from toolbound.bounds.utf8 import utf8_len
from toolbound.fit import Fit
from toolbound.listeners import is_job_call
from toolbound.model_text import model_text
from toolbound.store.conn import Conn
from toolbound.store.tokens import estimate_tokens


@dataclass(frozen=True, slots=True)
class Measure:
    """One call's figures, as its ``tool_call_ledger`` row holds them."""

    model_tokens: int
    model_bytes: int
    elided_bytes: int
    spilled_bytes: int
    reread_avoided: bool

    def row(self) -> tuple[int, int, int, int, int]:
        """The row's columns after ``call_id``, in the table's order."""
        return (
            self.model_tokens,
            self.model_bytes,
            self.elided_bytes,
            self.spilled_bytes,
            int(self.reread_avoided),
        )


def measure(tool: str, result: dict[str, Any], text: str) -> Measure:
    """The figures of one call of ``tool`` whose result was ``result``, sent as ``text``;
    what the result tells of them is its tool's view's (``toolbound.views``)."""
    return Measure(
        model_tokens=estimate_tokens(text) + views.image_tokens(tool, result),
        model_bytes=utf8_len(text),
        elided_bytes=views.elided_bytes(tool, result),
        spilled_bytes=spilled_bytes(result),
        reread_avoided=views.reread_avoided(tool, result),
    )


def spilled_bytes(result: dict[str, Any]) -> int:
    """The sizes of the spill files ``result`` names (``spill``), as they are now; 0 if gone."""
    spill = result.get("spill")
    if not isinstance(spill, dict):
        return 0
    total = 0
    for path in cast(dict[str, Any], spill).values():
        # A file removed with its session (or never there) holds nothing spilled.
        if isinstance(path, str):
            with contextlib.suppress(OSError):
                total += os.stat(path).st_size
    return total


_FIGURES = ("modelTokens", "modelBytes", "elidedBytes", "spilledBytes")


def _zero() -> dict[str, int]:
    return {"calls": 0, **dict.fromkeys(_FIGURES, 0), "rereadsAvoided": 0}


def read_ledger(conn: Conn, session_id: str) -> dict[str, Any]:
    """The session's ledger, inside the caller's read transaction.

    ``{"sessionId", "calls": [...], "tools": {tool: totals}, "total": totals}``:
    each call (oldest first) with its figures and ``runningTokens``, the
    model tokens of the session's calls up to and including it; the totals
    are ``calls``, the four figures and ``rereadsAvoided``.
    """
    rows = conn.execute(
        "SELECT c.tool_call_id, c.tool, c.started_at, c.profile, c.client, c.fit_bytes,"
        " c.fit_lines, l.model_tokens,"
        " l.model_bytes, l.elided_bytes, l.spilled_bytes, l.reread_avoided,"
        " CASE WHEN l.call_id IS NULL THEN (SELECT e.result FROM tool_events e"
        "  WHERE e.call_id = c.id AND e.type = 'result') END"
        " FROM tool_calls c LEFT JOIN tool_call_ledger l ON l.call_id = c.id"
        " WHERE c.session_id = ? ORDER BY c.id",
        (session_id,),
    ).fetchall()
    calls: list[dict[str, Any]] = []
    tools: dict[str, dict[str, int]] = {}
    total = _zero()
    for row in rows:
        call_id, tool, started_at, _profile, client, fit_bytes, fit_lines = row[:7]
        tokens, size, elided, spilled, reread, result = row[7:]
        if is_job_call(call_id):
            continue  # a job's own output: the model reads it through JobOutput calls
        if tokens is not None:
            figures = Measure(tokens, size, elided, spilled, bool(reread))
        elif result is not None:
            fit = Fit(client, fit_bytes, fit_lines)
            figures = _measured_now(tool, json.loads(result), fit)
        else:
            continue  # no result yet: nothing reached the model
        entry = {
            "toolCallId": call_id,
            "tool": tool,
            "at": datetime.fromtimestamp(started_at, UTC).isoformat(timespec="milliseconds"),
            "modelTokens": figures.model_tokens,
            "modelBytes": figures.model_bytes,
            "elidedBytes": figures.elided_bytes,
            "spilledBytes": figures.spilled_bytes,
            "rereadAvoided": figures.reread_avoided,
            "client": client,
            "fitBytes": fit_bytes,
        }
        for sums in (tools.setdefault(tool, _zero()), total):
            sums["calls"] += 1
            for key in _FIGURES:
                sums[key] += entry[key]
            sums["rereadsAvoided"] += figures.reread_avoided
        entry["runningTokens"] = total["modelTokens"]
        calls.append(entry)
    return {
        "sessionId": session_id,
        "calls": calls,
        "tools": dict(sorted(tools.items())),
        "total": total,
    }


def _measured_now(tool: str, result: dict[str, Any], fit: Fit) -> Measure:
    """A call recorded before the ledger: measured from its stored result."""
    text = model_text(tool, result, fit=fit)
    return measure(tool, result, text)
