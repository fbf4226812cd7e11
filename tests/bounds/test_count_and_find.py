"""count_and_find: a span's count and its n-th newline from either end, on even and uneven lines."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolbound.bounds.newlines import DIRECT_COUNT_BYTES, FLAG_SPAN_BYTES, count_and_find


def expected(buf: bytes, n: int, start: int, end: int, from_end: bool) -> tuple[int, int]:
    where = [i for i in range(start, end) if buf[i] == 0x0A]
    if len(where) < n:
        return len(where), -1
    return len(where), where[-n] if from_end else where[n - 1]


def uneven(size: int, seed: int) -> bytes:
    """Lines whose lengths change by orders of magnitude along the buffer, so a
    probe where the average density puts the n-th newline lands far off."""
    rnd = random.Random(seed)
    out = bytearray()
    while len(out) < size:
        width = rnd.choice([0, 1, 5, 80, 2000]) if rnd.random() < 0.5 else 3
        out += b"x" * rnd.randrange(width + 1) + b"\n"
    return bytes(out[:size])


SIZES = [
    DIRECT_COUNT_BYTES - 1,
    DIRECT_COUNT_BYTES,
    16 * 1024,
    96 * 1024,
    FLAG_SPAN_BYTES,
    FLAG_SPAN_BYTES + 3,
]


@settings(max_examples=40, deadline=None)
@given(
    size=st.sampled_from(SIZES),
    seed=st.integers(0, 10_000),
    n_part=st.floats(0, 1.1),
    cut=st.integers(0, 300),
    from_end=st.booleans(),
)
def test_the_count_and_the_nth_newline_match_a_naive_scan(
    size: int, seed: int, n_part: float, cut: int, from_end: bool
) -> None:
    buf = uneven(size, seed)
    start, end = cut, len(buf) - cut // 2
    total = buf.count(b"\n", start, end)
    n = max(1, int(total * n_part))
    assert count_and_find(buf, n, start, end, from_end=from_end) == expected(
        buf, n, start, end, from_end
    )


@pytest.mark.parametrize("from_end", [False, True])
def test_every_n_of_even_lines_is_found_by_the_probe(from_end: bool) -> None:
    buf = b"".join(b"%079d\n" % i for i in range(1300))  # 104 KB of 80-byte lines
    for n in (1, 2, 63, 64, 65, 650, 1299, 1300):
        nth = len(buf) - 80 * (n - 1) - 1 if from_end else 80 * n - 1
        assert count_and_find(buf, n, 0, len(buf), from_end=from_end) == (1300, nth)
    assert count_and_find(buf, 1301, from_end=from_end) == (1300, -1)


def test_n_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        count_and_find(b"\n", 0)
