"""Tool arguments: parsed, checked against the limits in force, defaults filled.

Each tool's arguments are a pydantic model with the contract's camelCase
names and the descriptions its input schema carries. Ranges and defaults that
depend on ``Limits`` (Read's window, Glob's limit, Grep's head limit, Bash's
timeout) are not in the models: each tool's spec gives them
(``toolbound.tools.registry``), :func:`parse_args` checks and fills them, and
the input schema shows them, so an embedding program's limits apply. A field
left ``None`` in a model means "the host default". Types are strict JSON types,
the same for every tool (a string "5" is not a number). Every failure becomes
``TOOL_INVALID_ARGUMENT`` with a message that names the argument and what it
accepts.

Pieces:
    Args                                     the base of the argument models
    ReadArgs, GlobArgs, GrepArgs, BashArgs   the argument models of the tools that look
    ListArgs
    EditArgs, EditOne, WriteArgs             and of the tools that change files
    ApplyPatchArgs
    JobOutputArgs, JobSince, JobStopArgs     and of the two that follow background jobs
    OUTPUT_MODES                             Grep's accepted spellings
    ARG_MAX_BYTES                            the longest string the kernel takes as one argument
    Limited                                  an argument whose default and range follow the limits
    parse_args                               raw dict -> checked model, defaults filled
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from toolbound.results import ErrorCode, ToolError

OutputMode = Literal["content", "filesWithMatches", "count"]

# Linux's MAX_ARG_STRLEN: one argument of a program started is at most 32 pages
# (128 KiB), its terminating NUL included. A longer Bash command (it is
# `bash -c COMMAND`) or Grep pattern cannot start at all (E2BIG).
ARG_MAX_BYTES = 128 * 1024 - 1

OUTPUT_MODES: dict[str, OutputMode] = {
    "content": "content",
    "filesWithMatches": "filesWithMatches",
    "files_with_matches": "filesWithMatches",
    "files-with-matches": "filesWithMatches",
    "count": "count",
}


class Args(BaseModel):
    # Strict: JSON types are taken as they are, for every tool alike (a string
    # "5" is not a number, true is not 1, 5.0 is not an integer).
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, strict=True, defer_build=True
    )
    # Wire names of the string arguments handed to a program as one argument each
    # (at most ARG_MAX_BYTES), with what to do instead of a longer one.
    program_arguments: ClassVar[Mapping[str, str]] = {}

    def problem(self) -> str | None:
        """What is wrong with well-typed arguments, checked before the ranges; None if nothing."""
        return None


class ReadArgs(Args):
    path: str = Field(min_length=1, description="File to read.")
    offset: int = Field(default=0, ge=0, description="Lines to skip before the window starts.")
    limit: int | None = Field(default=None, description="Lines in the window, {range}.")
    pages: str | None = Field(
        default=None, description='PDF pages to read: "N" or "N-M" (a PDF only).'
    )

    def problem(self) -> str | None:
        if self.pages is None:
            return None
        first, dash, last = self.pages.partition("-")
        numbers = [first, last] if dash else [first]
        if not all(n.isascii() and n.isdigit() and int(n) >= 1 for n in numbers) or (
            dash and int(last) < int(first)
        ):
            return f'\'pages\' must be "N" or "N-M" with 1 <= N <= M, not {self.pages!r}'
        return None


class GlobArgs(Args):
    program_arguments: ClassVar[Mapping[str, str]] = {"pattern": "use a shorter pattern"}

    pattern: str = Field(min_length=1, description="Glob, e.g. **/*.ts")
    path: str | None = Field(default=None, description="Folder to search in.")
    limit: int | None = Field(default=None, description="Most paths to return, {range}.")


class ListArgs(Args):
    path: str | None = Field(default=None, description="Folder to list (default: the workspace).")
    depth: int | None = Field(default=None, description="Levels of subfolders to list, {range}.")
    limit: int | None = Field(default=None, description="Most entries to return, {range}.")


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


class BashArgs(Args):
    program_arguments: ClassVar[Mapping[str, str]] = {
        "command": "write the script to a file with Write, then run that file (`bash script.sh`)"
    }

    command: str = Field(description="The shell command.")
    timeout: float | None = Field(
        default=None,
        allow_inf_nan=False,
        description="Seconds, {range} (a background job's: no default, up to a day).",
    )
    description: str | None = Field(
        default=None, description="What the command does, in a few words."
    )
    background: bool = Field(
        default=False,
        description="Run it as a background job: returns a jobId at once (JobOutput, JobStop).",
    )

    def problem(self) -> str | None:
        if not self.command.strip():
            return "'command' is empty; give the shell command to run"
        return None


class JobSince(Args):
    stdout: int = Field(ge=0, description="Byte position in the job's stdout.")
    stderr: int = Field(ge=0, description="Byte position in the job's stderr.")


class JobOutputArgs(Args):
    job_id: str | None = Field(
        default=None,
        alias="jobId",
        min_length=1,
        description="The job (Bash with background: true); leave it out to list the jobs.",
    )
    since: JobSince | None = Field(
        default=None,
        description="Where to read from, a `next` a JobOutput returned; default: where the "
        "previous JobOutput of this job stopped; {stdout: 0, stderr: 0} from the start.",
    )
    wait_s: float | None = Field(
        default=None,
        alias="waitS",
        allow_inf_nan=False,
        description="Seconds to wait for new output, the end, or an `until` line, {range}.",
    )
    until: str | None = Field(
        default=None,
        min_length=1,
        description="RE2 regex (Python syntax without backreferences or look-around): wait "
        "until a line of the output matches it.",
    )

    def problem(self) -> str | None:
        if self.job_id is None and (
            self.since is not None or self.wait_s is not None or self.until is not None
        ):
            return "'since', 'waitS' and 'until' need a 'jobId' (leave them all out to list jobs)"
        return None


class JobStopArgs(Args):
    job_id: str = Field(alias="jobId", min_length=1, description="The job to stop.")


class EditOne(Args):
    """One edit of a multi-edit Edit."""

    old_string: str = Field(
        alias="oldString", description="Exact text to replace, as Read showed it."
    )
    new_string: str = Field(alias="newString", description="The text to put in its place.")
    replace_all: bool = Field(
        default=False, alias="replaceAll", description="Replace every occurrence."
    )


class EditArgs(Args):
    path: str = Field(min_length=1, description="Workspace file to change.")
    # An empty oldString is refused by the edit core, with a message that says what to do.
    old_string: str | None = Field(
        default=None, alias="oldString", description="Exact text to replace, as Read showed it."
    )
    new_string: str | None = Field(
        default=None, alias="newString", description="The text to put in its place."
    )
    replace_all: bool = Field(
        default=False, alias="replaceAll", description="Replace every occurrence."
    )
    edits: list[EditOne] | None = Field(
        default=None,
        min_length=1,
        description="Several edits instead of oldString/newString: applied in order, each "
        "to the text the earlier ones left, all or none.",
    )

    def problem(self) -> str | None:
        single = self.old_string is not None or self.new_string is not None
        if self.edits is not None:
            if single or self.replace_all:
                return (
                    "give either 'edits' or 'oldString'/'newString'/'replaceAll', not both "
                    "(each edit has its own)"
                )
            return None
        if self.old_string is None or self.new_string is None:
            missing = "oldString" if self.old_string is None else "newString"
            return f"'{missing}' is required (or 'edits', a list of {{oldString, newString}})"
        return None


class ApplyPatchArgs(Args):
    patch: str = Field(
        min_length=1,
        description="The patch, from '*** Begin Patch' to '*** End Patch' (Codex apply_patch).",
    )


class WriteArgs(Args):
    path: str = Field(min_length=1, description="Workspace file to create or overwrite.")
    content: str = Field(description="The file's whole new content.")


@dataclass(frozen=True, slots=True)
class Limited:
    """An argument whose default, and maybe inclusive range, follow the limits in force.

    E.g. Read's ``limit``: default 2000, 1-2000 lines. ``unit`` follows the
    numbers in a refusal (" lines"); ``name_default`` makes a refusal repeat
    the value given and the default.
    """

    default: float | None
    lo: float | None = None
    hi: float | None = None
    unit: str = ""
    name_default: bool = False

    @property
    def span(self) -> str | None:
        """The range as the descriptions write it (``1-2000``); None when unbounded."""
        if self.lo is None or self.hi is None:
            return None
        return f"{_number(self.lo)}-{_number(self.hi)}"

    def refusal(self, alias: str, value: float) -> str | None:
        """The argument error for ``value``, or None when it is in range."""
        if self.lo is None or self.hi is None or self.lo <= value <= self.hi:
            return None
        refusal = f"'{alias}' must be {self.span}{self.unit}"
        if self.name_default and self.default is not None:
            refusal += f" (got {_number(value)}); the default is {_number(self.default)}"
        return refusal


def _number(value: float) -> str:
    """A number as an agent writes it: 300, 1.5 (an integer limit stays whole)."""
    return str(value) if isinstance(value, int) else f"{value:g}"


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


def _describe(tool: str, model: type[Args], err: ValidationError) -> str:
    names = ", ".join((f.alias or n) for n, f in model.model_fields.items())
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


def _strings(value: object, where: str) -> Iterator[tuple[str, str]]:
    """Every string in a JSON value, with where it is (``edits.0.oldString``)."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{where}.{i}")


def _lone_surrogate(text: str) -> int | None:
    """Where ``text`` holds a lone surrogate (a JSON ``\\udcff`` escape), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return err.start
    return None


def _string_problem(raw: dict[str, object], program_arguments: Mapping[str, str]) -> str | None:
    """A lone surrogate or a NUL byte in any string argument (no text, path, pattern or
    command can carry one), or a program's argument longer than the kernel takes; None
    when there is none of them."""
    for where, value in _strings(raw, ""):
        if not value.isascii() and (surrogate := _lone_surrogate(value)) is not None:
            return (
                f"'{where}' holds a lone surrogate (U+{ord(value[surrogate]):04X} at character "
                f"{surrogate}), which is not Unicode text; send the text itself (a file name "
                "that is not UTF-8 is written as the tools print it, each such byte as \\xHH)"
            )
        if "\x00" in value:
            return (
                f"'{where}' holds a NUL byte (\\0), which no path, pattern, command line or "
                "text file can carry; remove it (a command can still make one: printf '\\0')"
            )
    for where, way_out in program_arguments.items():
        given = raw.get(where)
        if isinstance(given, str) and len(given) > ARG_MAX_BYTES // 4:
            size = len(given.encode("utf-8", "surrogatepass"))
            if size > ARG_MAX_BYTES:
                return (
                    f"'{where}' is {size} bytes, longer than the {ARG_MAX_BYTES} bytes the "
                    f"kernel takes for one argument of a program (MAX_ARG_STRLEN, 128 KiB); "
                    f"{way_out}"
                )
    return None


def field_names(model: type[Args]) -> dict[str, str]:
    """The model's arguments: wire name (alias) -> attribute name."""
    return {(f.alias or n): n for n, f in model.model_fields.items()}


def parse_args(
    tool: str,
    model: type[Args],
    raw: object,
    *,
    limited: Mapping[str, Limited] | Callable[[Args], Mapping[str, Limited]],
) -> Args:
    """Validate ``raw`` into ``model``, check the ranges, fill the host defaults.

    ``limited`` is keyed by wire name (or made from the arguments, when a range
    depends on another argument: Bash's timeout with ``background``); its
    default, unless None, replaces an argument left out or null. Raises
    TOOL_INVALID_ARGUMENT.
    """
    if not isinstance(raw, dict):
        raise _invalid(tool, "arguments must be a JSON object")
    problem = _string_problem(raw, model.program_arguments)
    if problem is not None:
        raise _invalid(tool, problem)
    try:
        args = model.model_validate(raw)
    except ValidationError as err:
        raise _invalid(tool, _describe(tool, model, err)) from None
    problem = args.problem()
    if problem is not None:
        raise _invalid(tool, problem)
    names = field_names(model)
    unset: dict[str, float] = {}
    if callable(limited):
        limited = limited(args)
    for alias, arg in limited.items():
        value = getattr(args, names[alias])
        if value is None:
            if arg.default is not None:
                unset[names[alias]] = arg.default
            continue
        refusal = arg.refusal(alias, value)
        if refusal is not None:
            raise _invalid(tool, refusal)
    return args.model_copy(update=unset) if unset else args
