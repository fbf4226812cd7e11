"""What the page shows of one tool call, derived from what the host saw: pure.

The page lists a session's calls as rows (tool, a short form of the
arguments, the description, status, duration, a "cut" badge); one call shows
its full arguments, its result, the model view (the text the model read and
its token estimate) and "open full output" for the outputs a result names,
or why an output can no longer be opened. Everything here is a function of a
call's record (start, result, timings) and of where its session runs, so
live calls and stored ones render alike.

Pieces:
    CallRecord    what is known of one call: who, what, when, how it ended
    Status        running / done / error / timedOut / aborted
    status_of     a record -> its status
    short_args    a call's arguments -> one line for the list
    outputs_of    a result -> the outputs "open full output" can page
    Origin        where a call's session runs, and whether it has ended
    gone_reason   why an output cannot be opened here (ended session, other machine)
    model_view    a record -> the model's text, its bytes and its tokens
    summary       a record -> the JSON row the page lists
    detail        a record -> everything the page shows of one call
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from toolbound.fit import NO_FIT, Fit
from toolbound.model_text import Profile
from toolbound.results import ResultEvent
from toolbound.store.tokens import estimate_tokens

Status = Literal["running", "done", "error", "timedOut", "aborted"]

# The list row shows arguments on one line; past this they end in "…".
SHORT_ARGS_CHARS = 160


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One call as the host reported it; ``result`` is None while it runs.

    ``failed`` is the crash message of a tool that raised instead of
    returning a result. ``text`` is the result event's model text when the
    event was seen (the hub); a stored call's is rendered from its result
    for ``profile``, the one its row says it was sent under. Times are
    seconds since the epoch.
    """

    tool_call_id: str
    session_id: str
    tool: str
    args: Any
    started_at: float
    ended_at: float | None = None
    result: dict[str, Any] | None = None
    failed: str | None = None
    last_seq: int = -1
    text: str | None = None
    profile: Profile = "exact"
    # The client the result went to and the per-result cap its text was kept within.
    fit: Fit = NO_FIT


def status_of(record: CallRecord) -> Status:
    """A crash or a tool error is ``error``; so is a Bash command that failed.

    A Bash result is ``timedOut`` or ``aborted`` when it says so, ``error``
    when it exited non-zero or was killed by a signal, else ``done``.
    """
    if record.failed is not None:
        return "error"
    result = record.result
    if result is None:
        return "running"
    if "error" in result:
        return "error"
    if result.get("timedOut"):
        return "timedOut"
    if result.get("aborted"):
        return "aborted"
    if "exitCode" in result and (result["exitCode"] != 0 or result.get("signal") is not None):
        return "error"
    return "done"


def _one_line(text: str, max_chars: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= max_chars else flat[: max_chars - 1] + "…"


def short_args(tool: str, args: Any, *, max_chars: int = SHORT_ARGS_CHARS) -> str:
    """The arguments as one line: the command, the path (and window), or the pattern."""
    if not isinstance(args, dict):
        return _one_line(json.dumps(args, ensure_ascii=False), max_chars)
    if tool == "Bash" and isinstance(args.get("command"), str):
        text = args["command"]
    elif tool == "Read" and isinstance(args.get("path"), str):
        window = [f"{k}={args[k]}" for k in ("offset", "limit") if k in args]
        text = " ".join([args["path"], *window])
    elif tool in ("Edit", "Write") and isinstance(args.get("path"), str):
        text = args["path"]
    elif tool in ("Grep", "Glob") and isinstance(args.get("pattern"), str):
        text = args["pattern"] + (f" in {args['path']}" if args.get("path") else "")
    else:
        text = json.dumps(args, ensure_ascii=False)
    return _one_line(text, max_chars)


def outputs_of(tool: str, result: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The outputs of a result that the viewer can page through the Read tool.

    A Bash result names its spill files (``{"name": "stdout", "path"}``); a
    Read result names its file at its window (``{"name": "file", "path",
    "offset"}``).
    """
    if not result or "error" in result:
        return []
    if tool == "Bash":
        spill = result.get("spill") or {}
        return [
            {"name": stream, "path": spill[stream], "offset": 0}
            for stream in ("stdout", "stderr")
            if spill.get(stream)
        ]
    if tool == "Read" and isinstance(result.get("path"), str):
        return [{"name": "file", "path": result["path"], "offset": result.get("offset", 0)}]
    return []


# The outputs that live in the session's scratch dir (a Bash call's spill files).
_SCRATCH_OUTPUTS = ("stdout", "stderr")


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a call's session runs: ``host`` None when unknown (an older store)."""

    ended: bool
    host: str | None


def gone_reason(output: dict[str, Any], origin: Origin, here: str) -> str | None:
    """Why ``output`` cannot be opened by a web view on machine ``here``; None if it can.

    A spill file is removed with its session's scratch dir when the session
    ends; any output file of a session on another machine is on that machine.
    """
    if output["name"] in _SCRATCH_OUTPUTS and origin.ended:
        return (
            "The session has ended: its spill files were removed with its scratch dir. "
            "What the model read is in the model view."
        )
    if origin.host is not None and origin.host != here:
        return f"This output is a file on {origin.host}; this web view runs on {here}."
    return None


def model_view(record: CallRecord) -> dict[str, Any] | None:
    """What the model read for the call: ``{"text", "bytes", "tokens", "client",
    "fitBytes"}``; None while it runs.

    The text is the result event's (``ResultEvent.of`` renders a stored
    call's for the profile and fit it was sent under, as the store's replay
    does); tokens are ``estimate_tokens`` of it; ``client`` and ``fitBytes`` the
    client recognised and the per-result cap in force (None: none).
    """
    if record.result is None:
        return None
    text = record.text
    if text is None:
        event = ResultEvent.of(
            record.tool,
            record.tool_call_id,
            0,
            record.result,
            profile=record.profile,
            fit=record.fit,
        )
        text = event["text"]
    return {
        "text": text,
        "bytes": len(text.encode()),
        "tokens": estimate_tokens(text),
        "client": record.fit.client,
        "fitBytes": record.fit.max_bytes,
    }


def description_of(args: Any) -> str | None:
    """The ``description`` the agent gave the call (Bash's), if any."""
    if isinstance(args, dict) and isinstance(args.get("description"), str):
        return str(args["description"])
    return None


def _duration_ms(record: CallRecord) -> int | None:
    if record.result is not None and isinstance(record.result.get("durationMs"), int):
        return int(record.result["durationMs"])
    if record.ended_at is None:
        return None
    return max(0, round((record.ended_at - record.started_at) * 1000))


def summary(record: CallRecord) -> dict[str, Any]:
    """The row the page lists for a call (JSON-able, camelCase).

    The full arguments are left to ``detail``: a session of hundreds of
    calls (a Write carries a whole file) lists in a few kilobytes.
    """
    result = record.result
    return {
        "toolCallId": record.tool_call_id,
        "sessionId": record.session_id,
        "tool": record.tool,
        "argsShort": short_args(record.tool, record.args),
        "description": description_of(record.args),
        "status": status_of(record),
        "startedAt": record.started_at,
        "durationMs": _duration_ms(record),
        "cut": bool(result and result.get("truncated")),
        "lastSeq": record.last_seq,
        "failed": record.failed,
        "outputs": [
            {"name": o["name"], "path": o["path"]} for o in outputs_of(record.tool, result)
        ],
    }


def detail(record: CallRecord, origin: Origin, here: str) -> dict[str, Any]:
    """One call as the page shows it: its row, full arguments, result and model view.

    Each output says whether it can be opened (``gone``: why not).
    """
    outputs = [
        {"name": o["name"], "path": o["path"], "gone": gone_reason(o, origin, here)}
        for o in outputs_of(record.tool, record.result)
    ]
    return {
        **summary(record),
        "args": record.args,
        "result": record.result,
        "model": model_view(record),
        "outputs": outputs,
    }
