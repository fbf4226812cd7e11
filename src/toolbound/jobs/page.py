"""One stream's page of a job's output: its log from ``since``, within the shell budget.

stdout keeps its head and stderr its tail, as in a Bash result, with the
seed's markers naming the log file (``bounds.cut``, ``Cut.with_spill``): a
stdout page stops at the budget and its ``next`` is where the shown part ends,
so the next JobOutput goes on from there; a stderr page shows the last part of
the range and its ``next`` is the end. A stdout page never runs across the part
the log dropped: it stops before it and its ``next`` skips it. ``omitted``
counts what the log dropped of the range from ``since`` to the stream's end
(what the notice speaks of), whether or not this page reached it. While the
job runs, an incomplete UTF-8 character at the end of a stream waits for its
last bytes, so a page never splits a character.

Pieces:
    StreamPage   the cut, the next position, and what the log dropped of the range
    page_stream  a log + since + budget + end kept -> StreamPage (reads the log, no waiting)
    complete_utf8_end  where the last complete UTF-8 character of some bytes ends
"""

from __future__ import annotations

from dataclasses import dataclass

from toolbound.bounds import Cut, cut
from toolbound.bounds.newlines import nth_newline
from toolbound.bounds.utf8 import prefix_end
from toolbound.jobs.log import Span, StreamLog
from toolbound.limits import Budget, Keep


@dataclass(frozen=True, slots=True)
class StreamPage:
    cut: Cut
    next: int
    omitted: Span


def complete_utf8_end(data: bytes) -> int:
    """``len(data)``, less the bytes of a UTF-8 character begun but not finished."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:
            continue  # a continuation byte: look further back for the lead
        need = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else 4
        if byte < 0x80 or byte & 0xF8 == 0xF8 or need <= back:
            return len(data)
        return len(data) - back
    return len(data)


def _head_end(data: bytes, cut: Cut) -> int:
    """Where the bytes a head cut showed end in ``data`` (it may have shown all)."""
    if cut.fired not in ("bytes", "lines"):
        return len(data)
    if cut.single_line_bytes is not None:
        return prefix_end(data, cut.max_bytes)
    return nth_newline(data, cut.kept_lines) + 1


def page_stream(
    log: StreamLog, since: int, budget: Budget, keep: Keep, *, running: bool
) -> StreamPage:
    """The page of ``log`` from ``since`` (a stream position, at most its end), of one
    state of the log."""
    with log.locked():
        return _page(log, since, budget, keep, running=running)


def _page(log: StreamLog, since: int, budget: Budget, keep: Keep, *, running: bool) -> StreamPage:
    end = log.total_bytes
    gap = log.gap()
    if keep == "head":
        seg = log.segment(since, budget.max_bytes + 1)
    else:
        start = gap[1] if gap is not None and since < gap[1] else since
        seg = log.segment(start, budget.max_bytes + 1, from_end=True)
    data = seg.data[: max(0, end - seg.start)]
    if running and seg.start + len(data) == end:
        data = data[: complete_utf8_end(data)]
    shown_end = seg.start + len(data)
    # The range the marker counts: the rest of the stream from the page's start
    # (stdout) or from ``since`` (stderr), dropped lines included.
    reaches_end = seg.start + len(seg.data) >= end
    rest = log.lines_between(
        seg.start if keep == "head" else since, shown_end if reaches_end else end
    )
    shown = cut(data, budget, keep=keep, total_bytes=rest.bytes, total_lines=rest.lines)
    if shown.truncated:
        shown = shown.with_spill(str(log.path))
    omitted = Span()
    if gap is not None and since < gap[1]:
        omitted = log.lines_between(max(since, gap[0]), gap[1])
    next_pos = shown_end
    if keep == "head":
        next_pos = seg.start + _head_end(data, shown)
        if gap is not None and next_pos == gap[0]:
            next_pos = gap[1]
    return StreamPage(shown, next_pos, omitted)
