"""JobOutput: a page of a background job's output, or the session's jobs (CONTRACT section 9).

The tool is the host's job table (``toolbound.jobs``): it waits as asked
(``waitS``, ``until``), then pages each stream's log within the shell budgets.

Pieces:
    run  the tool: JobOutputArgs -> JobOutputResult | JobListResult (or a ToolError)
"""

from __future__ import annotations

from toolbound.context import ToolContext
from toolbound.jobs.models import JobListResult, JobOutputResult
from toolbound.jobs.table import require
from toolbound.models.jobs import JobOutputArgs


async def run(args: JobOutputArgs, ctx: ToolContext) -> JobOutputResult | JobListResult:
    """The job's output from ``since`` (after waiting), or the list of jobs without ``jobId``."""
    return await require(ctx.jobs).output(args, ctx.abort)
