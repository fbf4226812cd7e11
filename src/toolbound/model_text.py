"""``model_text``: the one text the model reads for a tool result (CONTRACT section 8).

A pure function of the result dict. The MCP text block, the ``text`` of every
result event (``host.stream``, ``toolbound call --events``, the store's replay),
``toolbound call --text`` and the web view's model view are all this text; no
adapter renders a result on its own.

Each tool's view (``toolbound.views``) renders its results; the shapes, in
brief: an error as ``TOOL_CODE: message``; Read's window as it is then the
notice in brackets (an image as one line naming it and its scaling); Glob one
path a line; List a tree; Grep ripgrep's heading layout; Bash the outcome
first (``[exit status 0]``), then each non-empty stream inside its own
``<stdout>`` / ``<stderr>`` tags, the seed's markers verbatim; a background
job's start, pages and list as ``[job job_… state]`` lines (CONTRACT section
9); Edit, Write and ApplyPatch a summary line per file, the diff, the notice.

With a fit (``toolbound.fit``: the client's per-result cap, CONTRACT section
14) the whole text is kept within the cap by the last guard,
``bounds.whole.within``: the tools cut to budgets shrunk to the cap already,
so the guard cuts only what their markers and notices add, and says so.

Pieces:
    model_text   tool name + result dict (+ fit) -> the model's text
"""

from __future__ import annotations

from typing import Any

from toolbound import views
from toolbound.bounds.whole import within
from toolbound.fit import NO_FIT, Fit


def model_text(tool: str, result: dict[str, Any], *, fit: Fit = NO_FIT) -> str:
    """The text the model reads for ``result``, a result dict of ``tool``, within ``fit``.

    A dict that is not one of the tool's result shapes (an unknown tool's, or
    a stored row from another version) reads as its JSON, never an exception.
    """
    text = views.text(tool, result)
    if not fit.capped:
        return text
    return within(text, max_bytes=fit.max_bytes, max_lines=fit.max_lines, client=fit.client)
