"""The grammar of Codex CLI's apply_patch, parsed into file operations (pure: no I/O).

A patch::

    *** Begin Patch
    *** Add File: path            then the new file's lines, each prefixed with "+"
    *** Delete File: path
    *** Update File: path
    *** Move to: new/path         optional, right after Update File
    @@ class Name                 a chunk: "@@" alone, or naming a line the chunk
    @@     def method(self):      follows (several "@@" lines narrow it step by step)
     context line                 " " context, "-" removed, "+" added
    -old line
    +new line
    *** End of File               optional: the chunk's lines end the file
    *** End Patch

Leniency, as Codex's own parser and the models trained on it expect: the
patch may be wrapped in a heredoc (``<<'EOF'`` ... ``EOF``, with or without an
``apply_patch`` in front) or a Markdown code fence; marker lines may carry
spaces around them; the first chunk of an update may leave out its ``@@``;
an empty line between an added file's lines is an empty line of the file;
blank lines between chunks are skipped and an empty line inside a chunk is an
empty context line; ``\\r\\n`` line ends are read as ``\\n``. An ``@@`` line in
unified-diff form (``@@ -12,5 +12,6 @@ def f():``) keeps only the text after its
second ``@@`` as the context. Everything else that does not fit is a
``PatchSyntaxError`` naming the patch line (1-based, counted in the text as
given) and what each line may start with.

Pieces:
    Chunk, AddFile, DeleteFile, UpdateFile, Operation   the parsed patch
    PatchSyntaxError   a TOOL_INVALID_ARGUMENT naming the patch line
    parse_patch        patch text -> tuple of operations
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from toolbound.results import ErrorCode, ToolError

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File: "
DELETE = "*** Delete File: "
UPDATE = "*** Update File: "
MOVE = "*** Move to: "
END_OF_FILE = "*** End of File"
CHUNK = "@@"

Tag = Literal[" ", "-", "+"]

# A heredoc around the patch: "<<EOF", "<<'EOF'", '<<"EOF"', maybe after "apply_patch ".
_HEREDOC = re.compile(r"""^(?:apply_?patch\s*)?<<-?\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\1$""")
# A unified-diff hunk header's ranges, which carry no context: "@@ -1,3 +1,4 @@".
_RANGES = re.compile(r"^-\d+(?:,\d+)?\s+\+\d+(?:,\d+)?\s*@@\s?")
_TAGS: dict[str, Tag] = {" ": " ", "-": "-", "+": "+"}
_HEADERS = f"'{ADD}path', '{DELETE}path', '{UPDATE}path'"
_LINE_STARTS = "' ' (context), '-' (removed) or '+' (added)"


class PatchSyntaxError(ToolError):
    """A patch that does not parse: ``line`` (1-based) in the patch, ``problem`` what is wrong."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(
            ErrorCode.INVALID_ARGUMENT,
            f"The patch is not valid at line {line}: {problem}. Fix that line and send the "
            "whole patch again; no file was changed.",
        )
        self.line = line
        self.problem = problem


@dataclass(frozen=True, slots=True)
class Chunk:
    """One change in a file: ``lines`` tagged " ", "-" or "+", after the ``contexts`` lines.

    ``line`` is the patch line the chunk starts at (its first "@@" or first
    change line), for messages.
    """

    contexts: tuple[str, ...]
    lines: tuple[tuple[Tag, str], ...]
    end_of_file: bool
    line: int

    @property
    def old(self) -> tuple[str, ...]:
        """The lines the file holds before: context and removed."""
        return tuple(text for tag, text in self.lines if tag != "+")

    @property
    def new(self) -> tuple[str, ...]:
        """The lines it holds after: context and added."""
        return tuple(text for tag, text in self.lines if tag != "-")


@dataclass(frozen=True, slots=True)
class AddFile:
    path: str
    lines: tuple[str, ...]
    line: int

    @property
    def content(self) -> str:
        return "".join(f"{text}\n" for text in self.lines)


@dataclass(frozen=True, slots=True)
class DeleteFile:
    path: str
    line: int


@dataclass(frozen=True, slots=True)
class UpdateFile:
    path: str
    move_to: str | None
    chunks: tuple[Chunk, ...]
    line: int


Operation = AddFile | DeleteFile | UpdateFile


class _Lines:
    """The patch's lines with a cursor; ``number`` is the 1-based line in the text as given."""

    def __init__(self, lines: list[str], first_number: int) -> None:
        self.lines = lines
        self.at = 0
        self.first_number = first_number

    @property
    def number(self) -> int:
        return self.first_number + self.at

    def done(self) -> bool:
        return self.at >= len(self.lines)

    def peek(self) -> str:
        return self.lines[self.at]


def _unwrap(lines: list[str]) -> tuple[int, int]:
    """The span ``lines[start:end]`` between the patch's own markers, leniency applied."""
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    if end - start >= 2:
        first, last = lines[start].strip(), lines[end - 1].strip()
        heredoc = _HEREDOC.match(first)
        fenced = first.startswith("```") and last == "```"
        if (heredoc is not None and last == heredoc.group(2)) or fenced:
            start, end = start + 1, end - 1
            while start < end and not lines[start].strip():
                start += 1
            while end > start and not lines[end - 1].strip():
                end -= 1
    if start == end or lines[start].strip() != BEGIN:
        raise PatchSyntaxError(
            start + 1 if start < len(lines) else 1,
            f"the first line of the patch must be '{BEGIN}'",
        )
    if end - start < 2 or lines[end - 1].strip() != END:
        raise PatchSyntaxError(end, f"the last line of the patch must be '{END}'")
    return start + 1, end - 1


def _marker(line: str, marker: str) -> str | None:
    """The rest of ``line`` after ``marker`` (spaces around the line ignored), or None."""
    stripped = line.strip()
    if stripped.startswith(marker):
        return stripped[len(marker) :].strip()
    if stripped == marker.rstrip():
        return ""
    return None


def _path(rest: str, number: int, marker: str) -> str:
    if not rest:
        raise PatchSyntaxError(number, f"'{marker.strip()}' names no file; give its path")
    return rest


def _context(line: str) -> str | None:
    """The context an "@@" line names ("" for none), or None when it is not one."""
    stripped = line.rstrip()
    if not stripped.startswith(CHUNK):
        return None
    rest = stripped[len(CHUNK) :].strip()
    ranges = _RANGES.match(rest)
    if ranges is not None:
        rest = rest[ranges.end() :].strip()
    return rest


def _add_file(lines: _Lines, path: str, number: int) -> AddFile:
    added: list[str] = []
    while not lines.done():
        line = lines.peek()
        if line.startswith("+"):
            added.append(line[1:])
        elif line == "" and _more_added(lines):
            # An empty line inside the new file's lines, its "+" left out.
            added.append("")
        else:
            break
        lines.at += 1
    return AddFile(path, tuple(added), number)


def _more_added(lines: _Lines) -> bool:
    """Whether a "+" line follows the empty lines at the cursor."""
    at = lines.at
    while at < len(lines.lines) and lines.lines[at] == "":
        at += 1
    return at < len(lines.lines) and lines.lines[at].startswith("+")


def _chunk(lines: _Lines, *, first: bool, path: str) -> Chunk:
    """One chunk from the cursor: its "@@" lines, then change lines up to the next marker."""
    start = lines.number
    contexts: list[str] = []
    while not lines.done() and (context := _context(lines.peek())) is not None:
        if context:
            contexts.append(context)
        lines.at += 1
    if not first and lines.number == start:
        raise PatchSyntaxError(
            start,
            f"'{lines.peek()}' in the update of {path} starts neither with '@@' (a new "
            f"chunk) nor with {_LINE_STARTS}",
        )
    body: list[tuple[Tag, str]] = []
    end_of_file = False
    while not lines.done():
        line = lines.peek()
        if line.strip() == END_OF_FILE:
            if not body:
                raise PatchSyntaxError(lines.number, f"'{END_OF_FILE}' ends a chunk with no lines")
            end_of_file = True
            lines.at += 1
            break
        if line == "":
            body.append((" ", ""))
        elif line[0] in _TAGS:
            body.append((_TAGS[line[0]], line[1:]))
        elif body or line.lstrip().startswith("***"):
            break
        else:
            raise PatchSyntaxError(
                lines.number,
                f"unexpected line '{line}' in the update of {path}: every line of a chunk "
                f"starts with {_LINE_STARTS}",
            )
        lines.at += 1
    # Empty lines ending a chunk are more likely spacing than context.
    while body and not end_of_file and lines.lines[lines.at - 1] == "":
        body.pop()
        lines.at -= 1
    if not body:
        raise PatchSyntaxError(
            lines.number if not lines.done() else start,
            f"a chunk in the update of {path} has no lines; give its ' ', '-' and '+' lines",
        )
    return Chunk(tuple(contexts), tuple(body), end_of_file, start)


def _update_file(lines: _Lines, path: str, number: int) -> UpdateFile:
    move_to = None
    if not lines.done() and (rest := _marker(lines.peek(), MOVE)) is not None:
        move_to = _path(rest, lines.number, MOVE)
        lines.at += 1
    chunks: list[Chunk] = []
    while not lines.done():
        line = lines.peek()
        if not line.strip():
            lines.at += 1
            continue
        if line.lstrip().startswith("***") and line.strip() != END_OF_FILE:
            break
        chunks.append(_chunk(lines, first=not chunks, path=path))
    if not chunks and move_to is None:
        raise PatchSyntaxError(
            number, f"the update of {path} is empty; give its chunks ('@@' then the lines)"
        )
    return UpdateFile(path, move_to, tuple(chunks), number)


def _operation(lines: _Lines) -> Operation:
    number = lines.number
    header = lines.peek()
    lines.at += 1
    if (rest := _marker(header, ADD)) is not None:
        return _add_file(lines, _path(rest, number, ADD), number)
    if (rest := _marker(header, DELETE)) is not None:
        return DeleteFile(_path(rest, number, DELETE), number)
    if (rest := _marker(header, UPDATE)) is not None:
        return _update_file(lines, _path(rest, number, UPDATE), number)
    raise PatchSyntaxError(
        number, f"'{header.strip()}' is not a file operation; each starts with one of {_HEADERS}"
    )


def parse_patch(text: str) -> tuple[Operation, ...]:
    """The file operations of a patch in order, or a ``PatchSyntaxError``.

    A patch with no operation parses (to ``()``); applying it is the caller's refusal.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    raw = text.split("\n")
    all_lines = [line[:-1] if line.endswith("\r") else line for line in raw]
    start, end = _unwrap(all_lines)
    lines = _Lines(all_lines[start:end], start + 1)
    operations: list[Operation] = []
    while not lines.done():
        if not lines.peek().strip():
            lines.at += 1
            continue
        operations.append(_operation(lines))
    return tuple(operations)
