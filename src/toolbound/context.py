"""``ToolContext``: what a running tool may use.

It sits below the tools and the search machinery, so a helper such as
``search/files.py`` takes a context without importing from ``tools/``.

Pieces:
    ToolContext  limits, roots, scratch, the call's id, emit, abort, sandbox, read record,
                 the call's budgets (profile, context fill, the client's fit), jobs
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from toolbound.edit.record import ReadRecord
from toolbound.exec.sandbox import UNCONFINED, SandboxPolicy
from toolbound.limits import Limits
from toolbound.paths import Roots
from toolbound.results import Stream
from toolbound.scratch import Scratch
from toolbound.shrink import EXACT_BUDGETS, Budgets

if TYPE_CHECKING:
    from toolbound.jobs.table import JobTable


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a running tool may use.

    ``emit(stream, data)`` sends a chunk event; it is safe to call from any
    thread and does nothing once the call's result is out. ``abort`` is set
    when the call is aborted (``host.abort`` or cancellation of the caller).
    ``sandbox`` is where a command may write and whether it has a network.
    ``record`` is the session's record of what was Read and written (one per
    host): Read adds its windows, Edit and Write check and update it.
    ``budgets`` are the call's budgets (``shrink.Budgets``): the result profile
    in force (CONTRACT section 8), shrunk as the model's context fills and
    fitted to the client's per-result cap (``toolbound.fit``); the host makes
    them as the call starts.
    ``jobs`` is the host's background jobs (None outside a host).
    """

    limits: Limits
    roots: Roots
    scratch: Scratch
    tool_call_id: str
    emit: Callable[[Stream, str], None]
    abort: asyncio.Event
    sandbox: SandboxPolicy = UNCONFINED
    record: ReadRecord = field(default_factory=ReadRecord)
    budgets: Budgets = EXACT_BUDGETS
    jobs: JobTable | None = None
