"""The sparse line index: exact line starts from any known start, bounded memory."""

from __future__ import annotations

import random
import re

import pytest

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
