"""The sparse line index: exact line starts from any known start, bounded memory."""

from __future__ import annotations

import random
import re
import threading
from typing import ClassVar

import pytest

from toolbound.tools import lineindex
from toolbound.tools.lineindex import (
    SCAN_BLOCK_BYTES,
    FileKey,
    IndexCache,
    LineIndex,
    Located,
    ReadInto,
    ScanStopped,
)


def reader(data: bytes) -> ReadInto:
    def read_into(buf: memoryview, pos: int) -> int:
        part = data[pos : pos + len(buf)]
        buf[: len(part)] = part
        return len(part)

    return read_into


def index_of(data: bytes) -> LineIndex:
    return LineIndex(FileKey(dev=1, ino=len(data), size=len(data), mtime_ns=0))


def line_starts(data: bytes) -> list[int]:
    starts = [0] + [m.end() for m in re.finditer(b"\n", data)]
    return starts if data and data[-1] != 0x0A else starts[:-1]


@pytest.fixture(scope="module")
def big() -> bytes:
    rng = random.Random(3)
    lines = [b"x" * rng.randrange(0, 200) + rng.choice([b"\n", b"\r\n"]) for _ in range(40_000)]
    data = b"".join(lines) + b"last line, no newline"
    assert len(data) > 3 * SCAN_BLOCK_BYTES
    return data


def test_every_line_start_is_exact_in_any_order(big: bytes) -> None:
    starts = line_starts(big)
    index = index_of(big)
    read_into = reader(big)
    order = [len(starts) - 1, 0, 20_000, *random.Random(5).sample(range(len(starts)), 300)]
    for line in order:
        assert index.locate(line, read_into) == Located(starts[line], None), line
    assert len(index) > 1  # the deep scan left entries behind


def test_past_the_last_line_the_index_knows_the_total(big: bytes) -> None:
    index = index_of(big)
    total = len(line_starts(big))
    assert index.locate(total, reader(big)) == Located(None, total)
    assert index.locate(total + 5, reader(big)) == Located(None, total)
    assert index.total_lines == total


@pytest.mark.parametrize(
    ("data", "total"),
    [(b"", 0), (b"a", 1), (b"a\n", 1), (b"\n\n", 2), (b"a\nb", 2), (b"a\r\nb\r\n", 2)],
)
def test_line_counts_match_the_seed_rule(data: bytes, total: int) -> None:
    index = index_of(data)
    for line, start in enumerate(line_starts(data)):
        assert index_of(data).locate(line, reader(data)) == Located(start, None)
    assert index.locate(total, reader(data)) == Located(None, total)


def test_the_cache_keeps_only_the_most_recently_used_indexes() -> None:
    cache = IndexCache(capacity=2)
    keys = [FileKey(1, ino, 10, 0) for ino in range(3)]
    first = cache.get(keys[0])
    second = cache.get(keys[1])
    assert cache.get(keys[0]) is first  # used again: now the most recent
    cache.get(keys[2])
    assert len(cache) == 2
    assert cache.get(keys[0]) is first
    assert cache.get(keys[1]) is not second  # it was dropped, so it is indexed afresh


def test_a_stopped_scan_keeps_its_count_and_the_next_call_goes_on(big: bytes) -> None:
    index = index_of(big)
    starts = line_starts(big)
    with pytest.raises(ScanStopped) as stopped:
        index.locate(len(starts) - 1, reader(big), stop=lambda: True)
    assert 0 < stopped.value.lines < len(starts)
    assert index.locate(len(starts) - 1, reader(big)) == Located(starts[-1], None)
    assert index.locate(10, reader(big)) == Located(starts[10], None)


class _Spy(lineindex.CountAhead):
    """A CountAhead that says it ran."""

    started: ClassVar[list[_Spy]] = []

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        _Spy.started.append(self)


@pytest.fixture
def count_ahead(monkeypatch: pytest.MonkeyPatch) -> list[_Spy]:
    """Long scans split at 3 blocks (not 32 MB), each CountAhead seen."""
    monkeypatch.setattr(lineindex, "COUNT_AHEAD_BYTES", 3 * SCAN_BLOCK_BYTES)
    monkeypatch.setattr(lineindex, "CountAhead", _Spy)
    _Spy.started = []
    return _Spy.started


def test_a_scan_split_with_a_count_ahead_thread_is_exact(
    big: bytes, count_ahead: list[_Spy]
) -> None:
    starts = line_starts(big)
    index = index_of(big)
    read_into = reader(big)
    assert index.locate(len(starts) - 1, read_into) == Located(starts[-1], None)
    assert count_ahead, "the long first scan did not split"
    for line in [0, 20_000, *random.Random(7).sample(range(len(starts)), 200)]:
        assert index.locate(line, read_into) == Located(starts[line], None), line
    fresh = index_of(big)  # and the total, counted through the far half
    assert fresh.locate(len(starts) + 3, read_into) == Located(None, len(starts))
    # A line in the near half: found there, the far half's thread stopped and joined.
    near = index_of(big)
    assert near.locate(100, read_into) == Located(starts[100], None)
    assert not any(ahead._thread.is_alive() for ahead in count_ahead)


def test_no_read_of_a_split_scan_outlives_it(big: bytes, count_ahead: list[_Spy]) -> None:
    """The caller closes the file once locate returns: every thread's reads are over."""
    starts = line_starts(big)
    done = threading.Event()
    late: list[int] = []
    inner = reader(big)

    def read_into(buf: memoryview, pos: int) -> int:
        if done.is_set():
            late.append(pos)
        return inner(buf, pos)

    reads = [0]

    def stop_after_some_reads() -> bool:
        reads[0] += 1
        return reads[0] > 4

    index = index_of(big)
    with pytest.raises(ScanStopped) as stopped:
        index.locate(len(starts) - 1, read_into, stop=stop_after_some_reads)
    done.set()
    assert count_ahead
    assert not late
    assert 0 < stopped.value.lines < len(starts)
    assert index.locate(len(starts) - 1, inner) == Located(starts[-1], None)


def test_a_file_that_shrank_in_the_far_half_ends_where_its_bytes_end(
    big: bytes, count_ahead: list[_Spy]
) -> None:
    kept = big[: len(big) * 3 // 4]
    index = index_of(big)  # the key still says the old size
    total = len(line_starts(kept))
    assert index.locate(len(line_starts(big)) - 1, reader(kept)) == Located(None, total)
    assert count_ahead


def test_a_read_error_in_the_far_half_reaches_the_caller(
    big: bytes, count_ahead: list[_Spy]
) -> None:
    inner = reader(big)

    def read_into(buf: memoryview, pos: int) -> int:
        if pos > len(big) * 3 // 4:
            raise OSError(5, "Input/output error")
        return inner(buf, pos)

    with pytest.raises(OSError, match="Input/output"):
        index_of(big).locate(len(line_starts(big)) - 1, read_into)
    assert count_ahead


@pytest.mark.parametrize(
    ("first", "rest", "short"),
    [
        (b"x" * 9 + b"\n", b"y" * 99 + b"\n", True),
        (b"x" * 99 + b"\n", (b"y" * 9 + b"\n") * 5, False),
    ],
    ids=["the first block's density falls short", "it overshoots"],
)
def test_a_split_guessed_from_the_first_block_stays_exact(
    first: bytes, rest: bytes, short: bool, count_ahead: list[_Spy]
) -> None:
    """The far half is guessed from the first block's lines; a wrong guess only
    shifts work between the threads (the scan goes on alone past it)."""
    data = first * (2 * lineindex.FIRST_READ_BYTES // len(first)) + rest * 60_000
    starts = line_starts(data)
    for line in (len(starts) - 1, len(starts) * 2 // 3, len(starts) // 3):
        index = index_of(data)  # each a first scan, guessing afresh
        assert index.locate(line, reader(data)) == Located(starts[line], None), line
    assert count_ahead
    # Falling short, the far half ended before the line: the scan went on alone.
    assert (count_ahead[0].end < starts[-1]) is short
    assert index_of(data).locate(len(starts), reader(data)) == Located(None, len(starts))
