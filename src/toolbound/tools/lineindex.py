"""A sparse line index per file, so a deep ``offset`` is fast on repeat.

Finding where line N starts means counting N newlines. The first time, that
is a scan of the file in ``SCAN_BLOCK_BYTES`` blocks (the SIMD count of
``bounds.newlines``; no Python step per line), O(block) memory however big
the file. The scan leaves behind one known line start per block (the line
start nearest each block's end), so a later request starts counting from the
nearest known start at or before its line: at most about one block of work.

A long first scan is where a fresh process spends its first deep Read, so it
takes the fastest path there is (measured on 300 MB in page cache, ``tail -n
+N`` taking 80-95 ms): past ``COUNT_AHEAD_BYTES`` a second thread counts the
far half of the span while the scan counts the near one. The count holds the
GIL but the reads do not, so each thread's read runs beside the other's count
(measured at line 4,999,000: 42-51 ms with the second thread, 69-70 ms
without); the scan then walks the far half's block counts and rereads only
the block its line is in. The far half is that of
the way to the line as the first block's line density estimates it, so a
line in the middle of the file costs no count of the rest (measured at line
2,500,000 of 5,000,000: splitting the whole file doubled the CPU).

An index is keyed by device, inode, size and modification time, so a file
that changed (grew, was rewritten) is indexed afresh and a line number always
means what the file holds now. Memory is bounded twice: the stride between
entries grows for huge files so one index holds at most ``MAX_ENTRIES``
entries, and the cache keeps the ``CACHE_FILES`` most recently used indexes.

Pieces:
    FileKey     (st_dev, st_ino, st_size, st_mtime_ns) of an open file
    Located     where a line starts, or how many lines there are
    ScanStopped a scan ended early because its call was aborted
    CountAhead  counts the far part of a long scan in a second thread
    LineIndex   one file's known line starts; locate(line) -> Located
    IndexCache  a thread-safe LRU of LineIndex by FileKey
    INDEXES     the process-wide cache Read uses
"""

from __future__ import annotations

import contextlib
import os
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Generator
from dataclasses import dataclass

from toolbound.bounds.newlines import count_newlines, nth_newline

# One read of the scan. 256 KB: large enough that the syscall and the Python
# step per block vanish next to the count, small enough that the block and
# its flags stay in L2 (measured on 300 MB with numpy's count: 58 ms against
# 66-94 ms in 1 MiB blocks).
SCAN_BLOCK_BYTES = 256 * 1024
# The first read of a scan; each next one doubles, up to SCAN_BLOCK_BYTES.
FIRST_READ_BYTES = 64 * 1024
# Entries per file at most: 16384 * 16 bytes = 256 KB, whatever the file size.
MAX_ENTRIES = 16384
# Indexes kept (least recently used dropped first).
CACHE_FILES = 8
# A scan with at least this much left to count splits it with a second thread.
# Starting one costs about 0.1 ms, a tenth of what it saves on 32 MB.
COUNT_AHEAD_BYTES = 32 * 1024 * 1024

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
            found = False
            with contextlib.closing(_blocks(read_into, pos, end, need, stop)) as blocks:
                for buf, n, count, last in blocks:
                    if count >= need:
                        at = nth_newline(
                            _reread(read_into, pos, n) if buf is None else buf, need, 0, n
                        )
                        if at >= 0:  # else the file changed under us: it ends here
                            pos += at + 1
                            seen += need
                            need = 0
                            line_start = pos
                            found = True
                        break
                    if count:
                        line_start = pos + last + 1
                        if extend:
                            self._record(seen + count, line_start)
                    need -= count
                    seen += count
                    pos += n
                    if stop():
                        break
            if not found and stop():
                # Aborted (a count-ahead thread stops too, so its blocks may end early).
                if extend:
                    self._frontier = (seen, line_start)
                raise ScanStopped(seen)
            if not found:
                end = pos  # counted to the end (or the file shrank under us: it ends here)
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


# One block of a scan: its bytes (None when the count-ahead thread counted it),
# its size, its newlines, and the offset of its last newline in it (-1: none).
_Block = tuple[bytearray | None, int, int, int]


def _blocks(
    read_into: ReadInto, pos: int, end: int, need: int, stop: Stop
) -> Generator[_Block, None, None]:
    """The blocks of bytes ``pos .. end``, counted, for a scan looking for its
    ``need``-th newline; fewer if the file shrank.

    Once the first block shows the line density, a long way to go is split: a
    :class:`CountAhead` counts the far half of the estimated way while this
    thread counts the near half, then this thread goes on alone past it (only
    if the estimate fell short). Closing the iterator stops and joins that
    thread, so no read outlives the scan (its caller closes the file next).
    """
    buf = bytearray(min(SCAN_BLOCK_BYTES, max(1, end - pos)))
    view = memoryview(buf)
    ahead: CountAhead | None = None
    first, limit = pos, end
    try:
        # Start small and double: a hop of a few lines (the next page, a
        # nearby entry) should not cost a whole block.
        block = FIRST_READ_BYTES
        while pos < end:
            if ahead is not None and pos == ahead.start:
                for n, count, last in ahead.counted():
                    yield None, n, count, last
                    pos += n
                if pos < ahead.end:
                    return  # the file shrank under us (or the scan was stopped)
                limit = end
                continue
            n = read_into(view[: min(block, len(buf), limit - pos)], pos)
            block *= 2
            if n <= 0:
                return  # the file shrank under us: it ends here
            count = count_newlines(buf, 0, n)
            yield buf, n, count, buf.rfind(b"\n", 0, n) if count else -1
            pos += n
            need -= count
            if pos - n == first:  # the first block: how far the rest goes, and how to go
                ahead = _count_ahead(read_into, pos, end, _estimate(pos - first, count, need), stop)
                limit = end if ahead is None else ahead.start
    finally:
        if ahead is not None:
            ahead.close()


def _estimate(counted_bytes: int, newlines_seen: int, need: int) -> int | None:
    """Bytes to the ``need``-th next newline at the density seen so far (None: no
    newline seen, no estimate)."""
    if not newlines_seen:
        return None
    return need * counted_bytes // newlines_seen


def _count_ahead(
    read_into: ReadInto, pos: int, end: int, way: int | None, stop: Stop
) -> CountAhead | None:
    """A CountAhead over the far half of the estimated ``way`` from ``pos`` (with
    an eighth to spare), if it is long enough to repay the thread."""
    span = end - pos if way is None else min(end - pos, way + way // 8 + SCAN_BLOCK_BYTES)
    if span < COUNT_AHEAD_BYTES:
        return None
    far_end = pos + span
    return CountAhead(read_into, _split(pos, far_end), far_end, stop)


def _split(start: int, end: int) -> int:
    """Where the far half of ``start .. end`` starts, on a block boundary."""
    return start + (end - start) // 2 // SCAN_BLOCK_BYTES * SCAN_BLOCK_BYTES


def _reread(read_into: ReadInto, pos: int, size: int) -> bytearray:
    """A block the count-ahead thread counted, read again to find a line in it."""
    buf = bytearray(size)
    n = read_into(memoryview(buf), pos)
    return buf if n == size else buf[:n]


class CountAhead:
    """Counts bytes ``start .. end`` in its own thread, block by block.

    ``counted`` waits for it and gives the blocks as ``(size, newlines, offset
    of the last newline or -1)``, fewer if the file ended early; ``close``
    stops it within one block and waits for it. A read error is raised by
    ``counted``. It also stops, within one block, once ``stop`` says so.
    """

    def __init__(self, read_into: ReadInto, start: int, end: int, stop: Stop) -> None:
        self.start, self.end = start, end
        self._blocks: list[tuple[int, int, int]] = []
        self._error: BaseException | None = None
        self._cancelled = False
        self._thread = threading.Thread(
            target=self._run, args=(read_into, stop), name="toolbound-count-ahead", daemon=True
        )
        self._thread.start()

    def _run(self, read_into: ReadInto, stop: Stop) -> None:
        try:
            buf = bytearray(min(SCAN_BLOCK_BYTES, self.end - self.start))
            view = memoryview(buf)
            pos = self.start
            while pos < self.end and not (self._cancelled or stop()):
                n = read_into(view[: min(len(buf), self.end - pos)], pos)
                if n <= 0:
                    return
                count = count_newlines(buf, 0, n)
                self._blocks.append((n, count, buf.rfind(b"\n", 0, n) if count else -1))
                pos += n
        except BaseException as err:  # handed to the scan's thread by counted()
            self._error = err

    def counted(self) -> list[tuple[int, int, int]]:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._blocks

    def close(self) -> None:
        self._cancelled = True
        self._thread.join()


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
