"""Edit: exact replacements in a workspace file the session has Read (CONTRACT sections 10, 15).

The tool is the edit core's ``edit_file`` in a worker thread: the path is kept
inside the workspace (``resolve_target``), the session's read record decides
whether the file may change, and the result carries the bounded diff. The
multi-edit form (``edits``) with one edit is the single form.

Pieces:
    run  the tool: EditArgs -> EditResult (or a ToolError)
"""

from __future__ import annotations

import asyncio

from toolbound.context import ToolContext
from toolbound.edit import ChangeResult, edit_file, resolve_target
from toolbound.edit.replace import EditSpec
from toolbound.models.change import EditArgs, EditResult


def _edit(args: EditArgs, ctx: ToolContext) -> ChangeResult:
    target = resolve_target(ctx.roots, args.path, tool="Edit")
    if args.edits is not None and len(args.edits) > 1:
        edits = [EditSpec(e.old_string, e.new_string, e.replace_all) for e in args.edits]
        return edit_file(
            target, edits=edits, record=ctx.record, call_id=ctx.tool_call_id, limits=ctx.limits
        )
    one = args.edits[0] if args.edits is not None else args
    return edit_file(
        target,
        old_string=one.old_string or "",
        new_string=one.new_string or "",
        replace_all=one.replace_all,
        record=ctx.record,
        call_id=ctx.tool_call_id,
        limits=ctx.limits,
    )


async def run(args: EditArgs, ctx: ToolContext) -> EditResult:
    """Replace ``oldString`` with ``newString`` in ``path``, atomically."""
    change = await asyncio.to_thread(_edit, args, ctx)
    return EditResult.model_validate(change.to_wire())
