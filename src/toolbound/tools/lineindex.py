"""A sparse line index per file, so a deep ``offset`` is fast on repeat.

Finding where line N starts means counting N newlines. The first time, that
is a scan of the file in ``SCAN_BLOCK_BYTES`` blocks with ``bytes.count``
(C speed, no Python step per line), O(block) memory however big the file.
The scan leaves behind one known line start per block (the line start
nearest each block's end), so a later request starts counting from the
nearest known start at or before its line: at most about one block of work.

An index is keyed by device, inode, size and modification time, so a file
that changed (grew, was rewritten) is indexed afresh and a line number always
means what the file holds now. Memory is bounded twice: the stride between
entries grows for huge files so one index holds at most ``MAX_ENTRIES``
entries, and the cache keeps the ``CACHE_FILES`` most recently used indexes.

Pieces:
    FileKey     (st_dev, st_ino, st_size, st_mtime_ns) of an open file
    Located     where a line starts, or how many lines there are
    ScanStopped a scan ended early because its call was aborted
    LineIndex   one file's known line starts; locate(line) -> Located
    IndexCache  a thread-safe LRU of LineIndex by FileKey
    INDEXES     the process-wide cache Read uses
"""

from __future__ import annotations

import os
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from toolbound.bounds.newlines import count_newlines, nth_newline

# One read of the scan. 1 MiB: large enough that the syscall and the Python
# step per block vanish next to bytes.count, small enough to stay in cache.
SCAN_BLOCK_BYTES = 1 << 20
# The first read of a scan; each next one doubles, up to SCAN_BLOCK_BYTES.
FIRST_READ_BYTES = 64 * 1024
# Entries per file at most: 16384 * 16 bytes = 256 KB, whatever the file size.
MAX_ENTRIES = 16384
# Indexes kept (least recently used dropped first).
CACHE_FILES = 8

ReadInto = Callable[[memoryview, int], int]
"""``read_into(buffer, position)``: fill ``buffer`` from ``position``; bytes read."""


Stop = Callable[[], bool]


def _never() -> bool:
    return False


class ScanStopped(Exception):
    """A scan was stopped (the call was aborted) after counting ``lines`` lines."""

    def __init__(self, lines: int) -> None:
        super().__init__(f"stopped after counting {lines} lines")
        self.lines = lines


@dataclass(frozen=True, slots=True)
class Located:
    """Where a line starts (``start``), or None and the file's line count (``total_lines``)."""

    start: int | None
    total_lines: int | None


@dataclass(frozen=True, slots=True)
class FileKey:
    """What must not change for an index to stay true."""

    dev: int
    ino: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileKey:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class LineIndex:
    """Known line starts of one file version: ``(line number, byte offset)`` pairs.

    Everything before the frontier has been counted, with an entry about
    every ``stride`` bytes; past it nothing is known yet. ``total_lines`` is
    set once a scan reached the end. Methods are safe to call from several
    threads (one scan at a time per file).
    """

    def __init__(self, key: FileKey) -> None:
        self.key = key
        self.stride = max(SCAN_BLOCK_BYTES, -(-key.size // MAX_ENTRIES))
        self._lines = array("q", [0])
        self._starts = array("q", [0])
        self._frontier = (0, 0)
        self.total_lines: int | None = 0 if key.size == 0 else None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._lines)

    def locate(self, line: int, read_into: ReadInto, *, stop: Stop = _never) -> Located:
        """Where ``line`` (0-based) starts; or None and how many lines the file has.

        ``stop`` is asked between blocks; when it says yes the scan ends with
        :class:`ScanStopped`, keeping what it counted for the next call.
        """
        with self._lock:
            if self.total_lines is not None and line >= self.total_lines:
                return Located(None, self.total_lines)
            front_line, front_byte = self._frontier
            if line >= front_line:
                return self._scan(front_line, front_byte, line, read_into, stop, extend=True)
            at = self._nearest(line)
            return self._scan(
                self._lines[at], self._starts[at], line, read_into, stop, extend=False
            )

    def _nearest(self, line: int) -> int:
        """Index of the last entry at or before ``line`` (entries are sorted, first is 0)."""
        lo, hi = 0, len(self._lines)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._lines[mid] <= line:
                lo = mid
            else:
                hi = mid
        return lo

    def _scan(
        self,
        from_line: int,
        from_byte: int,
        line: int,
        read_into: ReadInto,
        stop: Stop,
        *,
        extend: bool,
    ) -> Located:
        """Count newlines from a known line start until ``line`` starts or the file ends.

        With ``extend`` the scan is past the frontier: it records entries, moves
        the frontier and, at the end, learns ``total_lines``.
        """
        end = self.key.size
        pos, seen, need = from_byte, from_line, line - from_line
        line_start = from_byte  # start of the line holding pos
        if need > 0:
            buf = bytearray(min(SCAN_BLOCK_BYTES, max(1, end - pos)))
            view = memoryview(buf)
            # Start small and double: a hop of a few lines (the next page, a
            # nearby entry) should not cost a whole block.
            block = FIRST_READ_BYTES
            while pos < end:
                n = read_into(view[: min(block, len(buf), end - pos)], pos)
                block *= 2
                if n <= 0:
                    end = pos  # the file shrank under us: it ends here
                    break
                count = count_newlines(buf, 0, n)
                if count >= need:
                    pos += nth_newline(buf, need, 0, n) + 1
                    seen += need
                    need = 0
                    line_start = pos
                    break
                if count:
                    line_start = pos + buf.rfind(b"\n", 0, n) + 1
                    if extend:
                        self._record(seen + count, line_start)
                need -= count
                seen += count
                pos += n
                if stop():
                    if extend:
                        self._frontier = (seen, line_start)
                    raise ScanStopped(seen)
        if need == 0 and pos < end:
            if extend:
                self._frontier = (seen, pos)
            return Located(pos, None)
        # The end came first. A last line without a newline still counts as a line.
        total = seen + (1 if line_start < end else 0)
        if extend:
            self.total_lines = total
            self._frontier = (seen, line_start)
        if line < total:
            return Located(line_start, None)
        return Located(None, total)

    def _record(self, line: int, start: int) -> None:
        if start - self._starts[-1] >= self.stride and line > self._lines[-1]:
            self._lines.append(line)
            self._starts.append(start)


class IndexCache:
    """The most recently used indexes, by file key (thread-safe)."""

    def __init__(self, capacity: int = CACHE_FILES) -> None:
        self.capacity = capacity
        self._items: OrderedDict[FileKey, LineIndex] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: FileKey) -> LineIndex:
        """The index for ``key``, created empty if absent; drops the least recently used."""
        with self._lock:
            index = self._items.get(key)
            if index is None:
                index = self._items[key] = LineIndex(key)
                while len(self._items) > self.capacity:
                    self._items.popitem(last=False)
            else:
                self._items.move_to_end(key)
            return index

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


INDEXES = IndexCache()
