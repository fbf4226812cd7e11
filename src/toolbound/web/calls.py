"""What the page shows of one tool call, derived from what the host saw: pure.

The page lists a session's calls as rows (tool, a short form of the
arguments, the description, status, duration, a "cut" badge); one call shows
its full arguments, its result, the model view (the text the model read and
its token estimate) and "open full output" for the outputs a result names,
or why an output can no longer be opened. Everything here is a function of a
call's record (start, result, timings) and of where its session runs, so
live calls and stored ones render alike. What a result means (its status,
outcome lines, outputs, the arguments' line) is its tool's view's
(``toolbound.views``): the page draws what these rows say.

Pieces:
    CallRecord    what is known of one call: who, what, when, how it ended
    status_of     a record -> its status: crashed, running, or its tool's view's
    reread_of     an "unchanged" Read -> the earlier call that sent its window
    short_args    a call's arguments -> one line for the list (``views.short_args``)
    outputs_of    a result -> the outputs "open full output" can page (``views.outputs``)
    Origin        where a call's session runs, and whether it has ended
    gone_reason   why an output cannot be opened here (ended session, other machine)
    model_view    a record -> the model's text, its bytes and its tokens
    summary       a record -> the JSON row the page lists
    detail        a record -> everything the page shows of one call
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolbound import views
from toolbound.fit import NO_FIT, Fit
from toolbound.limits import ProfileName
from toolbound.results import ResultEvent
from toolbound.store.tokens import estimate_tokens
from toolbound.views import StatusName


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
    profile: ProfileName = "exact"
    # The client the result went to and the per-result cap its text was kept within.
    fit: Fit = NO_FIT


def status_of(record: CallRecord) -> StatusName:
    """A crash is ``error`` and a call without a result ``running``; past that, what the
    tool's view says of its result (``toolbound.views.status``).

    So a tool error is ``error`` and a timeout ``timedOut``; a Bash command
    that exited non-zero or died of a signal is ``error``, an aborted one
    ``aborted``; a background job's own call is its state's (``killed`` when
    stopped, ``timedOut`` past its timeout); a Bash call that started a job,
    and JobOutput and JobStop of any job, are ``done``: the job's state is
    their content, not their outcome.
    """
    if record.failed is not None:
        return "error"
    if record.result is None:
        return "running"
    return views.status(record.tool, record.result).name


def reread_of(record: CallRecord, records: list[CallRecord]) -> str | None:
    """The call whose result sent the window an "unchanged" Read refers to, if listed.

    That is the latest earlier Read in ``records`` (the session's calls in
    order) of the same file and window (``offset``, ``limit``) that sent its
    content: the one the economy profile's re-read record names.
    """
    result = record.result
    if not result or not views.reread_avoided(record.tool, result):
        return None
    limit = record.args.get("limit") if isinstance(record.args, dict) else None
    found: str | None = None
    for earlier in records:
        if earlier.tool_call_id == record.tool_call_id:
            break
        sent = earlier.result
        if (
            earlier.tool == "Read"
            and sent is not None
            and "error" not in sent
            and sent.get("unchanged") is not True
            and sent.get("path") == result.get("path")
            and sent.get("offset") == result.get("offset")
            and isinstance(earlier.args, dict)
            and earlier.args.get("limit") == limit
        ):
            found = earlier.tool_call_id
    return found


short_args = views.short_args
outputs_of = views.outputs


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


def _outcomes(record: CallRecord) -> list[views.Outcome]:
    return [] if record.result is None else views.outcomes(record.tool, record.result)


def detail(
    record: CallRecord, origin: Origin, here: str, *, unchanged_since: str | None = None
) -> dict[str, Any]:
    """One call as the page shows it: its row, full arguments, result and model view.

    ``outcomes`` are the lines the page shows first with their status
    (``{"status", "text"}``: a command's end, a job's state, each listed job's);
    each output says whether it can be opened (``gone``: why not);
    ``unchangedSince`` is an "unchanged" Read's earlier call (``reread_of``).
    """
    outputs = [
        {"name": o["name"], "path": o["path"], "gone": gone_reason(o, origin, here)}
        for o in outputs_of(record.tool, record.result)
    ]
    return {
        **summary(record),
        "outcomes": [o.to_wire() for o in _outcomes(record)],
        "args": record.args,
        "result": record.result,
        "model": model_view(record),
        "outputs": outputs,
        "unchangedSince": unchanged_since,
    }
