"""List's arguments and result (CONTRACT section 15).

Pieces:
    ListArgs, ListEntry, ListResult
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from toolbound.arguments import Args
from toolbound.results import WireModel, _optional


class ListArgs(Args):
    path: str | None = Field(default=None, description="Folder to list (default: the workspace).")
    depth: int | None = Field(default=None, description="Levels of subfolders to list, {range}.")
    limit: int | None = Field(default=None, description="Most entries to return, {range}.")


class ListEntry(WireModel):
    path: str
    type: Literal["dir", "file", "link"]
    # A file's size in bytes; a folder's count of listed entries.
    size: int | None = _optional()
    entries: int | None = _optional()


class ListResult(WireModel):
    path: str
    entries: list[ListEntry]
    count: int
    truncated: bool
    notice: str | None = _optional()
