"""Newline counting and finding: bytes.count's answers on either side of each threshold."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolbound.bounds.newlines import (
    DIRECT_COUNT_BYTES,
    FLAG_SPAN_BYTES,
    count_newlines,
    nth_newline,
    nth_newline_from_end,
)


def _positions(buf: bytes, start: int, end: int) -> list[int]:
    return [i for i in range(start, end) if buf[i] == 0x0A]


def _buffer(size: int, seed: int) -> bytes:
    rnd = random.Random(seed)
    return bytes(rnd.choice(b"ab\n\n\xe4\xb8\xad") for _ in range(size))


@pytest.mark.parametrize(
    "size",
    [
        0,
        100,
        DIRECT_COUNT_BYTES - 1,
        DIRECT_COUNT_BYTES,
        3 * DIRECT_COUNT_BYTES,
        FLAG_SPAN_BYTES,
        2 * FLAG_SPAN_BYTES + 7,
    ],
)
def test_count_newlines_agrees_with_bytes_count_on_every_span(size: int) -> None:
    buf = _buffer(size, size)
    for start, end in ((0, size), (size // 3, size), (7, size - 5), (size, size)):
        if start <= end:
            assert count_newlines(buf, start, end) == buf.count(b"\n", start, end)
    assert count_newlines(bytearray(buf)) == buf.count(b"\n")


def test_nth_newline_both_ways_over_a_large_buffer() -> None:
    buf = _buffer(64 * DIRECT_COUNT_BYTES, 1)
    start, end = 11, len(buf) - 13
    where = _positions(buf, start, end)
    for n in (1, 2, 1000, len(where) // 2, len(where)):
        assert nth_newline(buf, n, start, end) == where[n - 1]
        assert nth_newline_from_end(buf, n, start, end) == where[-n]
    assert nth_newline(buf, len(where) + 1, start, end) == -1
    assert nth_newline_from_end(buf, len(where) + 1, start, end) == -1


@settings(max_examples=200)
@given(data=st.binary(max_size=3000), n=st.integers(min_value=1, max_value=400))
def test_nth_newline_matches_a_naive_scan(data: bytes, n: int) -> None:
    where = _positions(data, 0, len(data))
    assert nth_newline(data, n) == (where[n - 1] if n <= len(where) else -1)
    assert nth_newline_from_end(data, n) == (where[-n] if n <= len(where) else -1)


def test_n_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        nth_newline(b"\n", 0)
