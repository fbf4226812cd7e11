"""Write: create a workspace file, or overwrite one the session has Read (CONTRACT section 10).

The tool is the edit core's ``write_file`` in a worker thread: the path is kept
inside the workspace (``resolve_target``), missing parent folders are created,
an existing file must have been Read and be unchanged since, and the result
carries the bounded diff.

Pieces:
    run  the tool: WriteArgs -> WriteResult (or a ToolError)
"""

from __future__ import annotations

import asyncio

from toolbound.context import ToolContext
from toolbound.edit import ChangeResult, resolve_target, write_file
from toolbound.models.change import WriteArgs, WriteResult


def _write(args: WriteArgs, ctx: ToolContext) -> ChangeResult:
    return write_file(
        resolve_target(ctx.roots, args.path, tool="Write"),
        content=args.content,
        record=ctx.record,
        call_id=ctx.tool_call_id,
        limits=ctx.limits,
    )


async def run(args: WriteArgs, ctx: ToolContext) -> WriteResult:
    """Write ``content`` to ``path``, atomically."""
    change = await asyncio.to_thread(_write, args, ctx)
    return WriteResult.model_validate(change.to_wire())
