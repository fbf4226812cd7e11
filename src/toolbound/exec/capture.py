"""Bounded capture of one output stream (seed "Bash capture retention").

A command may write gigabytes; the host keeps a bounded copy and counts the
rest. stdout keeps its *first* ``max_bytes`` / ``max_lines`` (a head), stderr
its *last* ones (a ring), because a failing command's actionable message is
the last thing it printed. Both count every byte and line they saw, so the
result can report ``totals`` and ``omitted``. Lines are counted the way the
markers count them: newline-terminated lines plus a final unterminated one.

Nothing here does I/O; the readers feed bytes in and take a ``Captured`` out.

Pieces:
    Captured     the kept bytes plus the stream's totals and what was dropped
    is_utf8, invalid_utf8_bytes  whether bytes are UTF-8, and how many are not
    LineCounter  running byte and line totals of a stream
    head_room    the prefix of a chunk that fits a remaining byte/line room
    HeadCapture  keeps the first bytes and lines (stdout; also the live-chunk gate)
    TailCapture  keeps the last bytes and lines (stderr), a ring
    capture_for  the capture a stream uses: head for stdout, tail for stderr
"""

from __future__ import annotations

import codecs
import collections
import threading
from dataclasses import dataclass

from toolbound.bounds import count_lines
from toolbound.bounds.newlines import count_newlines, nth_newline, nth_newline_from_end
from toolbound.limits import Keep

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
        if not data:
            return 0
        count = count_newlines(data)
        self.bytes += len(data)
        self.newlines += count
        self.ends_with_newline = data[-1] == _NL
        return count

    def feed_from(self, buf: bytearray, n: int) -> int:
        """Count ``buf[:n]`` in place (no copy); returns its newlines."""
        if n <= 0:
            return 0
        count = count_newlines(buf, 0, n)
        self.bytes += n
        self.newlines += count
        self.ends_with_newline = buf[n - 1] == _NL
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
        self.counter = LineCounter()

    @property
    def full(self) -> bool:
        """True once nothing more will be kept."""
        return self._full

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

    def feed_from(self, buf: bytearray, n: int) -> None:
        """Feed ``buf[:n]``, a reused read buffer; once full it is only counted, in place."""
        if not self._full:
            self.feed(bytes(memoryview(buf)[:n]))
            return
        before = self.counter.bytes
        if self.counter.feed_from(buf, n) and self._first_line is None:
            self._first_line = before + buf.find(b"\n", 0, n)

    def finish(self) -> Captured:
        counter = self.counter
        first_line = counter.bytes if self._first_line is None else self._first_line
        return Captured(bytes(self._kept), "head", counter.bytes, counter.lines, first_line)


class TailCapture:
    """Keeps a stream's last ``max_bytes`` bytes and ``max_lines`` lines (a ring).

    The ring holds the chunks as they came (no copying while a stream runs)
    and drops a chunk from its front once the rest still covers ``max_bytes``.
    Both cuts keep a suffix, so cutting by bytes first and by lines at the
    end is exact.
    """

    def __init__(self, *, max_bytes: int, max_lines: int) -> None:
        self._max_bytes = max_bytes
        self._max_lines = max_lines
        self._ring: collections.deque[bytes] = collections.deque()
        self._held = 0
        # Stream offsets of the last newline and of the one before it (-1: none).
        self._last_newline = self._newline_before = -1
        self.counter = LineCounter()

    def feed(self, data: bytes) -> None:
        before = self.counter.bytes
        count = self.counter.feed(data)
        if not data:
            return
        if count:
            at = data.rfind(b"\n")
            if count > 1:
                self._newline_before = before + data.rfind(b"\n", 0, at)
            else:
                self._newline_before = self._last_newline
            self._last_newline = before + at
        self._ring.append(data)
        self._held += len(data)
        while self._held - len(self._ring[0]) >= self._max_bytes:
            self._held -= len(self._ring.popleft())

    def feed_from(self, buf: bytearray, n: int) -> None:
        """Feed ``buf[:n]``, a reused read buffer (the ring keeps a copy)."""
        self.feed(bytes(memoryview(buf)[:n]))

    def finish(self) -> Captured:
        data = b"".join(self._ring)[-self._max_bytes :]
        data = data[_last_lines_start(data, self._max_lines) :]
        counter = self.counter
        return Captured(data, "tail", counter.bytes, counter.lines, self._last_line_bytes())

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


def capture_for(keep: Keep, *, max_bytes: int, max_lines: int) -> HeadCapture | TailCapture:
    """stdout keeps its head, stderr its tail (seed section 6, rule 2)."""
    if keep == "head":
        return HeadCapture(max_bytes=max_bytes, max_lines=max_lines)
    return TailCapture(max_bytes=max_bytes, max_lines=max_lines)
