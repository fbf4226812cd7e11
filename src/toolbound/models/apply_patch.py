"""ApplyPatch's arguments and result (CONTRACT section 15).

Pieces:
    ApplyPatchArgs, PatchHunk, PatchFile, ApplyPatchResult
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from toolbound.arguments import Args
from toolbound.results import WireModel, _optional


class ApplyPatchArgs(Args):
    patch: str = Field(
        min_length=1,
        description="The patch, from '*** Begin Patch' to '*** End Patch' (Codex apply_patch).",
    )


class PatchHunk(WireModel):
    matched: Literal["exact", "trailing-space", "whitespace"]
    line: int
    # True when the chunk's new lines were there already (left as they were).
    already_applied: bool | None = _optional()


class PatchFile(WireModel):
    path: str
    action: Literal["add", "update", "delete", "move"]
    hunks: list[PatchHunk]
    # A move's old path (``path`` is the new one).
    moved_from: str | None = _optional(alias="from")
    # True when the file already was as the patch makes it (nothing written).
    already_applied: bool | None = _optional()


class ApplyPatchResult(WireModel):
    files: list[PatchFile]
    diff: str
    truncated: bool
    notice: str | None = _optional()
