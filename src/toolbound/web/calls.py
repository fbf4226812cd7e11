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
    Status        running / done / error / timedOut / aborted / killed
    status_of     a record -> its status (an error is ``results.is_error``'s or the command's)
    reread_of     an "unchanged" Read -> the earlier call that sent its window
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
from toolbound.limits import ProfileName
from toolbound.results import ResultEvent, is_error
from toolbound.store.tokens import estimate_tokens

Status = Literal["running", "done", "error", "timedOut", "aborted", "killed"]

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
    profile: ProfileName = "exact"
    # The client the result went to and the per-result cap its text was kept within.
    fit: Fit = NO_FIT


def status_of(record: CallRecord) -> Status:
    """A crash is ``error``; so is what ``results.is_error`` calls one (a tool error;
    a timed-out Bash call is ``timedOut``). Past that, only a command says it failed.

    A Bash result (a foreground command, or a background job's own call) is
    ``aborted`` when it says so; a job's is ``killed`` when it was stopped
    (JobStop, the page, its session's end) and ``timedOut`` past its
    timeout; a command that exited non-zero or died of a signal is ``error``.
    Any other result, JobOutput and JobStop of any job among them, is ``done``:
    the job's state is their content, not their outcome.
    """
    if record.failed is not None:
        return "error"
    result = record.result
    if result is None:
        return "running"
    if is_error(result):
        return "timedOut" if result.get("timedOut") is True else "error"
    if result.get("aborted"):
        return "aborted"
    if record.tool == "Bash":
        return _command_status(result)
    return "done"


def _command_status(result: dict[str, Any]) -> Status:
    """A Bash result's own outcome: a command's exit, a job's final state."""
    state = result.get("state")
    if state == "killed":
        return "killed"
    if state == "timedOut":
        return "timedOut"
    if state == "running":  # the start of a background job
        return "done"
    if result.get("exitCode") != 0 or result.get("signal") is not None:
        return "error"
    return "done"


def reread_of(record: CallRecord, records: list[CallRecord]) -> str | None:
    """The call whose result sent the window an "unchanged" Read refers to, if listed.

    That is the latest earlier Read in ``records`` (the session's calls in
    order) of the same file and window (``offset``, ``limit``) that sent its
    content: the one the economy profile's re-read record names.
    """
    result = record.result
    if record.tool != "Read" or not result or result.get("unchanged") is not True:
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


def _one_line(text: str, max_chars: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= max_chars else flat[: max_chars - 1] + "…"


# A patch's file operations (Codex's apply_patch grammar) as the list row names them.
_PATCH_OPS = {
    "*** Add File: ": "add",
    "*** Update File: ": "update",
    "*** Delete File: ": "delete",
    "*** Move to: ": "move to",
}


def _patch_files(patch: str) -> str:
    """ "update a.py, move to b.py, add c.py": the files a patch names, in its order."""
    named = []
    for line in patch.splitlines():
        for head, verb in _PATCH_OPS.items():
            if line.startswith(head):
                named.append(f"{verb} {line[len(head) :].strip()}")
    return ", ".join(named)


def short_args(tool: str, args: Any, *, max_chars: int = SHORT_ARGS_CHARS) -> str:
    """The arguments as one line: the command, the path (and window), the pattern, the job,
    a patch's files."""
    if not isinstance(args, dict):
        return _one_line(json.dumps(args, ensure_ascii=False), max_chars)
    if tool == "Bash" and isinstance(args.get("command"), str):
        text = args["command"]
    elif tool == "List" or (tool == "Read" and isinstance(args.get("path"), str)):
        window = [f"{k}={args[k]}" for k in ("offset", "limit", "pages", "depth") if k in args]
        text = " ".join([str(args.get("path", ".")), *window])
    elif tool == "ApplyPatch" and isinstance(args.get("patch"), str):
        text = _patch_files(args["patch"]) or args["patch"]
    elif tool in ("Edit", "Write") and isinstance(args.get("path"), str):
        text = args["path"]
    elif tool in ("JobOutput", "JobStop"):
        text = " ".join(
            [str(args.get("jobId", "(all jobs)"))]
            + [f"{k}={json.dumps(args[k], ensure_ascii=False)}" for k in args if k != "jobId"]
        )
    elif tool in ("Grep", "Glob") and isinstance(args.get("pattern"), str):
        text = args["pattern"] + (f" in {args['path']}" if args.get("path") else "")
    else:
        text = json.dumps(args, ensure_ascii=False)
    return _one_line(text, max_chars)


def outputs_of(tool: str, result: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The outputs of a result that the viewer can page through the Read tool.

    A Bash result names its spill files (``{"name": "stdout", "path"}``); a
    Read result of text names its file at its window (``{"name": "file",
    "path", "offset"}``). An image or PDF Read has no window of lines to page.
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
    if tool == "Read" and isinstance(result.get("path"), str) and "offset" in result:
        return [{"name": "file", "path": result["path"], "offset": result["offset"]}]
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


def detail(
    record: CallRecord, origin: Origin, here: str, *, unchanged_since: str | None = None
) -> dict[str, Any]:
    """One call as the page shows it: its row, full arguments, result and model view.

    Each output says whether it can be opened (``gone``: why not);
    ``unchangedSince`` is an "unchanged" Read's earlier call (``reread_of``).
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
        "unchangedSince": unchanged_since,
    }
