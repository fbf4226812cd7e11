"""An update's chunks applied to a file's text (pure: bytes in, bytes and a report out).

The stages, for each chunk in order, searching from where the previous one ended:

1. Its ``@@`` lines, each found in turn (the next at or after the previous).
2. Its old lines (context and removed), found with decreasing strictness:
   ``exact``, then ``trailing-space`` (trailing whitespace ignored on both
   sides), then ``whitespace`` (leading and trailing whitespace ignored); the
   first grade that matches decides. A chunk marked ``*** End of File`` is
   tried at the end of the file first. A chunk with no ``@@`` line that
   matches at more than one place is ``TOOL_AMBIGUOUS_MATCH`` (its line
   numbers named); an ``@@`` line decides by taking the first place after it.
   A chunk with no old lines (only ``+``) is inserted after its ``@@`` line, or
   at the end of the file without one.
3. A chunk whose old lines are nowhere but whose new lines are there is
   already applied: reported, not changed. A chunk found nowhere is
   ``TOOL_NO_MATCH`` naming the file, the chunk and the nearest lines with
   their numbers (the window where most of its lines occur, ignoring
   whitespace; else the line most like its longest line).

Then the new text is built in one pass: a context line keeps the file's line
as it is (its bytes and its own line ending), a removed line goes, an added
line gets the file's first line ending (``\\r\\n`` in a CRLF file). A UTF-8 BOM
stays, bytes that are not UTF-8 outside the changed lines are kept, and, as
Codex does, a changed file ends with a line ending.

Pieces:
    Grade, GRADES     how a chunk matched
    HunkReport        one chunk's grade and 1-based line (in the file as it was)
    FilePatched       the new bytes, the reports, the diff's hunks
    apply_chunks      a file's bytes + its chunks -> FilePatched, or a ToolError
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from toolbound.edit.diff import Hunk
from toolbound.edit.patch.grammar import Chunk, Tag
from toolbound.edit.replace import encode_text
from toolbound.edit.text import BOM
from toolbound.results import ErrorCode, ToolError

Grade = Literal["exact", "trailing-space", "whitespace"]
GRADES: tuple[Grade, ...] = ("exact", "trailing-space", "whitespace")

# A refusal shows at most this many lines of a chunk, and of the nearest lines.
SHOWN_LINES = 12
# ... each clipped to this many characters.
SHOWN_CHARS = 160
# An ambiguous chunk names this many of its places.
SHOWN_PLACES = 5
# The similarity a line needs to be shown as the nearest when no line matches.
NEAREST_RATIO = 0.6
# ... looked for among at most this many lines from where the chunk was sought.
NEAREST_SCAN_LINES = 20_000

_WHITESPACE = b" \t\r\n\x0b\x0c"
_KEYS: dict[Grade, Callable[[bytes], bytes]] = {
    "exact": lambda line: line,
    "trailing-space": lambda line: line.rstrip(_WHITESPACE),
    "whitespace": lambda line: line.strip(_WHITESPACE),
}


@dataclass(frozen=True, slots=True)
class HunkReport:
    """How one chunk matched, and the 1-based line of the file (before the change) it matched at.

    ``already_applied``: its old lines were nowhere and its new lines were
    there (at ``line``), so it was left as it was.
    """

    matched: Grade
    line: int
    already_applied: bool = False


@dataclass(frozen=True, slots=True)
class FilePatched:
    """The new text, how each chunk matched, and the diff's hunks (the chunks' own lines)."""

    text: bytes
    hunks: tuple[HunkReport, ...]
    # Derived from the same change as ``text``; left out of equality.
    diff: tuple[Hunk, ...] = field(default=(), compare=False)

    @property
    def already_applied(self) -> bool:
        """Every chunk was already applied: the text is unchanged."""
        return all(hunk.already_applied for hunk in self.hunks)


class _File:
    """A file's lines (text without ending, and the ending), with lazy per-grade keys."""

    def __init__(self, data: bytes) -> None:
        self.bom = data.startswith(BOM)
        body = data[len(BOM) :] if self.bom else data
        lf = body.count(b"\n")
        crlf = body.count(b"\r\n") if b"\r" in body else 0
        # One ending for every line (the common case) is split in one step.
        self.uniform: bytes | None = None
        if crlf == 0 or crlf == lf:
            self.uniform = b"\r\n" if crlf else b"\n"
            self.texts = body.split(self.uniform)
            self.endings = [self.uniform] * len(self.texts)
            if self.texts[-1]:
                self.endings[-1] = b""
            else:
                self.texts.pop()
                self.endings.pop()
        else:
            self._split_mixed(body)
        self.preferred = self.endings[0] if self.endings and self.endings[0] else b"\n"
        self._keys: dict[Grade, list[bytes]] = {}
        self._counts: dict[Grade, Counter[bytes]] = {}

    def _split_mixed(self, body: bytes) -> None:
        parts = body.split(b"\n")
        self.texts = []
        self.endings = []
        for part in parts[:-1]:
            if part.endswith(b"\r"):
                self.texts.append(part[:-1])
                self.endings.append(b"\r\n")
            else:
                self.texts.append(part)
                self.endings.append(b"\n")
        if parts[-1]:
            self.texts.append(parts[-1])
            self.endings.append(b"")

    def span(self, start: int, end: int) -> bytes:
        """Lines ``start .. end`` as they are, each with its ending (the preferred one for an
        unterminated last line)."""
        if start >= end:
            return b""
        if self.uniform is not None and self.uniform == self.preferred:
            return self.uniform.join(self.texts[start:end]) + self.uniform
        return b"".join(
            self.texts[k] + (self.endings[k] or self.preferred) for k in range(start, end)
        )

    def __len__(self) -> int:
        return len(self.texts)

    def keys(self, grade: Grade) -> list[bytes]:
        if grade not in self._keys:
            key = _KEYS[grade]
            self._keys[grade] = self.texts if grade == "exact" else [key(t) for t in self.texts]
        return self._keys[grade]

    def counts(self, grade: Grade) -> Counter[bytes]:
        """How often each line (as the grade compares it) occurs."""
        if grade not in self._counts:
            self._counts[grade] = Counter(self.keys(grade))
        return self._counts[grade]

    def places(self, pattern: Sequence[bytes], grade: Grade, start: int) -> list[int]:
        """Every index at or after ``start`` where ``pattern`` occurs under ``grade``."""
        key = _KEYS[grade]
        wanted = [key(line) for line in pattern]
        keys = self.keys(grade)
        n = len(wanted)
        counts = self.counts(grade)
        # The pattern's rarest line: when it occurs once in the file, one scan from
        # ``start`` to it decides (chunks come in order, so all of them scan the file
        # about once); otherwise every place of the first line is tried.
        rarest = min(range(n), key=lambda k: counts[wanted[k]])
        if counts[wanted[rarest]] == 0:
            return []
        if counts[wanted[rarest]] == 1:
            try:
                at = keys.index(wanted[rarest], start + rarest) - rarest
            except ValueError:
                return []
            return [at] if keys[at : at + n] == wanted else []
        found: list[int] = []
        at = start
        while True:
            try:
                at = keys.index(wanted[0], at, len(keys) - n + 1)
            except ValueError:
                return found
            if keys[at : at + n] == wanted:
                found.append(at)
            at += 1

    def at_end(self, pattern: Sequence[bytes], grade: Grade) -> bool:
        at = len(self) - len(pattern)
        return at >= 0 and bool(pattern) and self.places(pattern, grade, at) == [at]


@dataclass(frozen=True, slots=True)
class _Found:
    grade: Grade
    places: list[int]


def _seek(file: _File, pattern: Sequence[bytes], start: int, *, at_end: bool) -> _Found | None:
    """The places of ``pattern`` at the strictest grade that finds any (end of file first)."""
    if at_end:
        for grade in GRADES:
            if file.at_end(pattern, grade):
                return _Found(grade, [len(file) - len(pattern)])
    for grade in GRADES:
        places = file.places(pattern, grade, start)
        if places:
            return _Found(grade, places)
    return None


@dataclass(frozen=True, slots=True)
class _Change:
    """Replace file lines ``start .. start + old_count`` by walking ``lines``."""

    start: int
    lines: tuple[tuple[Tag, bytes], ...]

    @property
    def old_count(self) -> int:
        return sum(1 for tag, _ in self.lines if tag != "+")


class _Refusal:
    """The messages of a chunk that cannot be applied."""

    def __init__(self, file: _File, shown: str, index: int, chunk: Chunk) -> None:
        self.file, self.shown, self.index, self.chunk = file, shown, index, chunk

    @property
    def which(self) -> str:
        return f"Chunk {self.index} of the update of {self.shown} (patch line {self.chunk.line})"

    def context_missing(self, context: str, after: int) -> ToolError:
        where = f"after line {after}" if after else "anywhere"
        return ToolError(
            ErrorCode.NO_MATCH,
            f"{self.which} names '@@ {_clip(context)}', but no such line is in {self.shown} "
            f"{where}, not even ignoring whitespace.{self._nearest([context], after)}\nNothing "
            "was changed. Give the '@@' line as the file has it (the line of the class or "
            "function the chunk is in), or leave it out.",
        )

    def missing(self, old: Sequence[bytes], after: int) -> ToolError:
        shown = [f"  {tag}{_clip(text)}" for tag, text in self.chunk.lines if tag != "+"]
        if len(shown) > SHOWN_LINES:
            shown = [*shown[:SHOWN_LINES], f"  … ({len(shown) - SHOWN_LINES} more)"]
        where = f" after line {after}" if after else ""
        lines = [_decode(line) for line in old]
        return ToolError(
            ErrorCode.NO_MATCH,
            f"{self.which} was not found: these lines are not in {self.shown}{where}, not "
            "even ignoring whitespace:\n" + "\n".join(shown) + self._nearest(lines, after) + "\n"
            "Nothing was changed. Read those lines of the file, then make the chunk's ' ' and "
            "'-' lines match them exactly.",
        )

    def ambiguous(self, found: _Found) -> ToolError:
        numbers = [str(at + 1) for at in found.places[:SHOWN_PLACES]]
        more = ", …" if len(found.places) > SHOWN_PLACES else ""
        grade = "" if found.grade == "exact" else f" ({found.grade} ignored)"
        return ToolError(
            ErrorCode.AMBIGUOUS_MATCH,
            f"{self.which} matches {len(found.places)} places{grade}, at lines "
            f"{', '.join(numbers)}{more}. Nothing was changed. Add an '@@' line naming the "
            "class or function it is in, or more context lines, so that it matches one place.",
        )

    def _nearest(self, pattern: Sequence[str], after: int) -> str:
        """The nearest lines of the file as a message part ("" when nothing is near)."""
        start = _nearest_start(self.file, pattern, after)
        if start is None:
            return f"\nNo line of {self.shown} is like them; check the file's path and Read it."
        lo = max(0, start - 1)
        hi = min(len(self.file), start + min(len(pattern), SHOWN_LINES) + 1)
        width = len(str(hi))
        shown = "\n".join(
            f"  {str(at + 1).rjust(width)}| {_clip(_decode(self.file.texts[at]))}"
            for at in range(lo, hi)
        )
        return f"\nThe nearest lines of {self.shown} are {lo + 1}-{hi}:\n{shown}"


def _decode(line: bytes) -> str:
    return line.decode("utf-8", "replace")


def _clip(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"


def _positions(keys: list[bytes], key: bytes, *, cap: int) -> list[int]:
    """Where ``key`` occurs in ``keys``, at most ``cap`` places (list.index scans in C)."""
    found: list[int] = []
    at = 0
    while len(found) < cap:
        try:
            at = keys.index(key, at)
        except ValueError:
            break
        found.append(at)
        at += 1
    return found


def _nearest_start(file: _File, pattern: Sequence[str], cursor: int) -> int | None:
    """Where the window most like ``pattern`` starts: most lines equal ignoring whitespace,
    else the line most like the pattern's longest line (among the lines from ``cursor``
    on, at most ``NEAREST_SCAN_LINES`` of them); None if nothing is alike."""
    keys = file.keys("whitespace")
    votes: dict[int, int] = {}
    for offset, line in enumerate(pattern):
        key = line.encode("utf-8", "replace").strip(_WHITESPACE)
        if not key:
            continue
        for at in _positions(keys, key, cap=1000):
            votes[at - offset] = votes.get(at - offset, 0) + 1
    if votes:
        best = max(votes.values())
        starts = sorted(at for at, count in votes.items() if count == best)
        return max(0, next((at for at in starts if at >= cursor), starts[0]))
    longest = max(range(len(pattern)), key=lambda k: len(pattern[k].strip()), default=None)
    if longest is None or not pattern[longest].strip():
        return None
    wanted = pattern[longest].strip()
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(wanted)
    best_at, best_ratio = None, NEAREST_RATIO
    lo = max(0, min(cursor, len(keys) - NEAREST_SCAN_LINES))
    for at in range(lo, min(len(keys), lo + NEAREST_SCAN_LINES)):
        key = keys[at]
        matcher.set_seq1(_decode(key))
        if matcher.real_quick_ratio() > best_ratio and matcher.quick_ratio() > best_ratio:
            ratio = matcher.ratio()
            if ratio > best_ratio:
                best_at, best_ratio = at, ratio
    return None if best_at is None else max(0, best_at - longest)


def _encoded(chunk: Chunk) -> tuple[tuple[Tag, bytes], ...]:
    return tuple((tag, encode_text(text, "patch")) for tag, text in chunk.lines)


@dataclass(slots=True)
class _Planner:
    """The chunks of one file in order; ``cursor`` is where the next may start."""

    file: _File
    shown: str
    cursor: int = 0

    def contexts(self, refusal: _Refusal) -> bool:
        """Move past the chunk's "@@" lines; whether it had any."""
        for context in refusal.chunk.contexts:
            found = _seek(self.file, [encode_text(context, "patch")], self.cursor, at_end=False)
            if found is None:
                raise refusal.context_missing(context, self.cursor)
            self.cursor = found.places[0] + 1
        return bool(refusal.chunk.contexts)

    def insertion(self, chunk: Chunk, anchored: bool) -> _Change:
        if anchored and not chunk.end_of_file:
            return _Change(self.cursor, _encoded(chunk))
        # As Codex does: at the end of the file, and the next chunk still searches from here.
        return _Change(len(self.file), _encoded(chunk))

    def replacement(self, refusal: _Refusal, anchored: bool) -> tuple[_Change | None, HunkReport]:
        chunk = refusal.chunk
        lines = _encoded(chunk)
        old = [text for tag, text in lines if tag != "+"]
        new = [text for tag, text in lines if tag != "-"]
        found = _seek(self.file, old, self.cursor, at_end=chunk.end_of_file)
        if found is None and old and old[-1] == b"" and len(old) > 1:
            # A trailing empty context line may stand for the file's last newline.
            lines = lines[:-1] if lines[-1] == (" ", b"") else lines
            old = [text for tag, text in lines if tag != "+"]
            new = [text for tag, text in lines if tag != "-"]
            found = _seek(self.file, old, self.cursor, at_end=chunk.end_of_file)
        if found is None:
            done = self._already(new, chunk.end_of_file)
            if done is None:
                raise refusal.missing(old, self.cursor)
            return None, done
        if len(found.places) > 1 and not anchored:
            raise refusal.ambiguous(found)
        at = found.places[0]
        self.cursor = at + len(old)
        return _Change(at, lines), HunkReport(found.grade, at + 1)

    def _already(self, new: Sequence[bytes], end_of_file: bool) -> HunkReport | None:
        """The report of a chunk whose new lines are there already, or None."""
        if not any(line.strip(_WHITESPACE) for line in new):
            return None
        found = _seek(self.file, new, self.cursor, at_end=end_of_file) or _seek(
            self.file, new, 0, at_end=False
        )
        if found is None:
            return None
        at = found.places[0]
        self.cursor = max(self.cursor, at + len(new))
        return HunkReport(found.grade, at + 1, already_applied=True)


def _render(file: _File, changes: Sequence[_Change]) -> bytes:
    """The new text: untouched lines as they were, changed ones walked chunk by chunk."""
    out: list[bytes] = [BOM] if file.bom else []
    at = 0
    for change in changes:
        out.append(file.span(at, change.start))
        at = change.start
        for tag, text in change.lines:
            if tag == "+":
                out += (text, file.preferred)
                continue
            if tag == " ":
                out.append(file.span(at, at + 1))
            at += 1
    out.append(file.span(at, len(file)))
    return b"".join(out)


def apply_chunks(data: bytes, chunks: Sequence[Chunk], *, shown: str) -> FilePatched:
    """``data`` (a whole file) with ``chunks`` applied, or the ToolError the model reads.

    Raises ``TOOL_NO_MATCH`` or ``TOOL_AMBIGUOUS_MATCH`` (nothing is changed:
    the caller writes nothing); see the module docstring for the rules.
    """
    file = _File(data)
    planner = _Planner(file, shown)
    changes: list[_Change] = []
    reports: list[HunkReport] = []
    insertions: list[int] = []
    for index, chunk in enumerate(chunks, start=1):
        refusal = _Refusal(file, shown, index, chunk)
        anchored = planner.contexts(refusal)
        if not chunk.old:
            change = planner.insertion(chunk, anchored)
            insertions.append(len(reports))
            changes.append(change)
            reports.append(HunkReport("exact", change.start + 1))
            continue
        replaced, report = planner.replacement(refusal, anchored)
        if replaced is not None:
            changes.append(replaced)
        reports.append(report)
    if insertions and len(insertions) < len(reports) and len(changes) == len(insertions):
        # Every other chunk was applied already: so were the insertions, if their lines are there.
        redone = _insertions_present(file, changes)
        if redone is not None:
            for k, line in zip(insertions, redone, strict=True):
                reports[k] = HunkReport("exact", line, already_applied=True)
            changes = []
    if not changes:
        return FilePatched(data, tuple(reports))
    changes.sort(key=lambda change: change.start)
    return FilePatched(_render(file, changes), tuple(reports), _diff(file, changes))


def _diff(file: _File, changes: Sequence[_Change]) -> tuple[Hunk, ...]:
    """One diff hunk per change, its lines as the chunk gave them (context as the file has it)."""
    hunks: list[Hunk] = []
    delta = 0
    for change in changes:
        lines: list[tuple[Tag, bytes]] = []
        at = change.start
        for tag, text in change.lines:
            if tag == "+":
                lines.append((tag, text + file.preferred))
                continue
            lines.append((tag, file.texts[at] + (file.endings[at] or file.preferred)))
            at += 1
        hunks.append(Hunk(change.start, change.start + delta, tuple(lines)))
        delta += sum(1 for tag, _ in lines if tag == "+") - sum(1 for tag, _ in lines if tag == "-")
    return tuple(hunks)


def _insertions_present(file: _File, insertions: Sequence[_Change]) -> list[int] | None:
    """The 1-based lines where each insertion's lines already stand, or None if one does not."""
    lines: list[int] = []
    for change in insertions:
        added = [text for _, text in change.lines]
        before = change.start - len(added)
        if change.start == len(file) and file.at_end(added, "exact"):
            lines.append(before + 1)
        elif file.places(added, "exact", change.start)[:1] == [change.start]:
            lines.append(change.start + 1)
        else:
            return None
    return lines
