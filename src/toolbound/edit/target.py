"""Where Edit and Write may write: inside the workspace, nowhere else.

The roots' own resolution (``Roots.resolve``: symlinks resolved, ``~``
expanded, relative paths workspace-relative) decides where a path leads; a
path that leads outside the workspace is refused with ``TOOL_PATH_NOT_ALLOWED``,
whether by ``../``, an absolute path, or a symlink on the way. This session's
scratch dir and the ``--allow-external`` folders are readable roots, not
writable ones. A symlink inside the workspace to a file inside it is followed:
the file it points to is changed and the link stays.

Pieces:
    resolve_target  a tool's ``path`` -> the Resolved file to change, or the refusal
"""

from __future__ import annotations

from toolbound.paths import Resolved, Roots
from toolbound.results import ErrorCode, ToolError


def _outside(path: str, roots: Roots, where: str, tool: str) -> ToolError:
    return ToolError(
        ErrorCode.PATH_NOT_ALLOWED,
        f"{path} leads {where}, outside the workspace ({roots.workspace}). {tool} changes "
        "files in the workspace only (not the scratch dir, not approved external folders); "
        "give a path inside the workspace.",
    )


def resolve_target(roots: Roots, path: str, *, tool: str) -> Resolved:
    """The file ``path`` names inside the workspace (it need not exist yet), or a ToolError."""
    if path.strip() == "":
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT, f"path is empty; give the file {tool} should change."
        )
    try:
        resolved = roots.resolve(path)
    except ToolError as err:
        if err.code != ErrorCode.PATH_NOT_ALLOWED:
            raise
        raise _outside(path, roots, "elsewhere", tool) from None
    if resolved.root == "scratch":
        raise _outside(path, roots, f"into this session's scratch dir ({resolved.real})", tool)
    if resolved.root == "external":
        raise _outside(path, roots, f"into an approved external folder ({resolved.real})", tool)
    if resolved.real == roots.workspace:
        raise ToolError(
            ErrorCode.IS_DIRECTORY,
            f"{path} is the workspace folder itself; {tool} changes a file. Give a file's path.",
        )
    return resolved
