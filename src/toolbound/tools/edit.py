"""Edit: an exact replacement in a workspace file the session has Read (CONTRACT section 10).

The tool is the edit core's ``edit_file`` in a worker thread: the path is kept
inside the workspace (``resolve_target``), the session's read record decides
whether the file may change, and the result carries the bounded diff.

Pieces:
    run  the tool: EditArgs -> EditResult (or a ToolError)
"""

from __future__ import annotations

import asyncio

from toolbound.arguments import EditArgs
from toolbound.context import ToolContext
from toolbound.edit import ChangeResult, edit_file, resolve_target
from toolbound.results import EditResult


def _edit(args: EditArgs, ctx: ToolContext) -> ChangeResult:
    return edit_file(
        resolve_target(ctx.roots, args.path, tool="Edit"),
        old_string=args.old_string,
        new_string=args.new_string,
        replace_all=args.replace_all,
        record=ctx.record,
        call_id=ctx.tool_call_id,
        limits=ctx.limits,
    )


async def run(args: EditArgs, ctx: ToolContext) -> EditResult:
    """Replace ``oldString`` with ``newString`` in ``path``, atomically."""
    change = await asyncio.to_thread(_edit, args, ctx)
    return EditResult.model_validate(change.to_wire())
