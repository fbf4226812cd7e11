"""Tool arguments: parsed and checked against the limits in force.

Each tool's arguments are a pydantic model with the contract's camelCase
names. Ranges that depend on ``Limits`` (Read's window, Glob's limit, Bash's
timeout) are checked in :func:`parse_args`, so an embedding program's limits
apply. Types are strict JSON types, the same for every tool (a string "5"
is not a number). Every failure becomes ``TOOL_INVALID_ARGUMENT`` with a
message that names the argument and what it accepts.

Pieces:
    ReadArgs, GlobArgs, GrepArgs, BashArgs   the four argument models
    OUTPUT_MODES                             Grep's accepted spellings
    parse_args                               name + raw dict + limits -> model
"""

from __future__ import annotations

import json
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
    # Strict: JSON types are taken as they are, for every tool alike (a string
    # "5" is not a number, true is not 1, 5.0 is not an integer).
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=True)


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
    timeout: float | None = Field(default=None, allow_inf_nan=False)
    description: str | None = None


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


# What a strict type error says the argument must be.
_WANTED = {
    "int_type": "an integer",
    "float_type": "a number",
    "finite_number": "a finite number",
    "string_type": "a string",
    "bool_type": "true or false",
}


def _json_kind(value: object) -> str:
    """The JSON type of a value, as an agent would name it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _describe(tool: str, err: ValidationError) -> str:
    names = ", ".join((f.alias or n) for n, f in ARG_MODELS[tool].model_fields.items())
    parts: list[str] = []
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "arguments"
        if e["type"] == "extra_forbidden":
            parts.append(f"unknown argument '{where}' ({tool} takes {names})")
        elif e["type"] == "missing":
            parts.append(f"'{where}' is required")
        elif e["type"] in _WANTED:
            got = _json_kind(e["input"])
            shown = f" {json.dumps(e['input'])[:40]}" if got in ("a string", "a number") else ""
            parts.append(f"'{where}' must be {_WANTED[e['type']]}, not {got}{shown}")
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
