"""One view per tool: what its results mean, beside their shapes (``toolbound.models``).

A tool's view reads a result dict of the tool (a live one or a stored one,
any version) and says what it means: the text the model reads, its status
(and whether the protocols call it an error), the outcome lines the page
shows first, the outputs a viewer can page, the bytes the tool saw that the
model did not, the image sent beside the text, a re-read avoided, and a
call's arguments on one line. Everything that shows or counts a result
asks here: ``model_text``, ``results.is_error`` (MCP ``isError``, the CLI's
exit code), the MCP server's image block, the context ledger, and the web
view's rows and call pages (the page draws what the rows' JSON says, it
does not work it out again).

A tool's view is named in ``VIEWS`` and imported on its first use; the
registry's spec gives it as ``ToolSpec.view``, and a test holds ``VIEWS`` to
the registry's tools. Adding a tool: its view module here, one line in
``VIEWS``.

The functions below are the dispatch: they answer for what every tool
shares, an error result (``TOOL_CODE: message``, an error, no outputs,
nothing elided), a tool no view knows (its JSON; a timeout is still an
error), and a dict that is none of its tool's shapes (a row of another
version: its JSON, done, nothing elided), and ask the tool's view for the
rest.

Pieces:
    View, Status, Outcome, the statuses   see ``toolbound.views.base``
    VIEWS          tool name -> its view, as "module:Name"
    view_for       a tool's view (one for an unknown tool's results)
    text           tool + result -> the model's text (before a fit)
    status         tool + result -> its Status
    outcomes       tool + result -> the lines the page shows first
    outputs        tool + result -> the files a viewer can page
    elided_bytes   tool + result -> what the tool saw that the model did not
    image          tool + result -> the image sent beside the text, if any
    image_tokens   tool + result -> its tokens
    reread_avoided tool + result -> a re-read answered without the window
    short_args     tool + arguments -> one line for a list of calls
"""

from __future__ import annotations

import importlib
import json
from typing import Any

from toolbound.views.base import (
    ABORTED,
    DONE,
    ERROR,
    FAILED,
    KILLED,
    RUNNING,
    TIMED_OUT,
    Outcome,
    Status,
    StatusName,
    View,
)

__all__ = [
    "ABORTED",
    "DONE",
    "ERROR",
    "FAILED",
    "KILLED",
    "RUNNING",
    "SHORT_ARGS_CHARS",
    "TIMED_OUT",
    "VIEWS",
    "Outcome",
    "Status",
    "StatusName",
    "View",
    "elided_bytes",
    "image",
    "image_tokens",
    "outcomes",
    "outputs",
    "reread_avoided",
    "short_args",
    "status",
    "text",
    "view_for",
]

VIEWS: dict[str, str] = {
    "Read": "toolbound.views.read:ReadView",
    "Glob": "toolbound.views.glob:GlobView",
    "Grep": "toolbound.views.grep:GrepView",
    "Bash": "toolbound.views.bash:BashView",
    "Edit": "toolbound.views.change:EditView",
    "Write": "toolbound.views.change:WriteView",
    "JobOutput": "toolbound.views.jobs:JobView",
    "JobStop": "toolbound.views.jobs:JobView",
    "JobInput": "toolbound.views.jobs:JobView",
    "ApplyPatch": "toolbound.views.apply_patch:ApplyPatchView",
    "List": "toolbound.views.listing:ListView",
}

# A list row shows the arguments on one line; past this they end in "…".
SHORT_ARGS_CHARS = 160

# What a view raises on a dict that is none of its tool's shapes.
_NOT_ITS_SHAPE = (KeyError, TypeError, AttributeError, ValueError)


class _UnknownView(View):
    """The results of a tool no view knows (a name from another version): its JSON;
    a job's as a job's, a timeout and an abort as what they are."""

    def text(self, result: dict[str, Any]) -> str:
        if "jobId" in result:
            from toolbound.views.jobs import job_text

            return job_text(result)
        return _json(result)

    def status(self, result: dict[str, Any]) -> Status:
        if result.get("timedOut") is True:
            return TIMED_OUT
        return ABORTED if result.get("aborted") else DONE


_UNKNOWN = _UnknownView()
_LOADED: dict[str, View] = {}


def view_for(tool: str) -> View:
    """The view of ``tool``, its module imported on first use; an unknown tool's one."""
    view = _LOADED.get(tool)
    if view is None:
        ref = VIEWS.get(tool)
        if ref is None:
            return _UNKNOWN
        module, _, name = ref.partition(":")
        view = _LOADED[tool] = getattr(importlib.import_module(module), name)()
    return view


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _is_error(result: dict[str, Any]) -> bool:
    return "error" in result


def text(tool: str, result: dict[str, Any]) -> str:
    """The text the model reads for ``result`` (``TOOL_CODE: message`` for an error);
    a dict of no shape of the tool's reads as its JSON, never an exception."""
    try:
        if _is_error(result):
            return f"{result['error']['code']}: {result['error']['message']}"
        return view_for(tool).text(result)
    except _NOT_ITS_SHAPE:
        return _json(result)


def status(tool: str, result: dict[str, Any]) -> Status:
    """The result's status: ``ERROR`` for a tool error, else what its view says."""
    if _is_error(result):
        return ERROR
    try:
        return view_for(tool).status(result)
    except _NOT_ITS_SHAPE:
        return DONE


def outcomes(tool: str, result: dict[str, Any]) -> list[Outcome]:
    """The lines the page shows first (a command's end, a job's state), each with its status."""
    if _is_error(result):
        return []
    try:
        return view_for(tool).outcomes(result)
    except _NOT_ITS_SHAPE:
        return []


def outputs(tool: str, result: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The files ``result`` names that a viewer can page with Read (``{"name", "path",
    "offset"}``): a Bash call's spill files, a text Read's file at its window."""
    if not result or _is_error(result):
        return []
    try:
        return view_for(tool).outputs(result)
    except _NOT_ITS_SHAPE:
        return []


def elided_bytes(tool: str, result: dict[str, Any]) -> int:
    """What ``tool`` saw that the model did not, in bytes, from ``result``'s fields alone:
    0 for an error (the tool refused; nothing it saw was held back) and for a tool
    whose results do not tell (a page of Grep or Glob tells how many entries it cut,
    not their bytes, and every entry it cut comes back with the next page)."""
    if _is_error(result):
        return 0
    try:
        return view_for(tool).elided_bytes(result)
    except _NOT_ITS_SHAPE:
        return 0  # a stored row of another shape: nothing it tells


def image(tool: str, result: dict[str, Any]) -> dict[str, Any] | None:
    """The image ``result`` sends beside its text (an image Read's), where the protocol
    carries images: ``{"data", "mimeType", "width", "height", ...}``."""
    if _is_error(result):
        return None
    return view_for(tool).image(result)


def image_tokens(tool: str, result: dict[str, Any]) -> int:
    """The tokens of the image ``result`` sends beside its text: width x height / 750
    (CONTRACT 15); 0 without one."""
    sent = image(tool, result)
    if sent is None:
        return 0
    try:
        return -(-int(sent["width"]) * int(sent["height"]) // 750)
    except _NOT_ITS_SHAPE:
        return 0


def reread_avoided(tool: str, result: dict[str, Any]) -> bool:
    """Whether ``result`` answered a re-read without sending the window again."""
    return not _is_error(result) and view_for(tool).reread_avoided(result)


def _one_line(line: str, max_chars: int) -> str:
    flat = " ".join(line.split())
    return flat if len(flat) <= max_chars else flat[: max_chars - 1] + "…"


def short_args(tool: str, args: Any, *, max_chars: int = SHORT_ARGS_CHARS) -> str:
    """The arguments as one line: the command, the path (and window), the pattern, the job,
    a patch's files; the JSON of arguments the tool's view does not know."""
    line = view_for(tool).short_args(args) if isinstance(args, dict) else None
    return _one_line(_json(args) if line is None else line, max_chars)
