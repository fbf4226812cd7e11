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
  image Read's width x height / 750;
- ``modelBytes``: that text's UTF-8 bytes;
- ``elidedBytes``: what the tool saw that the model did not (``elided_bytes``);
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
    elided_bytes   what the tool saw that the model did not, per tool, from the result
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

from toolbound.bounds.utf8 import utf8_len
from toolbound.fit import Fit
from toolbound.listeners import is_job_call
from toolbound.model_text import model_text
from toolbound.store.conn import Conn
from toolbound.store.tokens import estimate_tokens, image_tokens

_STREAMS = ("stdout", "stderr")


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
    """The figures of one call of ``tool`` whose result was ``result``, sent as ``text``."""
    return Measure(
        model_tokens=estimate_tokens(text) + _image_tokens(tool, result),
        model_bytes=utf8_len(text),
        elided_bytes=elided_bytes(tool, result),
        spilled_bytes=spilled_bytes(result),
        reread_avoided=tool == "Read" and result.get("unchanged") is True,
    )


def _image_tokens(tool: str, result: dict[str, Any]) -> int:
    """An image Read sends beside its text: width x height / 750 tokens (CONTRACT 15)."""
    image = result.get("image") if tool == "Read" else None
    if not isinstance(image, dict):
        return 0
    return image_tokens(int(image["width"]), int(image["height"]))


def elided_bytes(tool: str, result: dict[str, Any]) -> int:
    """What ``tool`` saw that the model did not, in bytes, from ``result``'s fields alone.

    - An error result: 0 (the tool refused; nothing it saw was held back).
    - Bash: for each stream, its total bytes (``totals``) minus the UTF-8
      bytes of the stream as kept in the result, at least 0. That covers
      what the result budget cut, what the capture ceiling omitted and what
      a terminal rewrite collapsed. A cut stream's marker is part of the
      kept text (the model reads it where the cut was), so the figure is
      short of the cut by the marker's bytes.
    - Read: the bytes clipped off long lines, never the unread rest of the
      file: a window is not an elision, and its notice names the next
      offset. The result tells them when the window is the whole file
      (offset 0 and ``totalLines`` present: it reached the end), as
      ``fileBytes`` minus the content's bytes, at least 0 (net of invalid
      bytes, each shown as a 3-byte U+FFFD); a window that starts later or
      stops before the end does not tell its lines' file bytes, and counts
      0. A re-read answered ``unchanged`` counts 0 (it is the re-read
      avoided).
    - Grep, Glob, and every other tool: 0. A page tells how many entries it
      cut (``count``, ``truncated``) but not their bytes, and every entry it
      cut comes back with the next page.
    """
    if "error" in result:
        return 0
    try:
        if tool == "Bash":
            return sum(
                max(0, int(result["totals"][s]["bytes"]) - utf8_len(result[s])) for s in _STREAMS
            )
        whole_file = result.get("offset") == 0 and result.get("totalLines") is not None
        if tool == "Read" and whole_file and result.get("unchanged") is not True:
            return max(0, int(result["fileBytes"]) - utf8_len(result["content"]))
    except (KeyError, TypeError, ValueError, AttributeError):
        return 0  # a stored row of another shape: nothing it tells
    return 0


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
