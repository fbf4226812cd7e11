"""Edit's exact replacement, planned on the file's bytes (pure: no I/O).

``plan_edit`` finds ``oldString`` in the file and decides what replaces it;
the caller writes the result. Matching is on bytes (the strings' UTF-8), so
every byte outside the replaced spans is kept as it was, whatever the file's
encoding.

The rules:

- Exact first: ``oldString`` must occur; once, unless ``replaceAll``.
  Occurrences are counted without overlap, as ``replaceAll`` replaces them,
  and a second occurrence overlapping the only one also makes it ambiguous.
- Line endings. Read is byte-faithful, so text copied from it carries the
  file's ``\\r\\n``. When ``oldString`` has bare ``\\n``, is not found, and the
  file's line endings are all ``\\r\\n``, it is matched again with each bare
  ``\\n`` read as ``\\r\\n``. In such a file every bare ``\\n`` of
  ``newString`` is written as ``\\r\\n`` (whether or not the match needed the
  translation): a CRLF file stays CRLF. A file with mixed endings, or LF
  endings, is matched exactly and gets ``newString`` as given.
- A UTF-8 BOM is kept: when ``oldString`` starts with it and ``newString``
  does not, the BOM stays in front.

Several edits in one call (``apply_edits``) apply in order, each to the text
the earlier ones left, by the same rules; the first that fails refuses them
all, naming its index.

Pieces:
    EditPlan   the spans to replace and the bytes that replace them
    plan_edit  the file's bytes + the Edit arguments -> EditPlan, or the error
    EditSpec, EditsApplied, apply_edits   several edits in order -> the new bytes
    encode_text  a text argument as UTF-8
    line_numbers  1-based line numbers of positions
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from toolbound.edit.text import (
    BOM,
    Endings,
    Text,
    count_newlines,
    has_bare_lf,
    line_endings,
    to_crlf,
)
from toolbound.results import ErrorCode, ToolError

# An ambiguous match names the lines of this many occurrences.
SHOWN_OCCURRENCES = 5
# Counting occurrences for a refusal stops here ("more than N").
COUNT_CAP = 100_000


@dataclass(frozen=True, slots=True)
class EditPlan:
    """Replace ``old`` at each of ``starts`` (ascending, not overlapping) with ``new``.

    ``old`` and ``new`` are the bytes as found in and written to the file
    (line endings already translated when ``translated``).
    """

    starts: tuple[int, ...]
    old: bytes
    new: bytes
    translated: bool = False

    @property
    def replacements(self) -> int:
        return len(self.starts)

    def new_size(self, old_size: int) -> int:
        return old_size + len(self.starts) * (len(self.new) - len(self.old))

    def pieces(self, buf: Text) -> Iterator[memoryview | bytes]:
        """The new content, in order: spans of ``buf`` (as views, not copies) and ``new``."""
        view = memoryview(buf)
        at = 0
        for start in self.starts:
            if start > at:
                yield view[at:start]
            yield self.new
            at = start + len(self.old)
        if at < len(buf):
            yield view[at:]


def encode_text(value: str, name: str) -> bytes:
    """A text argument as UTF-8, or INVALID_ARGUMENT for a lone surrogate."""
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"{name} is not valid Unicode text (a lone surrogate at character {err.start}); "
            "pass the text as it appears in the file.",
        ) from None


def _find(buf: Text, pattern: bytes, *, cap: int) -> list[int]:
    """Start of each non-overlapping occurrence, at most ``cap`` of them."""
    found: list[int] = []
    at = buf.find(pattern)
    while at >= 0 and len(found) < cap:
        found.append(at)
        at = buf.find(pattern, at + len(pattern))
    return found


def _overlapped(buf: Text, pattern: bytes, start: int) -> bool:
    """Whether another occurrence overlaps the one at ``start``."""
    return buf.find(pattern, start + 1, start + 2 * len(pattern) - 1) >= 0


def line_numbers(buf: Text, positions: list[int]) -> list[int]:
    """The 1-based line number of each position (ascending)."""
    numbers: list[int] = []
    line, at = 1, 0
    for pos in positions:
        line += count_newlines(buf, at, pos)
        at = pos
        numbers.append(line)
    return numbers


class _Endings:
    """The file's line-ending style, found once and only if a rule needs it."""

    def __init__(self, buf: Text) -> None:
        self._buf = buf
        self._style: Endings | None = None

    @property
    def style(self) -> Endings:
        if self._style is None:
            self._style = line_endings(self._buf)
        return self._style


def plan_edit(
    buf: Text, old_string: str, new_string: str, *, replace_all: bool, shown: str
) -> EditPlan:
    """Plan Edit's replacement in ``buf`` (the whole file), or raise the error the model reads."""
    if old_string == "":
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            "oldString is empty. Give the exact text to replace, copied from Read; to create "
            "or overwrite a whole file use Write.",
        )
    if old_string == new_string:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            "oldString and newString are the same, so the Edit would change nothing. Pass "
            "the text the file should hold in newString.",
        )
    old = encode_text(old_string, "oldString")
    new = encode_text(new_string, "newString")
    endings = _Endings(buf)
    cap = len(buf) + 1 if replace_all else 2
    starts = _find(buf, old, cap=cap)
    translated = False
    if not starts and has_bare_lf(old) and endings.style == "crlf":
        old = to_crlf(old)
        starts = _find(buf, old, cap=cap)
        translated = True
    if not starts:
        raise ToolError(ErrorCode.NO_MATCH, _no_match_message(buf, old, shown, endings))
    if not replace_all and (len(starts) > 1 or _overlapped(buf, old, starts[0])):
        raise ToolError(ErrorCode.AMBIGUOUS_MATCH, _ambiguous_message(buf, old, shown))
    if has_bare_lf(new) and endings.style == "crlf":
        new = to_crlf(new)
    if old.startswith(BOM) and not new.startswith(BOM):
        new = BOM + new
    return EditPlan(tuple(starts), old, new, translated)


@dataclass(frozen=True, slots=True)
class EditSpec:
    """One edit of a multi-edit Edit: ``oldString``, ``newString``, ``replaceAll``."""

    old_string: str
    new_string: str
    replace_all: bool = False


@dataclass(frozen=True, slots=True)
class EditsApplied:
    text: bytes
    replacements: int


def apply_edits(buf: Text, edits: Sequence[EditSpec], *, shown: str) -> EditsApplied:
    """The file's new bytes after ``edits`` in order, each on the text the earlier ones left.

    The first edit that fails raises its error, prefixed with which edit it
    was (``edits[i]``); nothing is applied then (the caller writes nothing).
    """
    text: Text = buf
    replacements = 0
    for index, spec in enumerate(edits):
        try:
            plan = plan_edit(
                text, spec.old_string, spec.new_string, replace_all=spec.replace_all, shown=shown
            )
        except ToolError as err:
            after = f" (in the text edits[0..{index - 1}] left)" if index else ""
            raise ToolError(
                err.code,
                f"Edit {index + 1} of {len(edits)} (edits[{index}]) failed{after}: "
                f"{err.message} No edit was made.",
            ) from None
        text = b"".join(plan.pieces(text))
        replacements += plan.replacements
    return EditsApplied(bytes(text), replacements)


def _no_match_message(buf: Text, old: bytes, shown: str, endings: _Endings) -> str:
    message = (
        f"oldString was not found in {shown}. Read the file again and copy the text exactly, "
        "including indentation and line endings (Read's content is the file's own text)."
    )
    first_line = old.split(b"\n", 1)[0].rstrip(b"\r")
    if b"\r\n" in old and endings.style == "lf":
        message += " The file's lines end with \\n, but oldString has \\r\\n."
    elif first_line != old.rstrip(b"\r\n") and len(first_line.strip()) > 0:
        at = buf.find(first_line)
        if at >= 0:
            line = line_numbers(buf, [at])[0]
            message += f" Its first line occurs at line {line}; the text differs after it."
    elif old.strip() and old.strip() != old and buf.find(old.strip()) >= 0:
        message += " It occurs with other leading or trailing whitespace: check the indentation."
    return message


def _ambiguous_message(buf: Text, old: bytes, shown: str) -> str:
    starts = _find(buf, old, cap=COUNT_CAP)
    if len(starts) == 1:
        # Only overlapping occurrences: the second starts inside the first.
        starts.append(buf.find(old, starts[0] + 1))
    count = f"more than {COUNT_CAP - 1}" if len(starts) >= COUNT_CAP else str(len(starts))
    lines = line_numbers(buf, starts[:SHOWN_OCCURRENCES])
    shown_lines = ", ".join(str(n) for n in lines)
    more = ", …" if len(starts) > SHOWN_OCCURRENCES else ""
    return (
        f"oldString occurs {count} times in {shown} (at lines {shown_lines}{more}). Add "
        "surrounding lines to oldString to make it unique, or pass replaceAll: true to "
        "replace every occurrence."
    )
