"""Bounded ordering: newest files first, then by line, without holding the whole result.

Pure data structures: nothing here does I/O, so they are tested on their own.
A search may find ten million matches; these keep only what can still reach
the requested page, so memory follows ``offset + headLimit``, not the tree.

Pieces:
    NewestFiles   the N newest files seen so far (ties: path order), a heap
    Entry         one Grep content line: its file's rank, its line number, its text
    FirstEntries  the N first (rank, line) entries seen so far, a heap
    Fit           how many leading items fit, and the ceiling that stopped the rest
    fit_budget    how many leading items fit a count, byte and line budget
    item_size     what one entry adds to a serialized list
    fit_page      a whole result built to fit its budget, measured serialized
    wire_size     a result's size as JSON (UTF-8 bytes)
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from toolbound.limits import Budget
from toolbound.results import WireModel

T = TypeVar("T")
R = TypeVar("R", bound=WireModel)

# What json.dumps puts between two list items.
_ITEM_SEPARATOR_BYTES = len(", ")


class _Ranked:
    """A file in the heap; ``a < b`` means a ranks *after* b (older, or later path)."""

    __slots__ = ("mtime_ns", "path")

    def __init__(self, mtime_ns: int, path: bytes) -> None:
        self.mtime_ns = mtime_ns
        self.path = path

    def __lt__(self, other: _Ranked) -> bool:
        if self.mtime_ns != other.mtime_ns:
            return self.mtime_ns < other.mtime_ns
        return self.path > other.path


class NewestFiles:
    """Keeps the ``capacity`` newest files offered (newest mtime first, ties by path).

    ``would_keep`` is a cheap test before any costly check of a candidate (the
    binary sniff), so only files that can still rank are opened.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._heap: list[_Ranked] = []
        # Set once a file was turned away or pushed out: more matched than fit.
        self.overflowed = False

    def would_keep(self, mtime_ns: int, path: bytes) -> bool:
        """Whether a file would enter the heap now."""
        if len(self._heap) < self.capacity:
            return True
        worst = self._heap[0]
        keep = mtime_ns > worst.mtime_ns or (mtime_ns == worst.mtime_ns and path < worst.path)
        self.overflowed |= not keep
        return keep

    def contenders(self, mtimes: list[int], paths: list[bytes]) -> list[tuple[int, bytes]]:
        """The files of a batch that may still enter the heap, in batch order.

        One comprehension instead of a ``would_keep`` call per file: once the
        heap is full, a file ranking after the worst kept one cannot enter
        (the worst only improves as files are added, so the batch's first
        worst is a safe bar). Ties are settled by path here too: an installed
        tree gives many files one mtime (Glob ``**/*.py`` on the stdlib tree:
        ~2,400 -> ~1,300 files left for ``would_keep``; none fewer on
        site-packages, where the first read fills the heap).
        """
        pairs = zip(mtimes, paths, strict=True)
        if len(self._heap) < self.capacity:
            return list(pairs)
        worst = self._heap[0]
        floor, last = worst.mtime_ns, worst.path
        out = [(m, p) for m, p in pairs if m > floor or (m == floor and p < last)]
        self.overflowed |= len(out) < len(paths)
        return out

    def add(self, mtime_ns: int, path: bytes) -> None:
        """Add a file ``would_keep`` accepted."""
        item = _Ranked(mtime_ns, path)
        if len(self._heap) < self.capacity:
            heapq.heappush(self._heap, item)
        else:
            self.overflowed = True
            heapq.heapreplace(self._heap, item)

    def ranked(self) -> list[bytes]:
        """The kept paths, best first."""
        return [r.path for r in sorted(self._heap, reverse=True)]


@dataclass(frozen=True, slots=True)
class Entry:
    """One Grep content line: the rank of its file, its line number, its clipped text."""

    rank: int
    line: int
    text: str
    clipped: bool
    # A before/after line shown around a match, not a match.
    context: bool = False
    # Where a clipped line's window starts (1-based characters), when not at 1.
    column: int | None = None


class FirstEntries:
    """Keeps the ``capacity`` smallest ``(rank, line)`` entries offered; ``matches``
    counts the kept entries that are matches (not context lines)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.matches = 0
        # Negated keys: heap[0] is the entry ranking last.
        self._heap: list[tuple[int, int, str, bool, bool, int]] = []

    def add(
        self,
        rank: int,
        line: int,
        text: str,
        clipped: bool,
        context: bool = False,
        column: int | None = None,
    ) -> None:
        item = (-rank, -line, text, clipped, context, column or 0)
        if len(self._heap) < self.capacity:
            heapq.heappush(self._heap, item)
        elif item > self._heap[0]:
            dropped = heapq.heapreplace(self._heap, item)
            self.matches -= not dropped[4]
        else:
            return
        self.matches += not context

    def __len__(self) -> int:
        return len(self._heap)

    def ranked(self) -> list[Entry]:
        """The kept entries in order (rank, then line)."""
        return [
            Entry(-r, -n, t, c, x, col or None)
            for r, n, t, c, x, col in sorted(self._heap, reverse=True)
        ]


@dataclass(frozen=True, slots=True)
class Fit:
    """How many leading items fit, and which ceiling stopped the rest (if any)."""

    count: int
    stopped_by: str | None


def fit_budget(
    items: Sequence[T],
    *,
    head_limit: int,
    budget: Budget,
    cost: Callable[[T], int],
    fixed_bytes: int = 0,
) -> Fit:
    """The longest prefix of ``items`` within ``head_limit`` entries and ``budget``.

    Each item is one line of the budget and ``cost(item)`` bytes; ``fixed_bytes``
    is what the result spends outside its entries. At least the first item is
    kept when it alone fits the bytes.
    """
    used = fixed_bytes
    for i, item in enumerate(items):
        if i >= head_limit:
            return Fit(i, "headLimit")
        if i >= budget.max_lines:
            return Fit(i, "lines")
        used += cost(item)
        if used > budget.max_bytes:
            return Fit(i, "bytes")
    return Fit(len(items), None)


def wire_size(result: WireModel) -> int:
    """The result's size as the model gets it: JSON, UTF-8 bytes."""
    return len(json.dumps(result.to_wire(), ensure_ascii=False).encode())


def item_size(item: object) -> int:
    """What one JSON-able entry adds to a serialized list."""
    return len(json.dumps(item, ensure_ascii=False).encode()) + _ITEM_SEPARATOR_BYTES


def fit_page(
    build: Callable[[int, str | None], R],
    items: Sequence[T],
    *,
    head_limit: int,
    budget: Budget,
    cost: Callable[[T], int],
) -> R:
    """``build(n, stopped_by)`` for the largest ``n`` whose whole result fits ``budget``.

    The entries are fitted first (one line each, ``cost`` bytes each, after the
    empty result's size); then the result is measured whole, and entries are
    dropped while it is still over (its notice can grow with ``n``).
    """
    fit = fit_budget(
        items,
        head_limit=head_limit,
        budget=budget,
        cost=cost,
        fixed_bytes=wire_size(build(0, "bytes")),
    )
    n = fit.count
    result = build(n, fit.stopped_by)
    while n > 0 and wire_size(result) > budget.max_bytes:
        n -= 1
        result = build(n, "bytes")
    return result
