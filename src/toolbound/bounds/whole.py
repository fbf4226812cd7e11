"""The last guard of a fit: a result's whole model text kept within the client's cap.

The tools already cut to budgets shrunk to the cap (``shrink.Budgets``);
what their markers, notices and labels add can still pass it. This guard
makes sure the harness never cuts: a text over the cap keeps its first and
last whole lines, half the room each, with ``markers.fit_marker`` between. The
head keeps a Bash text's outcome and notice (where the spill path is), the
tail stderr's last lines. A text within the cap is returned as it is, and a
text is never guarded twice (the guard's own output fits).

Pieces:
    within   text + caps -> the text, whole or guarded (pure)
"""

from __future__ import annotations

from toolbound.bounds import markers
from toolbound.bounds.newlines import count_lines, count_newlines, nth_newline, nth_newline_from_end

# The most a marker takes: its numbers at their widest.
_MARKER_ROOM = len(
    markers.fit_marker(
        cut_bytes=10**12, cut_lines=10**12, max_bytes=10**12 + 1, client="x" * 128
    ).encode()
)


def _char_start(data: bytes, at: int) -> int:
    while 0 < at < len(data) and data[at] & 0xC0 == 0x80:
        at += 1
    return at


def _char_end(data: bytes, at: int) -> int:
    while 0 < at < len(data) and data[at] & 0xC0 == 0x80:
        at -= 1
    return at


def _head(data: bytes, max_bytes: int, max_lines: int) -> int:
    """Where the kept head ends: after whole lines within both, else a char boundary."""
    end = min(len(data), max_bytes)
    nth = nth_newline(data, max_lines, 0, end) if max_lines > 0 else -1
    if nth >= 0:
        return nth + 1
    if max_lines == 0:
        return 0
    nl = data.rfind(b"\n", 0, end)
    return nl + 1 if nl >= 0 else _char_end(data, end)


def _tail(data: bytes, start: int, max_bytes: int, max_lines: int) -> int:
    """Where the kept tail starts (at or after ``start``)."""
    begin = max(start, len(data) - max_bytes)
    if max_lines == 0:
        return len(data)
    body_end = len(data) - 1 if data.endswith(b"\n") else len(data)
    nth = nth_newline_from_end(data, max_lines, begin, body_end)
    if nth >= 0:
        return nth + 1
    if begin == start:
        return begin
    nl = data.find(b"\n", begin, body_end)
    return nl + 1 if nl >= 0 else _char_start(data, begin)


def within(
    text: str, *, max_bytes: int | None, max_lines: int | None, client: str | None = None
) -> str:
    """``text`` if it fits ``max_bytes`` UTF-8 bytes and ``max_lines`` lines (None: no cap
    of that kind), else its head and tail with the fit marker between, within both."""
    data = text.encode("utf-8", "surrogatepass")
    lines = count_lines(data)
    if (max_bytes is None or len(data) <= max_bytes) and (max_lines is None or lines <= max_lines):
        return text
    room_bytes = max(0, (max_bytes if max_bytes is not None else len(data)) - _MARKER_ROOM - 2)
    # Without a line cap every line may stay (the marker's own line included).
    room_lines = max(0, (max_lines if max_lines is not None else lines + 2) - 1)
    head_end = _head(data, room_bytes // 2, room_lines // 2)
    head_lines = count_newlines(data, 0, head_end)
    tail_start = _tail(
        data, head_end, room_bytes - head_end, room_lines - head_lines - (1 if head_end else 0)
    )
    cut = data[head_end:tail_start]
    marker = markers.fit_marker(
        cut_bytes=len(cut),
        cut_lines=count_lines(cut),
        max_bytes=max_bytes if max_bytes is not None else len(data),
        client=client,
    )
    head = data[:head_end].decode("utf-8", "surrogatepass")
    tail = data[tail_start:].decode("utf-8", "surrogatepass")
    joint = "" if not head or head.endswith("\n") else "\n"
    return f"{head}{joint}{marker}\n{tail}" if tail else f"{head}{joint}{marker}"
