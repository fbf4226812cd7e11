"""Glob's arguments and result.

Pieces:
    GlobArgs, GlobResult
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pydantic import Field

from toolbound.arguments import Args
from toolbound.results import WireModel, _optional


class GlobArgs(Args):
    program_arguments: ClassVar[Mapping[str, str]] = {"pattern": "use a shorter pattern"}

    pattern: str = Field(min_length=1, description="Glob, e.g. **/*.ts")
    path: str | None = Field(default=None, description="Folder to search in.")
    limit: int | None = Field(default=None, description="Most paths to return, {range}.")


class GlobResult(WireModel):
    matches: list[str]
    count: int
    truncated: bool
    notice: str | None = _optional()
