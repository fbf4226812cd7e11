"""JobStop: stop a background job's whole tree and return its final output (CONTRACT section 9).

Pieces:
    run  the tool: JobStopArgs -> JobOutputResult (or a ToolError)
"""

from __future__ import annotations

from toolbound.context import ToolContext
from toolbound.jobs.models import JobOutputResult
from toolbound.jobs.table import require
from toolbound.models.jobs import JobStopArgs


async def run(args: JobStopArgs, ctx: ToolContext) -> JobOutputResult:
    """Stop the job (TERM, grace, KILL, reap) and return its output since the last JobOutput."""
    return await require(ctx.jobs).stop(args.job_id)
