"""Tool arguments: parsed and checked against the limits in force.

Each tool's arguments are a pydantic model with the contract's camelCase
names. Ranges that depend on ``Limits`` (Read's window, Glob's limit, Bash's
timeout) are checked in :func:`parse_args`, so an embedding program's limits
apply. Every failure becomes ``TOOL_INVALID_ARGUMENT`` with a message that
names the argument and what it accepts.

Pieces:
    ReadArgs, GlobArgs, GrepArgs, BashArgs   the four argument models
    OUTPUT_MODES                             Grep's accepted spellings
    parse_args                               name + raw dict + limits -> model
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from toolbound.limits import Limits
from toolbound.results import ErrorCode, ToolError

OutputMode = Literal["content", "filesWithMatches", "count"]

OUTPUT_MODES: dict[str, OutputMode] = {
    "content": "content",
    "filesWithMatches": "filesWithMatches",
    "files_with_matches": "filesWithMatches",
    "files-with-matches": "filesWithMatches",
    "count": "count",
}


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ReadArgs(_Args):
    path: str = Field(min_length=1)
    offset: int = Field(default=0, ge=0)
    limit: int | None = None


class GlobArgs(_Args):
    pattern: str = Field(min_length=1)
    path: str | None = None
    limit: int | None = None


class GrepArgs(_Args):
    pattern: str = Field(min_length=1)
    path: str | None = None
    glob: str | None = None
    type: str | None = None
    output_mode: OutputMode = Field(default="content", alias="outputMode")
    head_limit: int | None = Field(default=None, ge=1, alias="headLimit")
    offset: int = Field(default=0, ge=0)
    case_insensitive: bool = Field(default=False, alias="caseInsensitive")
    multiline: bool = False
    before: int | None = Field(default=None, ge=0)
    after: int | None = Field(default=None, ge=0)

    @field_validator("output_mode", mode="before")
    @classmethod
    def _spellings(cls, value: object) -> object:
        if isinstance(value, str) and value in OUTPUT_MODES:
            return OUTPUT_MODES[value]
        return value


class BashArgs(_Args):
    command: str
    timeout: float | None = None
    description: str | None = None

    @field_validator("timeout", mode="before")
    @classmethod
    def _number(cls, value: object) -> object:
        # bool is an int in Python; a timeout of True is not a number of seconds.
        if isinstance(value, bool) or (value is not None and not isinstance(value, int | float)):
            raise ValueError("must be a number of seconds")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("must be a finite number of seconds")
        return value


ARG_MODELS: dict[str, type[_Args]] = {
    "Read": ReadArgs,
    "Glob": GlobArgs,
    "Grep": GrepArgs,
    "Bash": BashArgs,
}


def _invalid(tool: str, detail: str) -> ToolError:
    return ToolError(
        ErrorCode.INVALID_ARGUMENT,
        f"Invalid arguments for {tool}: {detail}. Fix the arguments and call again.",
    )


def _describe(tool: str, err: ValidationError) -> str:
    names = ", ".join((f.alias or n) for n, f in ARG_MODELS[tool].model_fields.items())
    parts: list[str] = []
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "arguments"
        if e["type"] == "extra_forbidden":
            parts.append(f"unknown argument '{where}' ({tool} takes {names})")
        elif e["type"] == "missing":
            parts.append(f"'{where}' is required")
        else:
            parts.append(f"'{where}' {e['msg'].lower()}")
    return "; ".join(parts)


def parse_args(tool: str, raw: object, limits: Limits) -> Any:
    """Validate ``raw`` into the tool's argument model, or raise TOOL_INVALID_ARGUMENT."""
    if not isinstance(raw, dict):
        raise _invalid(tool, "arguments must be a JSON object")
    try:
        args = ARG_MODELS[tool].model_validate(raw)
    except ValidationError as err:
        raise _invalid(tool, _describe(tool, err)) from None
    _check_ranges(tool, args, limits)
    return args


def _check_ranges(tool: str, args: _Args, limits: Limits) -> None:
    if isinstance(args, ReadArgs) and args.limit is not None:
        if not 1 <= args.limit <= limits.read_window_lines:
            raise _invalid(tool, f"'limit' must be 1-{limits.read_window_lines} lines")
    elif isinstance(args, GlobArgs) and args.limit is not None:
        if not 1 <= args.limit <= limits.glob_limit_max:
            raise _invalid(tool, f"'limit' must be 1-{limits.glob_limit_max}")
    elif isinstance(args, BashArgs):
        if not args.command.strip():
            raise _invalid(tool, "'command' is empty; give the shell command to run")
        lo, hi = limits.bash_timeout_min_s, limits.bash_timeout_max_s
        if args.timeout is not None and not lo <= args.timeout <= hi:
            raise _invalid(
                tool,
                f"'timeout' must be {lo:g}-{hi:g} seconds (got {args.timeout:g}); "
                f"the default is {limits.bash_timeout_default_s:g}",
            )
