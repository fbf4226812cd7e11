"""Grep's arguments and its three results (content, filesWithMatches, count).

Pieces:
    GrepArgs, GrepMatch, GrepContentResult, GrepFilesResult, GrepFileCount, GrepCountResult
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pydantic import Field, field_validator

from toolbound.arguments import OUTPUT_MODES, Args, OutputMode
from toolbound.results import WireModel, _optional


class GrepArgs(Args):
    program_arguments: ClassVar[Mapping[str, str]] = {
        "pattern": "search for a shorter pattern (or several shorter ones, one call each)",
        "glob": "use a shorter glob",
        "type": "use a shorter type name",
    }

    pattern: str = Field(min_length=1, description="Regex (ripgrep syntax).")
    path: str | None = Field(default=None, description="File or folder to search.")
    glob: str | None = Field(default=None, description="Only files matching this glob.")
    type: str | None = Field(default=None, description="Only files of this rg type.")
    output_mode: OutputMode = Field(default="content", alias="outputMode")
    head_limit: int | None = Field(
        default=None, ge=1, alias="headLimit", description="Most matches to return."
    )
    offset: int = Field(default=0, ge=0, description="Matches to skip (paging).")
    case_insensitive: bool = Field(default=False, alias="caseInsensitive")
    multiline: bool = False
    before: int | None = Field(default=None, ge=0, description="Context lines.")
    after: int | None = Field(default=None, ge=0, description="Context lines.")

    @field_validator("output_mode", mode="before")
    @classmethod
    def _spellings(cls, value: object) -> object:
        if isinstance(value, str) and value in OUTPUT_MODES:
            return OUTPUT_MODES[value]
        return value


class GrepMatch(WireModel):
    path: str
    line: int
    text: str
    # True on a before/after line; absent on a match.
    context: bool | None = _optional()
    # A clipped line's window: the 1-based character of the line it starts at; absent
    # when the text starts at the line's start.
    column: int | None = _optional()


class GrepContentResult(WireModel):
    matches: list[GrepMatch]
    count: int
    files: int
    truncated: bool
    notice: str | None = _optional()


class GrepFilesResult(WireModel):
    files: list[str]
    count: int
    truncated: bool
    notice: str | None = _optional()


class GrepFileCount(WireModel):
    path: str
    count: int


class GrepCountResult(WireModel):
    counts: list[GrepFileCount]
    count: int
    truncated: bool
    notice: str | None = _optional()
