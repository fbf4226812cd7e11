"""Bounded capture of one output stream (seed "Bash capture retention").

A command may write gigabytes; the host keeps a bounded copy and counts the
rest. Under the seed's table stdout keeps its *first* ``max_bytes`` /
``max_lines`` (a head), stderr its *last* ones (a ring), because a failing
command's actionable message is the last thing it printed; the economy
profile keeps both ends of each (half the ceiling each). ``capture_for``
makes the one a stream's ``keep`` asks for. Both count every byte and line they saw, so the
result can report ``totals`` and ``omitted``. Lines are counted the way the
markers count them: newline-terminated lines plus a final unterminated one.

Nothing here does I/O; the readers feed bytes in and take a ``Captured`` out.
Past the capture ceiling a reader reads straight into the capture's own
memory (``reserve`` then ``commit``): one reused buffer for a head, rotating
blocks for the tail ring, counted in place, so no byte is copied on the way.

Pieces:
    Captured     the kept bytes plus the stream's totals and what was dropped
    is_utf8, invalid_utf8_bytes  whether bytes are UTF-8, and how many are not
    LineCounter  running byte and line totals of a stream
    head_room    the prefix of a chunk that fits a remaining byte/line room
    HeadCapture  keeps the first bytes and lines (stdout; also the live-chunk gate)
    TailCapture  keeps the last bytes and lines (stderr), a ring
    BothEndsCapture  keeps both ends (``bounds.headtail.HeadTailCapture``) behind a
                 HeadCapture's interface; retained() -> Retained
    capture_for  the capture a stream's ``keep`` asks for: head, tail or both ends
"""

from __future__ import annotations

import codecs
import collections
import threading
from dataclasses import dataclass

from toolbound.bounds.headtail import HeadTailCapture, Retained
from toolbound.bounds.newlines import count_lines, count_newlines, nth_newline, nth_newline_from_end
from toolbound.limits import Budget, Ends, Keep

_NL = 0x0A


@dataclass(frozen=True, slots=True)
class Captured:
    """What a capture kept (``data``, exact bytes) and the whole stream's size.

    ``edge_line_bytes`` is the whole size of the stream's first line (head) or
    last line (tail), its newline not counted, however far it ran past what
    was kept: the size a single-line marker names.
    """

    data: bytes
    keep: Keep
    total_bytes: int
    total_lines: int
    edge_line_bytes: int = 0

    @property
    def omitted_bytes(self) -> int:
        return self.total_bytes - len(self.data)

    @property
    def omitted_lines(self) -> int:
        return self.total_lines - count_lines(self.data)

    @property
    def invalid_bytes(self) -> int:
        """Bytes of ``data`` that are not UTF-8 (shown as U+FFFD), not counting
        the front of a character a tail capture cut in two."""
        data = self.data
        if self.keep == "tail":
            start = 0
            while start < min(3, len(data)) and data[start] & 0xC0 == 0x80:
                start += 1
            data = data[start:]
        return invalid_utf8_bytes(data)


_TALLY = threading.local()
_TALLY_ERRORS = "toolbound-tally-replace"


def _tally_replace(exc: UnicodeError) -> tuple[str, int]:
    """The 'replace' handler, adding the rejected bytes to this thread's tally."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    _TALLY.count += exc.end - exc.start
    return "\ufffd", exc.end


codecs.register_error(_TALLY_ERRORS, _tally_replace)


def is_utf8(data: bytes) -> bool:
    """True if ``data`` is valid UTF-8 (one C-speed pass)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def invalid_utf8_bytes(data: bytes) -> int:
    """How many bytes of ``data`` a UTF-8 decoder rejects (one pass)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        _TALLY.count = 0
        data.decode("utf-8", _TALLY_ERRORS)
        return int(_TALLY.count)
    return 0


class LineCounter:
    """Running totals of a stream: bytes, newlines, and whether it ends mid-line."""

    __slots__ = ("bytes", "ends_with_newline", "newlines")

    def __init__(self) -> None:
        self.bytes = 0
        self.newlines = 0
        self.ends_with_newline = True

    def feed(self, data: bytes) -> int:
        """Count ``data``; returns its newlines."""
        return self.feed_span(data, 0, len(data))

    def feed_span(self, buf: bytes | bytearray, start: int, end: int) -> int:
        """Count ``buf[start:end]`` in place (no copy); returns its newlines."""
        if end <= start:
            return 0
        count = count_newlines(buf, start, end)
        self.bytes += end - start
        self.newlines += count
        self.ends_with_newline = buf[end - 1] == _NL
        return count

    @property
    def lines(self) -> int:
        return self.newlines + (0 if self.ends_with_newline else 1)


def head_room(data: bytes, *, room_bytes: int, room_newlines: int) -> bytes:
    """The longest prefix of ``data`` within ``room_bytes`` that starts no line
    past the room: it ends right after the ``room_newlines``-th newline at the
    latest (with no room left, nothing fits)."""
    part = data[: max(room_bytes, 0)]
    if room_newlines <= 0:
        return b""
    pos = nth_newline(part, room_newlines)
    return part if pos < 0 else part[: pos + 1]


class HeadCapture:
    """Keeps a stream's first ``max_bytes`` bytes and ``max_lines`` lines.

    The kept part ends after the ``max_lines``-th newline at the latest, so
    the lines it holds never exceed ``max_lines``. ``feed`` returns the part
    of the chunk that was kept, which is also how live chunks are gated.
    """

    def __init__(self, *, max_bytes: int, max_lines: int) -> None:
        self._max_bytes = max_bytes
        self._max_lines = max_lines
        self._kept = bytearray()
        self._kept_newlines = 0
        self._full = False
        self._first_line: int | None = None  # known once its newline came
        self._buffer: bytearray | None = None  # reads past the ceiling land here
        self.counter = LineCounter()

    @property
    def full(self) -> bool:
        """True once nothing more will be kept."""
        return self._full

    def gates_like(self, live: HeadCapture) -> bool:
        """True if this capture keeps exactly what the fresh gate ``live`` would let
        through, so it can gate the live chunks itself."""
        fresh = not (self.counter.bytes or live.counter.bytes)
        return fresh and (self._max_bytes, self._max_lines) == (live._max_bytes, live._max_lines)

    def feed(self, data: bytes) -> bytes:
        before = self.counter.bytes
        if self.counter.feed(data) and self._first_line is None:
            self._first_line = before + data.find(b"\n")
        if self._full:
            return b""
        taken = head_room(
            data,
            room_bytes=self._max_bytes - len(self._kept),
            room_newlines=self._max_lines - self._kept_newlines,
        )
        self._kept += taken
        self._kept_newlines += count_newlines(taken)
        if len(taken) < len(data):
            self._full = True
        return taken

    def reserve(self, size: int) -> memoryview:
        """Where the next read of at most ``size`` bytes goes: one reused buffer."""
        if self._buffer is None or len(self._buffer) < size:
            self._buffer = bytearray(size)
        return memoryview(self._buffer)[:size]

    def commit(self, n: int) -> None:
        """Take the ``n`` bytes just read into ``reserve``'s buffer; once full they
        are only counted, in place."""
        assert self._buffer is not None, "commit follows reserve"
        if not self._full:
            self.feed(bytes(memoryview(self._buffer)[:n]))
            return
        before = self.counter.bytes
        if self.counter.feed_span(self._buffer, 0, n) and self._first_line is None:
            self._first_line = before + self._buffer.find(b"\n", 0, n)

    def finish(self) -> Captured:
        self._buffer = None  # reads are over
        counter = self.counter
        first_line = counter.bytes if self._first_line is None else self._first_line
        return Captured(bytes(self._kept), "head", counter.bytes, counter.lines, first_line)


class TailCapture:
    """Keeps a stream's last ``max_bytes`` bytes and ``max_lines`` lines (a ring).

    The ring holds the chunks fed as they came and the blocks that reads went
    straight into (``reserve``/``commit``: a block is filled by successive
    reads, then the next one starts), and drops an entry from its front once
    the rest still covers ``max_bytes``; a dropped block is reused. So nothing
    is copied while a stream runs, and the ring holds at most ``max_bytes``
    plus two entries. Both cuts keep a suffix, so cutting by bytes first and by
    lines at the end is exact.
    """

    def __init__(self, *, max_bytes: int, max_lines: int) -> None:
        self._max_bytes = max_bytes
        self._max_lines = max_lines
        self._ring: collections.deque[bytes | bytearray] = collections.deque()
        self._held = 0  # bytes in the ring and in the block being filled
        # The block reads go into, how much of it is filled, and dropped blocks.
        self._block: bytearray | None = None
        self._filled = 0
        self._spare: list[bytearray] = []
        # Stream offsets of the last newline and of the one before it (-1: none).
        self._last_newline = self._newline_before = -1
        self.counter = LineCounter()

    def feed(self, data: bytes) -> None:
        if not data:
            return
        self._close_block()
        self._count(data, 0, len(data))
        self._ring.append(data)
        self._held += len(data)
        self._drop_covered()

    def reserve(self, size: int) -> memoryview:
        """Where the next read goes: the free end of the block being filled (a new
        block of ``size`` bytes once it is full)."""
        block = self._block
        if block is None or self._filled == len(block):
            self._close_block()
            block = self._spare.pop() if self._spare else bytearray(size)
            self._block, self._filled = block, 0
        return memoryview(block)[self._filled :]

    def commit(self, n: int) -> None:
        """Take the ``n`` bytes just read into ``reserve``'s view, counted in place."""
        if n <= 0:
            return
        assert self._block is not None, "commit follows reserve"
        self._count(self._block, self._filled, self._filled + n)
        self._filled += n
        self._held += n
        self._drop_covered()

    def _count(self, buf: bytes | bytearray, start: int, end: int) -> None:
        before = self.counter.bytes - start
        count = self.counter.feed_span(buf, start, end)
        if count:
            at = buf.rfind(b"\n", start, end)
            if count > 1:
                self._newline_before = before + buf.rfind(b"\n", start, at)
            else:
                self._newline_before = self._last_newline
            self._last_newline = before + at

    def _close_block(self) -> None:
        """Move the block being filled into the ring (its filled part)."""
        block, self._block = self._block, None
        if block is None or not self._filled:
            if block is not None:
                self._spare.append(block)
            return
        # A block cut short by a chunk fed between reads is copied, once.
        self._ring.append(
            block if self._filled == len(block) else bytes(memoryview(block)[: self._filled])
        )
        if self._filled < len(block):
            self._spare.append(block)

    def _drop_covered(self) -> None:
        ring = self._ring
        while ring and self._held - len(ring[0]) >= self._max_bytes:
            dropped = ring.popleft()
            self._held -= len(dropped)
            if isinstance(dropped, bytearray):
                self._spare.append(dropped)

    def finish(self) -> Captured:
        data = self._last_bytes()
        data = data[_last_lines_start(data, self._max_lines) :]
        # Reads are over: blocks no longer in the ring are not kept for them.
        self._spare.clear()
        counter = self.counter
        return Captured(data, "tail", counter.bytes, counter.lines, self._last_line_bytes())

    def _last_bytes(self) -> bytes:
        """The ring's last ``max_bytes``, joined once from the entries they span."""
        parts: list[bytes | bytearray | memoryview] = list(self._ring)
        if self._block is not None and self._filled:
            parts.append(memoryview(self._block)[: self._filled])
        need, first = self._max_bytes, len(parts)
        while first and need > 0:
            first -= 1
            need -= len(parts[first])
        if need < 0:
            parts[first] = memoryview(parts[first])[-need:]
        return b"".join(parts[first:])

    def _last_line_bytes(self) -> int:
        """The stream's last line, whole; a final newline ends it and is not counted."""
        total = self.counter.bytes
        if total == 0:
            return 0
        if self.counter.ends_with_newline:
            return self._last_newline - self._newline_before - 1
        return total - self._last_newline - 1


def _last_lines_start(data: bytes, max_lines: int) -> int:
    """Where the last ``max_lines`` lines of ``data`` start."""
    end = len(data) - 1 if data and data[-1] == _NL else len(data)
    return nth_newline_from_end(data, max_lines, 0, end) + 1


class BothEndsCapture(HeadCapture):
    """Keeps a stream's first ``head`` and last ``tail`` bytes and lines.

    ``bounds.headtail.HeadTailCapture`` keeps both ends and counts what it
    dropped between them; every method a reader calls (``feed``, ``reserve``,
    ``commit``, ``finish``) is this class's own, so a reader keeps both ends
    without knowing it. Past the head, each read is copied once into the
    tail's ring (the ring keeps the bytes anyway); ``retained()`` is what the
    Bash tool shapes.
    """

    def __init__(self, *, head: Budget, tail: Budget) -> None:
        super().__init__(max_bytes=head.max_bytes, max_lines=head.max_lines)
        self._ends = HeadTailCapture(head=head, tail=tail)
        self._read = bytearray()

    @property
    def full(self) -> bool:
        """Never: the tail keeps taking the stream's last bytes."""
        return False

    def feed(self, data: bytes) -> bytes:
        self._ends.feed(data)
        return data

    def reserve(self, size: int) -> memoryview:
        if len(self._read) < size:
            self._read = bytearray(size)
        return memoryview(self._read)[:size]

    def commit(self, n: int) -> None:
        self._ends.feed(bytes(memoryview(self._read)[:n]))

    def retained(self) -> Retained:
        """Both ends as kept, and what was dropped between them."""
        return self._ends.finish()

    def finish(self) -> Captured:
        """The head, with the whole stream's totals (as a HeadCapture reports it)."""
        self._read = bytearray()
        kept = self._ends.finish()
        return Captured(kept.head, "head", kept.total_bytes, kept.total_lines)


def capture_for(
    keep: Ends, *, max_bytes: int, max_lines: int
) -> HeadCapture | TailCapture | BothEndsCapture:
    """The capture of a stream that keeps ``keep`` within the ceiling: stdout's head
    and stderr's tail (seed section 6, rule 2), or both ends, half the ceiling each."""
    if keep == "head":
        return HeadCapture(max_bytes=max_bytes, max_lines=max_lines)
    if keep == "tail":
        return TailCapture(max_bytes=max_bytes, max_lines=max_lines)
    half = Budget(max_bytes=max_bytes // 2, max_lines=max_lines // 2)
    return BothEndsCapture(head=half, tail=half)
