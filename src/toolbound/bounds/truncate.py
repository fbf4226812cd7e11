"""``cut``: the one function that cuts a text to a budget, keeping its head, its tail or both.

``keep="head"`` keeps the first lines (the seed's stdout), ``"tail"`` the last
(stderr), ``"both"`` the first and the last with the marker between them (the
economy's streams, ``bounds/headtail.py`` retains them). All three work on the
UTF-8 bytes of the held text, with ``bytes.find``/``rfind`` and the newline
kernels (``bounds/newlines.py``) doing the scanning, so cutting 512 KB costs a
few C-level passes.

One end: the kept part is always whole lines, except when not one complete
line fits: then a single line's char-boundary-safe prefix (head) or suffix
(tail) is kept, never an empty payload. The marker is appended for a head cut
and prepended for a tail cut (seed section 3), and it is present exactly when
something was cut.

Both ends: the first whole lines within the head budget, the last whole lines
within the tail budget, and a marker between them naming what was cut, how
much of the total, the limit, and where the rest is (``bounds/headtail.py``'s
docstring shows it). A line too long for an end keeps a character-safe part
of it (the first bytes at the head, the last at the tail), and the marker then
counts bytes. The kept text is a true prefix and a true suffix of the stream
(invalid UTF-8 shown as U+FFFD), and each end stays within its budget after
that repair.

A text is never cut twice: a ``str`` that already carries one of these
markers and would be cut again is refused (``ValueError``: cut the stream it
came from), as codex-rs refuses output that already carries its truncation
header. Streams arrive as bytes (a capture, a log) and are never sniffed for
markers, so a command that prints a marker is cut like any other output.

Pieces:
    Cut          one end kept: the kept text, the record of the cut, and the payload
    HeadTailCut  both ends kept: the same for each end
    cut          held text (+ true totals) + budget + keep -> Cut | HeadTailCut
    count_lines  lines as the markers count them (``bounds/newlines.py``)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal, overload

from toolbound.bounds import markers
from toolbound.bounds.headtail import HeadTailBudget, Retained
from toolbound.bounds.markers import head_tail_marker
from toolbound.bounds.newlines import (
    count_and_find,
    count_lines,
    count_newlines,
    nth_newline,
    nth_newline_from_end,
)
from toolbound.bounds.utf8 import prefix_end, suffix_start, utf8_len
from toolbound.limits import Budget, Ends, Keep

__all__ = ["Cut", "HeadTailCut", "count_lines", "cut"]

Fired = Literal["bytes", "lines", "capture"]

_NL = 0x0A


@dataclass(frozen=True, slots=True)
class Cut:
    """What :func:`cut` kept of one end, and the record of why.

    ``kept`` is the surviving text without a marker; ``payload`` is what the
    model sees (``kept`` plus the marker, when cut). Counts are of UTF-8 bytes
    and of lines as :func:`count_lines` counts them.
    """

    kept: str
    keep: Keep
    truncated: bool
    kept_bytes: int
    kept_lines: int
    total_bytes: int
    total_lines: int
    max_bytes: int
    max_lines: int
    fired: Fired | None
    # Set when not one complete line fitted: the size of the line that was cut.
    single_line_bytes: int | None = None
    spill_path: str | None = None

    @property
    def marker(self) -> str | None:
        """The seed's marker for this cut, or None when nothing was cut."""
        if not self.truncated:
            return None
        if self.single_line_bytes is not None:
            return markers.single_line_marker(
                kept_bytes=self.kept_bytes,
                line_bytes=self.single_line_bytes,
                max_bytes=self.max_bytes,
                spill_path=self.spill_path,
            )
        return markers.lines_marker(
            keep=self.keep,
            kept_lines=self.kept_lines,
            total_lines=self.total_lines,
            max_lines=self.max_lines,
            max_bytes=self.max_bytes,
            spill_path=self.spill_path,
        )

    @property
    def payload(self) -> str:
        """The kept text with the marker appended (head) or prepended (tail)."""
        marker = self.marker
        if marker is None:
            return self.kept
        if self.keep == "tail":
            return f"{marker}\n{self.kept}"
        if not self.kept or self.kept.endswith("\n"):
            return f"{self.kept}{marker}"
        return f"{self.kept}\n{marker}"

    def with_spill(self, spill_path: str | None) -> Cut:
        """The same cut, its marker naming a spill file that now exists."""
        return dataclasses.replace(self, spill_path=spill_path)


def _head_end(data: bytes, max_bytes: int, max_lines: int) -> tuple[int, Fired | None, int]:
    """Where a head cut ends (after whole lines within both limits), and the lines kept."""
    window = min(len(data), max_bytes)
    newlines, nth = count_and_find(data, max_lines, 0, window)
    if nth >= 0:
        end = nth + 1
        return end, ("lines" if end < len(data) else None), max_lines
    if len(data) <= max_bytes:
        return len(data), None, newlines + (1 if data and data[-1] != _NL else 0)
    if not newlines:
        return 0, "bytes", 0
    # rfind finds the last newline of the window: every newline counted is kept.
    return data.rfind(b"\n", 0, max_bytes) + 1, "bytes", newlines


def _tail_start(data: bytes, max_bytes: int, max_lines: int) -> tuple[int, Fired | None, int]:
    """Where a tail cut starts (the first of the last whole lines within both limits),
    and the lines kept."""
    window_start = max(0, len(data) - max_bytes - 1)
    # A final newline ends the last line; it does not separate two lines.
    body_end = len(data) - 1 if data and data[-1] == _NL else len(data)
    separators, nth = count_and_find(data, max_lines, window_start, body_end, from_end=True)
    if nth >= 0:
        return nth + 1, "lines", max_lines
    if len(data) <= max_bytes:
        return 0, None, separators + 1 if data else 0
    nl = data.find(b"\n", window_start)
    # Only a line start that leaves at least one complete line counts.
    if nl < 0 or nl + 1 >= len(data):
        return len(data), "bytes", 1
    # The separator at ``nl`` is the only one counted that is not kept.
    return nl + 1, "bytes", separators


def _edge_line(
    edge_line_bytes: int | None, body_end: int, held_bytes: int, whole_bytes: int, whole_lines: int
) -> int:
    """The size of a line that runs through all that is held: the caller's word
    if it gave one, else the held body, or the stream if it is one line."""
    if edge_line_bytes is not None:
        return edge_line_bytes
    if whole_bytes == held_bytes or whole_lines > 1:
        return body_end
    return whole_bytes


# What the caller knows of the whole stream beyond what it held (None: nothing):
# total_bytes, total_lines, edge_line_bytes.
_Whole = tuple[int | None, int | None, int | None]


@overload
def cut(
    held: str | bytes,
    budget: Budget,
    *,
    keep: Keep,
    total_bytes: int | None = None,
    total_lines: int | None = None,
    edge_line_bytes: int | None = None,
    spill_path: str | None = None,
) -> Cut: ...


@overload
def cut(
    held: str | bytes | Retained,
    budget: Budget | HeadTailBudget,
    *,
    keep: Literal["both"],
    head_share: float = 0.5,
    spill_path: str | None = None,
) -> HeadTailCut: ...


def cut(
    held: str | bytes | Retained,
    budget: Budget | HeadTailBudget,
    *,
    keep: Ends,
    total_bytes: int | None = None,
    total_lines: int | None = None,
    edge_line_bytes: int | None = None,
    head_share: float = 0.5,
    spill_path: str | None = None,
) -> Cut | HeadTailCut:
    """Cut ``held`` to ``budget`` (UTF-8 bytes and lines), keeping ``keep``'s end(s).

    ``held`` is what the caller retained of a stream. One end: ``total_bytes``
    and ``total_lines`` are the whole stream's true size, which may exceed
    what is held (a capture ceiling dropped the rest): the cut is then
    reported even if ``held`` itself fits; ``edge_line_bytes`` is the whole
    size of the stream's first line (head) or last line (tail), its newline
    not counted, when that line may run past what is held: a single-line
    marker names it. Both ends: ``held`` may be a :class:`Retained` (which
    knows what its capture dropped), and ``budget`` a ``HeadTailBudget`` or
    a ``Budget`` split with ``head_share`` of it to the head. Invalid UTF-8
    bytes are replaced with U+FFFD, never raised. ``spill_path`` names a full
    copy that was actually written. A ``str`` that carries a marker already
    is not cut again: ValueError (module docstring).
    """
    if keep == "both":
        ends = (
            budget
            if isinstance(budget, HeadTailBudget)
            else HeadTailBudget.split(budget, head_share=head_share)
        )
        data = held.encode("utf-8", "replace") if isinstance(held, str) else held
        both = _cut_both(data, ends, spill_path)
        if both.truncated and isinstance(held, str):
            _refuse_a_second_cut(held)
        return both
    if not isinstance(budget, Budget) or isinstance(held, Retained):
        raise TypeError("a one-end cut takes text or bytes and a Budget")
    whole = (total_bytes, total_lines, edge_line_bytes)
    one = _cut_end(held, budget.max_bytes, budget.max_lines, keep, whole, spill_path)
    if one.truncated and isinstance(held, str):
        _refuse_a_second_cut(held)
    return one


def _refuse_a_second_cut(text: str) -> None:
    if markers.carries_cut_marker(text):
        raise ValueError(
            "this text was cut already (it carries a truncation marker): cut the stream "
            "it came from, not a cut's payload"
        )


def _cut_end(
    held: str | bytes,
    max_bytes: int,
    max_lines: int,
    keep: Keep,
    whole: _Whole,
    spill_path: str | None,
) -> Cut:
    """One end of ``held`` within ``max_bytes`` and ``max_lines`` (``cut``'s contract)."""
    if max_bytes < 4:
        raise ValueError("max_bytes must hold at least one character (4 bytes)")
    if max_lines < 1:
        raise ValueError("max_lines must be at least 1")
    data = held.encode("utf-8", "replace") if isinstance(held, str) else held
    one = _cut(data, max_bytes, max_lines, keep, whole, spill_path)
    if one is None:
        # Replacement characters (3 bytes for each invalid byte) grew the kept
        # part past the budget: cut the repaired text instead.
        repaired = data.decode("utf-8", "replace").encode("utf-8")
        one = _cut(repaired, max_bytes, max_lines, keep, whole, spill_path)
        assert one is not None
    return one


def _cut(
    data: bytes, max_bytes: int, max_lines: int, keep: Keep, whole: _Whole, spill_path: str | None
) -> Cut | None:
    """Cut raw bytes; None if decoding the kept part grew it past ``max_bytes``."""
    total_bytes, total_lines, edge_line_bytes = whole
    # The size of a line too long to fit (its newline not counted), -1 if it
    # runs through all that is held.
    single_line: int | None = None
    body_end = len(data)
    if keep == "head":
        end, fired, kept_lines = _head_end(data, max_bytes, max_lines)
        if end == 0 and data:
            # Not one complete line fits: keep a char-safe prefix of the first line.
            # The window holds no newline: the first one is past it, if any.
            single_line = data.find(b"\n", min(len(data), max_bytes))
            end = prefix_end(data, max_bytes)
            kept_lines = 1
        kept_data = memoryview(data)[:end]
    else:
        start, fired, kept_lines = _tail_start(data, max_bytes, max_lines)
        if start == len(data) and data:
            # Not one complete line fits: keep a char-safe suffix of the last line.
            body_end -= 1 if data[-1] == _NL else 0
            # The window (the last max_bytes + 1) holds no separator: the last one is before it.
            nl = data.rfind(b"\n", 0, max(0, len(data) - max_bytes - 1))
            single_line = body_end - (nl + 1) if nl >= 0 else -1
            start = suffix_start(data, len(data) - max_bytes)
        kept_data = memoryview(data)[start:]

    # Decoded straight from the held buffer: no copy of the kept bytes first.
    kept = str(kept_data, "utf-8", "replace")
    kept_bytes = len(kept_data)
    if "\ufffd" in kept:
        kept_bytes = len(kept.encode("utf-8"))
        if kept_bytes > max_bytes:
            return None

    # The whole held text is counted only when the caller did not say how
    # large the stream was and something was cut.
    if fired is None:
        held_lines = kept_lines
    elif total_lines is None:
        held_lines = count_lines(data)
    else:
        held_lines = 0
    whole_bytes = max(total_bytes if total_bytes is not None else len(data), len(data))
    whole_lines = max(total_lines if total_lines is not None else held_lines, held_lines)
    if single_line == -1:
        single_line = _edge_line(edge_line_bytes, body_end, len(data), whole_bytes, whole_lines)
    if fired is None and (whole_bytes > len(data) or whole_lines > held_lines):
        fired = "capture"
    # Positional: a frozen dataclass sets each field through object.__setattr__,
    # and keywords cost a little more on top (measured 1.9 -> 1.6 us).
    return Cut(
        kept,
        keep,
        fired is not None,
        kept_bytes,
        kept_lines,
        whole_bytes,
        whole_lines,
        max_bytes,
        max_lines,
        fired,
        single_line,
        spill_path,
    )


@dataclass(frozen=True, slots=True)
class HeadTailCut:
    """What :func:`cut` kept of each end (``keep="both"``), and the record of the cut.

    ``head`` and ``tail`` are the kept text without a marker (``tail`` is empty
    when nothing was cut); ``payload`` is what the model sees. Byte counts are
    of the stream's bytes; ``head_lines``/``tail_lines`` count the lines each
    end holds (a part of a line counts as one), ``cut_lines`` the newlines cut.
    ``whole_lines`` is false when an end holds only part of a line.
    """

    head: str
    tail: str
    truncated: bool
    head_bytes: int
    tail_bytes: int
    head_lines: int
    tail_lines: int
    cut_bytes: int
    cut_lines: int
    total_bytes: int
    total_lines: int
    whole_lines: bool
    budget: HeadTailBudget
    spill_path: str | None = None

    @property
    def marker(self) -> str | None:
        """The marker that stands between the ends, or None when nothing was cut."""
        if not self.truncated:
            return None
        return head_tail_marker(
            head_lines=self.head_lines,
            tail_lines=self.tail_lines,
            head_bytes=self.head_bytes,
            tail_bytes=self.tail_bytes,
            cut_lines=self.cut_lines,
            cut_bytes=self.cut_bytes,
            total_lines=self.total_lines,
            total_bytes=self.total_bytes,
            whole_lines=self.whole_lines,
            limit=self.budget.label,
            spill_path=self.spill_path,
        )

    @property
    def payload(self) -> str:
        """The head, the marker, the tail; the kept text alone when nothing was cut."""
        marker = self.marker
        if marker is None:
            return self.head + self.tail
        joint = "" if not self.head or self.head.endswith("\n") else "\n"
        return f"{self.head}{joint}{marker}\n{self.tail}"

    def with_spill(self, spill_path: str | None) -> HeadTailCut:
        """The same cut, its marker naming a spill file that now exists."""
        return dataclasses.replace(self, spill_path=spill_path)


def _cut_both(
    source: Retained | bytes, budget: HeadTailBudget, spill_path: str | None
) -> HeadTailCut:
    """Cut a retained stream to ``budget``, keeping both ends (module docstring)."""
    kept = source if isinstance(source, Retained) else Retained.whole(source)
    total_bytes, total_lines = kept.total_bytes, kept.total_lines
    if kept.dropped_bytes == 0:
        data = kept.head + kept.tail
        text = data.decode("utf-8", "replace")
        if count_lines(data) <= budget.max_lines and utf8_len(text) <= budget.max_bytes:
            return _uncut(text, len(data), total_lines, budget, spill_path)
        head_end, head, head_whole = _fit_head(data, budget.head, at_end=True)
        rest = data[head_end:]
        tail_start, tail, tail_whole = _fit_tail(rest, budget.tail, at_line_start=head_whole)
        cut_bytes = tail_start
        cut_newlines = count_newlines(rest, 0, tail_start)
        if cut_bytes == 0:
            return _uncut(head + tail, len(data), total_lines, budget, spill_path)
    else:
        head_end, head, head_whole = _fit_head(kept.head, budget.head, at_end=False)
        tail_start, tail, tail_whole = _fit_tail(
            kept.tail, budget.tail, at_line_start=kept.tail_at_line_start
        )
        cut_bytes = len(kept.head) - head_end + kept.dropped_bytes + tail_start
        cut_newlines = (
            count_newlines(kept.head, head_end)
            + kept.dropped_newlines
            + count_newlines(kept.tail, 0, tail_start)
        )
    head_bytes = head_end
    tail_bytes = total_bytes - head_bytes - cut_bytes
    return HeadTailCut(
        head=head,
        tail=tail,
        truncated=True,
        head_bytes=head_bytes,
        tail_bytes=tail_bytes,
        head_lines=count_lines(head.encode()) if head else 0,
        tail_lines=count_lines(tail.encode()) if tail else 0,
        cut_bytes=cut_bytes,
        cut_lines=cut_newlines,
        total_bytes=total_bytes,
        total_lines=total_lines,
        whole_lines=head_whole and tail_whole,
        budget=budget,
        spill_path=spill_path,
    )


def _uncut(
    text: str, total_bytes: int, total_lines: int, budget: HeadTailBudget, spill_path: str | None
) -> HeadTailCut:
    return HeadTailCut(
        head=text,
        tail="",
        truncated=False,
        head_bytes=total_bytes,
        tail_bytes=0,
        head_lines=total_lines,
        tail_lines=0,
        cut_bytes=0,
        cut_lines=0,
        total_bytes=total_bytes,
        total_lines=total_lines,
        whole_lines=True,
        budget=budget,
        spill_path=spill_path,
    )


def _decoded_within(part: bytes, max_bytes: int) -> tuple[str, int]:
    """``part`` as text, and how far its U+FFFD repairs carry it past ``max_bytes``."""
    text = part.decode("utf-8", "replace")
    if "\ufffd" not in text:
        return text, 0
    return text, utf8_len(text) - max_bytes


def _fit_head(data: bytes, budget: Budget, *, at_end: bool) -> tuple[int, str, bool]:
    """Where the kept head ends, its text, and whether it is whole lines.

    Whole lines within both limits; when not one fits, a char-safe prefix of
    the first line. ``at_end``: ``data`` ends where the stream ends, so a
    final unterminated line is complete.
    """
    limit = budget.max_bytes
    while True:
        window = min(len(data), limit)
        nl = nth_newline(data, budget.max_lines, 0, window)
        whole = True
        if nl >= 0:
            end = nl + 1
        elif at_end and len(data) <= limit:
            end = len(data)
        else:
            end = data.rfind(b"\n", 0, window) + 1
        if end == 0 and data:
            end, whole = prefix_end(data, window), False
        text, excess = _decoded_within(data[:end], budget.max_bytes)
        if excess <= 0:
            return end, text, whole
        limit = max(0, limit - excess)


def _fit_tail(data: bytes, budget: Budget, *, at_line_start: bool) -> tuple[int, str, bool]:
    """Where the kept tail starts, its text, and whether it is whole lines.

    The last whole lines within both limits; when not one fits, a char-safe
    suffix of the last line. ``at_line_start``: ``data`` begins a line.
    """
    body_end = len(data) - 1 if data and data[-1] == _NL else len(data)
    limit = budget.max_bytes
    while True:
        window_start = max(0, len(data) - limit)
        # A newline just before the window makes its first byte a line start.
        lo = max(0, window_start - 1)
        nl = nth_newline_from_end(data, budget.max_lines, lo, body_end)
        whole = True
        if nl >= 0:
            start = nl + 1
        elif window_start == 0 and at_line_start:
            start = 0
        else:
            first = data.find(b"\n", lo, body_end)
            if first >= 0:
                start = first + 1
            else:
                start, whole = suffix_start(data, window_start), False
        text, excess = _decoded_within(data[start:], budget.max_bytes)
        if excess <= 0:
            return start, text, whole
        limit = max(0, limit - excess)
