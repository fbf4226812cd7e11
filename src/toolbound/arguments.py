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

Each tool's argument model lives in its module of ``toolbound.models`` and is
given here by name as well, imported on first use.

Pieces:
    Args                                     the base of the argument models
    ReadArgs, GrepArgs, ...                  every tool's arguments, from ``toolbound.models``
    OUTPUT_MODES                             Grep's accepted spellings
    ARG_MAX_BYTES                            the longest string the kernel takes as one argument
    Limited                                  an argument whose default and range follow the limits
    parse_args                               raw dict -> checked model, defaults filled
    filled                                   an argument parse_args filled, as its type
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from toolbound.lazy import loader
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


T = TypeVar("T")


def filled(value: T | None) -> T:
    """An argument with a host default (``Limited``) as ``parse_args`` left it: never
    None, so a tool needs no fallback of its own. None means the arguments were
    built without their spec's ``parse``: a bug, raised."""
    if value is None:
        raise ValueError("an argument with a host default is unset: parse it with its ToolSpec")
    return value


# Each tool's models live in its own module (``toolbound.models``), imported on
# first use (PEP 562): ``toolbound call Read`` builds Read's models, no others.
_HOMES = {
    "ReadArgs": "toolbound.models.read",
    "GlobArgs": "toolbound.models.glob",
    "ListArgs": "toolbound.models.listing",
    "GrepArgs": "toolbound.models.grep",
    "BashArgs": "toolbound.models.bash",
    "EditOne": "toolbound.models.change",
    "EditArgs": "toolbound.models.change",
    "WriteArgs": "toolbound.models.change",
    "ApplyPatchArgs": "toolbound.models.apply_patch",
    "JobSince": "toolbound.models.jobs",
    "JobOutputArgs": "toolbound.models.jobs",
    "JobStopArgs": "toolbound.models.jobs",
    "JobInputArgs": "toolbound.models.jobs",
}


__getattr__ = loader(__name__, _HOMES, globals())
