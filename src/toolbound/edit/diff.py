"""The unified diff of an Edit or Write, bounded by the search budget.

The diff has ``a/<path>`` and ``b/<path>`` headers (``/dev/null`` for a file
that did not exist), hunks with 3 lines of context, and the ``\\ No newline at
end of file`` line where a side ends without one. Lines are shown without
their ending and decoded as UTF-8 (a byte that is not UTF-8 shows as U+FFFD).

An Edit's diff is built from the replaced spans alone: only the lines around
them are looked at, so a one-line change in a 100 MB file costs the lines
around it (plus a count of the newlines before it), never a comparison of the
whole file. A Write's diff compares the old and new lines with difflib, after
setting aside the lines both share at the start and the end; a middle part
too large for difflib's quadratic worst case is shown as one replaced block.

Bounding: like Read and Grep, the diff keeps whole lines within the search
budget (48 KB / 2000 lines) and clips a line longer than 2000 characters;
when it is cut, ``truncated`` is true and the notice says how many lines were
kept of how many (the change itself is always made in full). No marker is
written into the diff text: it stays a valid prefix of the patch.

Pieces:
    split_lines   bytes -> lines, each keeping its ``\\n``
    Hunk          one hunk: where it starts on each side, and its tagged lines
    edit_hunks    the hunks of an EditPlan on the old bytes
    write_hunks   the hunks between two whole contents
    BoundedDiff   the diff text, whether it was cut, the notice
    render_diff   hunks -> BoundedDiff within a budget
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from toolbound import notices
from toolbound.edit.replace import EditPlan
from toolbound.edit.text import Text, count_newlines, line_end, line_start
from toolbound.limits import Budget

CONTEXT_LINES = 3
# Write's diff compares at most this many differing lines (both sides) with difflib.
MAX_COMPARED_LINES = 20_000
NO_NEWLINE = "\\ No newline at end of file"

Tag = Literal[" ", "-", "+"]


@dataclass(frozen=True, slots=True)
class Hunk:
    """A hunk: ``old_start``/``new_start`` are 0-based line indexes; lines keep their ending."""

    old_start: int
    new_start: int
    lines: tuple[tuple[Tag, bytes], ...]


def split_lines(data: bytes) -> list[bytes]:
    """Lines ending at ``\\n`` (kept); a last line without one is kept as it is."""
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _common_ends(old: list[bytes], new: list[bytes]) -> tuple[int, int]:
    """How many lines both sides share at the start, and then at the end."""
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    return head, tail


def _changed(old: list[bytes], new: list[bytes]) -> list[tuple[Tag, bytes]]:
    """Old lines removed and new lines added, the lines both start and end with as context."""
    head, tail = _common_ends(old, new)
    lines: list[tuple[Tag, bytes]] = [(" ", line) for line in old[:head]]
    lines += [("-", line) for line in old[head : len(old) - tail]]
    lines += [("+", line) for line in new[head : len(new) - tail]]
    lines += [(" ", line) for line in old[len(old) - tail :]]
    return lines


@dataclass(slots=True)
class _Region:
    """Whole old lines ``start .. end`` that the replacements at ``starts`` fall in."""

    start: int
    end: int
    starts: list[int]

    def new_bytes(self, buf: Text, plan: EditPlan) -> bytes:
        pieces: list[bytes] = []
        at = self.start
        for start in self.starts:
            pieces += (buf[at:start], plan.new)
            at = start + len(plan.old)
        pieces.append(buf[at : self.end])
        return b"".join(pieces)


def _regions(buf: Text, plan: EditPlan) -> Iterator[_Region]:
    # When both sides end with a newline the line after the match is untouched.
    aligned_end = plan.old.endswith(b"\n") and plan.new.endswith(b"\n")
    region: _Region | None = None
    for start in plan.starts:
        stop = start + len(plan.old)
        end = stop if aligned_end or stop == len(buf) else line_end(buf, stop)
        begin = line_start(buf, start)
        if region is not None and begin < region.end:
            region.end = max(region.end, end)
            region.starts.append(start)
            continue
        if region is not None:
            yield region
        region = _Region(begin, end, [start])
    if region is not None:
        yield region


def _lines_before(buf: Text, pos: int, count: int) -> int:
    """Where the line ``count`` lines above the line starting at ``pos`` starts."""
    for _ in range(count):
        if pos == 0:
            break
        pos = line_start(buf, pos - 1)
    return pos


def _lines_after(buf: Text, pos: int, count: int) -> int:
    for _ in range(count):
        if pos >= len(buf):
            break
        pos = line_end(buf, pos)
    return pos


def edit_hunks(buf: Text, plan: EditPlan) -> Iterator[Hunk]:
    """The hunks of ``plan`` applied to ``buf``, built from the lines around each span."""
    lines: list[tuple[Tag, bytes]] = []
    old_start = new_start = 0
    line_no, counted_to = 0, 0
    delta = 0
    last_end: int | None = None
    for region in _regions(buf, plan):
        line_no += count_newlines(buf, counted_to, region.start)
        counted_to = region.start
        gap = None if last_end is None else count_newlines(buf, last_end, region.start)
        if last_end is not None and gap is not None and gap <= 2 * CONTEXT_LINES:
            lines += [(" ", line) for line in split_lines(buf[last_end : region.start])]
        else:
            if last_end is not None:
                after = _lines_after(buf, last_end, CONTEXT_LINES)
                lines += [(" ", line) for line in split_lines(buf[last_end:after])]
                yield Hunk(old_start, new_start, tuple(lines))
            before = _lines_before(buf, region.start, CONTEXT_LINES)
            lines = [(" ", line) for line in split_lines(buf[before : region.start])]
            old_start = line_no - len(lines)
            new_start = old_start + delta
        old_lines = split_lines(buf[region.start : region.end])
        new_lines = split_lines(region.new_bytes(buf, plan))
        lines += _changed(old_lines, new_lines)
        delta += len(new_lines) - len(old_lines)
        last_end = region.end
    if last_end is not None:
        after = _lines_after(buf, last_end, CONTEXT_LINES)
        lines += [(" ", line) for line in split_lines(buf[last_end:after])]
        yield Hunk(old_start, new_start, tuple(lines))


def write_hunks(old: bytes, new: bytes) -> Iterator[Hunk]:
    """The hunks between two whole contents (difflib on the lines that differ)."""
    a, b = split_lines(old), split_lines(new)
    head, tail = _common_ends(a, b)
    if head == len(a) == len(b):
        return
    lo = max(0, head - CONTEXT_LINES)
    a_mid = a[lo : len(a) - max(0, tail - CONTEXT_LINES)]
    b_mid = b[lo : len(b) - max(0, tail - CONTEXT_LINES)]
    if len(a_mid) + len(b_mid) > MAX_COMPARED_LINES:
        # Too large to compare: one block, old lines out, new lines in, context around.
        ctx_a = a[lo:head]
        mid: list[tuple[Tag, bytes]] = [(" ", line) for line in ctx_a]
        mid += [("-", line) for line in a[head : len(a) - tail]]
        mid += [("+", line) for line in b[head : len(b) - tail]]
        mid += [(" ", line) for line in a[len(a) - tail : len(a) - tail + CONTEXT_LINES]]
        yield Hunk(lo, lo, tuple(mid))
        return
    matcher = difflib.SequenceMatcher(None, a_mid, b_mid, autojunk=False)
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        lines: list[tuple[Tag, bytes]] = []
        for op, i1, i2, j1, j2 in group:
            if op == "equal":
                lines += [(" ", line) for line in a_mid[i1:i2]]
                continue
            lines += [("-", line) for line in a_mid[i1:i2]]
            lines += [("+", line) for line in b_mid[j1:j2]]
        yield Hunk(lo + group[0][1], lo + group[0][3], tuple(lines))


def _range(start: int, count: int) -> str:
    """A hunk header range as ``diff -u`` writes it (1-based; ``l`` for one line)."""
    if count == 1:
        return str(start + 1)
    return f"{start + (1 if count else 0)},{count}"


@dataclass(frozen=True, slots=True)
class BoundedDiff:
    text: str
    truncated: bool
    notice: str | None


class _Sink:
    """Collects diff lines until the budget says stop; counts every line offered."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.kept: list[str] = []
        self.kept_bytes = 0
        self.offered = 0

    def offer(self, line: str) -> None:
        self.offered += 1
        if len(self.kept) < self.offered - 1:
            return
        size = len(line.encode("utf-8")) + 1  # and its newline
        if (
            len(self.kept) < self.budget.max_lines
            and self.kept_bytes + size <= self.budget.max_bytes
        ):
            self.kept.append(line)
            self.kept_bytes += size


def _show(tag: Tag, line: bytes, max_chars: int) -> tuple[str, bool]:
    body = line[:-1] if line.endswith(b"\n") else line
    body = body[:-1] if body.endswith(b"\r") else body
    text = body[: 4 * max_chars].decode("utf-8", "replace")
    clipped = len(text) > max_chars or len(body) > 4 * max_chars
    return tag + text[:max_chars], clipped


def render_diff(
    hunks: Iterable[Hunk],
    *,
    old_label: str,
    new_label: str,
    budget: Budget,
    max_line_chars: int,
    shown: str,
) -> BoundedDiff:
    """The diff text of ``hunks`` within ``budget``; empty when there is no hunk."""
    sink = _Sink(budget)
    clipped = 0
    for hunk in hunks:
        if sink.offered == 0:
            sink.offer(f"--- {old_label}")
            sink.offer(f"+++ {new_label}")
        old_count = sum(1 for tag, _ in hunk.lines if tag != "+")
        new_count = sum(1 for tag, _ in hunk.lines if tag != "-")
        sink.offer(
            f"@@ -{_range(hunk.old_start, old_count)} +{_range(hunk.new_start, new_count)} @@"
        )
        for tag, line in hunk.lines:
            text, was_clipped = _show(tag, line, max_line_chars)
            clipped += was_clipped and len(sink.kept) == sink.offered
            sink.offer(text)
            if not line.endswith(b"\n"):
                sink.offer(NO_NEWLINE)
    truncated = len(sink.kept) < sink.offered
    notes: list[str] = []
    if truncated:
        notes.append(
            notices.diff_cut(
                kept=len(sink.kept),
                total=sink.offered,
                budget=budget,
                made="the change itself was made",
                read=shown,
            )
        )
    if clipped:
        notes.append(notices.diff_clipped(max_line_chars, clipped))
    text = "\n".join(sink.kept) + ("\n" if sink.kept else "")
    return BoundedDiff(text, truncated or clipped > 0, " ".join(notes) or None)
