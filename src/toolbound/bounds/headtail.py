"""Head and tail: keep both ends of a stream, say what was cut between them.

A build or a test run states its setup first and its verdict last (``SUMMARY:
1 failed``), so a cut that keeps only the head loses the verdict and one that
keeps only the tail loses the command's own first words. The economy profile
keeps both ends of stdout, and its capture and spill keep both ends too.

Two stages, both pure and on bytes (the readers feed them; nothing here does
I/O):

1. :class:`HeadTailCapture` retains a stream within a ceiling: its first
   bytes and lines (the head) and a rolling last part (the tail), counting
   exactly what it dropped between them. Memory is the head plus the tail
   plus one chunk, whatever the stream's size.
2. ``bounds.truncate.cut(retained, budget, keep="both")``, the one cutter,
   cuts what was retained to a model budget (:class:`HeadTailBudget`): the
   first whole lines within the head budget, the last whole lines within the
   tail budget, and a marker between them.

The markers (``markers.head_tail_marker``, ``markers.gap_marker``) follow the
seed's vocabulary, with the cut named where it happened::

    [truncated: kept the first 120 and the last 240 of 300001 lines; 299641 lines
    (1986850 bytes) cut here; limit 360 lines / 16KB. Full output saved to <path>
    — Grep it, or Read it with offset/limit.]
    [truncated: kept the first 8192 and the last 8192 bytes of a single
    4200000-byte line; 4183616 bytes cut here; limit 360 lines / 16KB. Narrow
    the request to see more.]

A spill of a stream the capture cut keeps both ends with
:func:`gap_marker`'s line between them (:meth:`Retained.spill_bytes`).

Between the two stages the economy profile turns the raw ends into what a
terminal shows (:func:`shown_ends`: ``bounds.terminal.collapse`` of each
end, or of the whole stream when nothing was dropped), so a cut counts and
keeps the lines a reader would see, not the rewrites of a progress bar.

Pieces:
    HeadTailBudget  a head budget and a tail budget, one policy value
    Retained        a stream's kept head and tail, and what was dropped between
    HeadTailCapture the bounded retainer: feed() / finish() -> Retained
    shown_ends      Retained raw bytes -> Retained as a terminal shows them, and the bytes elided
"""

from __future__ import annotations

import codecs
import collections
import dataclasses
from dataclasses import dataclass

from toolbound.bounds.markers import gap_marker
from toolbound.bounds.newlines import count_newlines, nth_newline, nth_newline_from_end
from toolbound.bounds.terminal import collapse
from toolbound.limits import Budget, budget_label

_NL = 0x0A


@dataclass(frozen=True, slots=True)
class HeadTailBudget:
    """How much of each end a cut keeps; the limit the marker names is their sum."""

    head: Budget
    tail: Budget

    @classmethod
    def split(cls, budget: Budget, *, head_share: float) -> HeadTailBudget:
        """``budget`` shared between the ends, ``head_share`` of it to the head."""
        if not 0.0 < head_share < 1.0:
            raise ValueError("head_share must be between 0 and 1")
        head_bytes = max(4, int(budget.max_bytes * head_share))
        head_lines = max(1, int(budget.max_lines * head_share))
        return cls(
            head=Budget(max_bytes=head_bytes, max_lines=head_lines),
            tail=Budget(
                max_bytes=max(4, budget.max_bytes - head_bytes),
                max_lines=max(1, budget.max_lines - head_lines),
            ),
        )

    @property
    def max_bytes(self) -> int:
        return self.head.max_bytes + self.tail.max_bytes

    @property
    def max_lines(self) -> int:
        return self.head.max_lines + self.tail.max_lines

    @property
    def label(self) -> str:
        """The limit as the markers state it, e.g. ``360 lines / 16KB``."""
        return budget_label(self.max_lines, self.max_bytes)


@dataclass(frozen=True, slots=True)
class Retained:
    """A stream as retained: its first bytes (``head``), its last (``tail``), and
    the ``dropped_bytes`` between them, of which ``dropped_newlines`` were ``\\n``.

    ``tail_at_line_start`` says whether ``tail`` begins a line (the byte before
    it was a newline, or it is the stream's start).
    """

    head: bytes
    tail: bytes = b""
    dropped_bytes: int = 0
    dropped_newlines: int = 0
    tail_at_line_start: bool = True

    @classmethod
    def whole(cls, data: bytes) -> Retained:
        """A stream retained in full."""
        return cls(head=data)

    @property
    def total_bytes(self) -> int:
        return len(self.head) + self.dropped_bytes + len(self.tail)

    @property
    def total_lines(self) -> int:
        """Lines as the markers count them: newline-terminated, plus a final unterminated one."""
        newlines = count_newlines(self.head) + self.dropped_newlines + count_newlines(self.tail)
        last = self.tail or self.head
        if not last:
            return newlines if self.dropped_bytes == 0 else newlines + 1
        return newlines + (0 if last[-1] == _NL else 1)

    def whole_char_ends(self) -> tuple[bytes, bytes]:
        """The head and the tail without a character the capture cut in two: a
        head stops before an unfinished last character, a tail starts after the
        continuation bytes it begins with (only when something was dropped)."""
        if self.dropped_bytes == 0:
            return self.head, self.tail
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        decoder.decode(self.head)
        unfinished = len(decoder.getstate()[0])
        start = 0
        while start < min(3, len(self.tail)) and self.tail[start] & 0xC0 == 0x80:
            start += 1
        return self.head[: len(self.head) - unfinished], self.tail[start:]

    def within(self, max_bytes: int) -> Retained:
        """The same stream with at most ``max_bytes`` kept, half at each end; what
        no longer fits counts as dropped. The tail keeps at least a byte, so the
        stream's last line is still counted right."""
        if max_bytes < 1:
            raise ValueError("within() keeps at least one byte")
        if len(self.head) + len(self.tail) <= max_bytes:
            return self
        data = self.head + self.tail if self.dropped_bytes == 0 else None
        head_end = max_bytes // 2
        if data is not None:
            tail_start = len(data) - (max_bytes - head_end)
            return Retained(
                head=data[:head_end],
                tail=data[tail_start:],
                dropped_bytes=tail_start - head_end,
                dropped_newlines=count_newlines(data, head_end, tail_start),
                tail_at_line_start=data[tail_start - 1] == _NL,
            )
        head_end = min(len(self.head), head_end)
        tail_start = max(0, len(self.tail) - (max_bytes - head_end))
        return Retained(
            head=self.head[:head_end],
            tail=self.tail[tail_start:],
            dropped_bytes=self.dropped_bytes + len(self.head) - head_end + tail_start,
            dropped_newlines=self.dropped_newlines
            + count_newlines(self.head, head_end)
            + count_newlines(self.tail, 0, tail_start),
            tail_at_line_start=self.tail_at_line_start
            if tail_start == 0
            else self.tail[tail_start - 1] == _NL,
        )

    def spill_within(
        self, max_bytes: int, *, head_ceiling_bytes: int, tail_ceiling_bytes: int
    ) -> bytes:
        """:meth:`spill_bytes` of this stream cut (``within``) so that the spill,
        its gap marker line included, is at most ``max_bytes``."""
        if self.dropped_bytes == 0 and len(self.head) + len(self.tail) <= max_bytes:
            return self.head + self.tail
        room = max_bytes
        while True:
            data = self.within(room).spill_bytes(
                head_ceiling_bytes=head_ceiling_bytes, tail_ceiling_bytes=tail_ceiling_bytes
            )
            if len(data) <= max_bytes or room <= 1:
                return data
            # The marker and its line breaks take what the stream's ends must give up.
            room = max(1, room - (len(data) - max_bytes))

    def spill_bytes(self, *, head_ceiling_bytes: int, tail_ceiling_bytes: int) -> bytes:
        """The stream's retained bytes for a spill file: exact when nothing was
        dropped, else both ends with :func:`gap_marker`'s line between them."""
        if self.dropped_bytes == 0:
            return self.head + self.tail
        gap = gap_marker(
            dropped_bytes=self.dropped_bytes,
            dropped_newlines=self.dropped_newlines,
            head_ceiling_bytes=head_ceiling_bytes,
            tail_ceiling_bytes=tail_ceiling_bytes,
        )
        joint = b"" if not self.head or self.head[-1] == _NL else b"\n"
        return self.head + joint + gap.encode() + b"\n" + self.tail


class HeadTailCapture:
    """Retains a stream's first ``head`` and last ``tail`` bytes and lines.

    The head fills first (ending after its ``max_lines``-th newline at the
    latest); everything after it goes through a ring that drops whole chunks
    from its front once the rest still covers the tail's bytes, so the tail is
    cut by bytes and then by lines at the end, exactly. Every byte and newline
    dropped is counted.
    """

    def __init__(self, *, head: Budget, tail: Budget) -> None:
        self._head_budget = head
        self._tail_budget = tail
        self._head = bytearray()
        self._head_newlines = 0
        self._head_full = False
        self._ring: collections.deque[bytes] = collections.deque()
        self._held = 0
        self._before_ring: int | None = None
        self._bytes = 0
        self._newlines = 0

    def feed(self, data: bytes) -> None:
        self._bytes += len(data)
        self._newlines += count_newlines(data)
        if not self._head_full:
            room = self._head_budget.max_lines - self._head_newlines
            taken = data[: self._head_budget.max_bytes - len(self._head)]
            if room <= 0:
                taken = b""
            else:
                nl = nth_newline(taken, room)
                taken = taken if nl < 0 else taken[: nl + 1]
            self._head += taken
            self._head_newlines += count_newlines(taken)
            if len(taken) < len(data):
                self._head_full = True
                data = data[len(taken) :]
            else:
                return
        if not data:
            return
        self._ring.append(data)
        self._held += len(data)
        while self._held - len(self._ring[0]) >= self._tail_budget.max_bytes:
            dropped = self._ring.popleft()
            self._held -= len(dropped)
            self._before_ring = dropped[-1]

    def finish(self) -> Retained:
        joined = b"".join(self._ring)
        start = max(0, len(joined) - self._tail_budget.max_bytes)
        body_end = len(joined) - 1 if joined and joined[-1] == _NL else len(joined)
        nl = nth_newline_from_end(joined, self._tail_budget.max_lines, start, body_end)
        start = max(start, nl + 1)
        tail = joined[start:]
        head = bytes(self._head)
        if start > 0:
            before: int | None = joined[start - 1]
        elif self._before_ring is not None:
            before = self._before_ring
        else:
            before = head[-1] if head else _NL
        dropped = self._bytes - len(head) - len(tail)
        return Retained(
            head=head,
            tail=tail,
            dropped_bytes=dropped,
            dropped_newlines=self._newlines - self._head_newlines - count_newlines(tail),
            tail_at_line_start=before == _NL,
        )


def shown_ends(raw: Retained) -> tuple[Retained, int]:
    """``raw``'s ends as a terminal shows them (rewrites collapsed, styling removed),
    and the UTF-8 bytes that removed; what was dropped between the ends stays counted.

    A character either end cut in two is left out (its bytes count as elided);
    other invalid UTF-8 shows as U+FFFD.
    """
    if raw.dropped_bytes == 0:
        whole = collapse((raw.head + raw.tail).decode("utf-8", "replace"))
        return Retained.whole(whole.text.encode()), whole.elided_bytes
    head_bytes, tail_bytes = raw.whole_char_ends()
    head = collapse(head_bytes.decode("utf-8", "replace")).text.encode()
    tail = collapse(tail_bytes.decode("utf-8", "replace")).text.encode()
    # A tail whose first line is rewritten from column 0 shows that line whole.
    first_line = tail_bytes[: tail_bytes.find(b"\n") + 1 or len(tail_bytes)]
    at_line_start = raw.tail_at_line_start or b"\r" in first_line
    shown = dataclasses.replace(raw, head=head, tail=tail, tail_at_line_start=at_line_start)
    return shown, max(0, len(raw.head) + len(raw.tail) - len(head) - len(tail))
