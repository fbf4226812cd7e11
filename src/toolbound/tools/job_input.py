"""JobInput: write to a running background job's stdin, then return what it printed (CONTRACT 15).

The job's stdin is a pipe, or with ``tty`` its pseudo-terminal (``jobs.stdin``);
the call writes at most ``job_input_max_bytes``, waits a moment for what the
job prints (until that output pauses, or ``job_input_wait_s``), and pages it
as JobOutput does, from where the previous JobOutput of the job stopped.

Pieces:
    run  the tool: JobInputArgs -> JobOutputResult (or a ToolError)
"""

from __future__ import annotations

from toolbound.context import ToolContext
from toolbound.jobs.models import JobOutputResult
from toolbound.jobs.table import require
from toolbound.models.jobs import JobInputArgs


async def run(args: JobInputArgs, ctx: ToolContext) -> JobOutputResult:
    """Write the input (closing stdin with ``close``) and return the job's output after it."""
    return await require(ctx.jobs).input(args, ctx.abort)
