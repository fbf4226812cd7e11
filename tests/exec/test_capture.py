"""Bounded capture: stdout's head, stderr's tail ring, and the counts, whatever the chunking."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from toolbound.bounds import count_lines
from toolbound.exec.capture import Captured, HeadCapture, TailCapture


def first(data: bytes, max_bytes: int, max_lines: int) -> bytes:
    """Reference head: the first max_bytes bytes, ending after the max_lines-th newline."""
    kept = data[:max_bytes]
    ends = [i + 1 for i, b in enumerate(kept) if b == 0x0A]
    return kept[: ends[max_lines - 1]] if len(ends) >= max_lines else kept


def last(data: bytes, max_bytes: int, max_lines: int) -> bytes:
    """Reference tail: the last max_bytes bytes, starting at the last max_lines lines."""
    kept = data[-max_bytes:] if max_bytes else b""
    lines = kept.splitlines(keepends=True)
    return b"".join(lines[-max_lines:])


def first_line(data: bytes) -> int:
    """Reference: the size of the stream's first line, its newline not counted."""
    return len(data.split(b"\n", 1)[0])


def last_line(data: bytes) -> int:
    """Reference: the size of the stream's last line, its newline not counted."""
    return len(data.removesuffix(b"\n").rsplit(b"\n", 1)[-1])


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


stream_bytes = st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\xc3\xa9", b"\xff", b"line\n"])).map(
    b"".join
)


@settings(max_examples=300, deadline=None)
@given(
    data=stream_bytes,
    cuts=st.lists(st.integers(0, 400), max_size=12),
    max_bytes=st.integers(1, 40),
    max_lines=st.integers(1, 8),
)
def test_head_capture_keeps_the_first_bytes_and_lines_and_counts_everything(
    data: bytes, cuts: list[int], max_bytes: int, max_lines: int
) -> None:
    capture = HeadCapture(max_bytes=max_bytes, max_lines=max_lines)
    fed = b"".join(capture.feed(chunk) for chunk in chunked(data, cuts))
    kept = first(data, max_bytes, max_lines)
    assert capture.finish() == Captured(
        kept, "head", len(data), count_lines(data), first_line(data)
    )
    # What feed returned (the live chunks) is exactly what was kept.
    assert fed == kept


@settings(max_examples=300, deadline=None)
@given(
    data=stream_bytes,
    cuts=st.lists(st.integers(0, 400), max_size=12),
    max_bytes=st.integers(1, 40),
    max_lines=st.integers(1, 8),
)
def test_tail_capture_keeps_the_last_bytes_and_lines_and_counts_everything(
    data: bytes, cuts: list[int], max_bytes: int, max_lines: int
) -> None:
    capture = TailCapture(max_bytes=max_bytes, max_lines=max_lines)
    for chunk in chunked(data, cuts):
        capture.feed(chunk)
    assert capture.finish() == Captured(
        last(data, max_bytes, max_lines), "tail", len(data), count_lines(data), last_line(data)
    )


def test_omitted_counts_are_what_the_capture_dropped() -> None:
    capture = TailCapture(max_bytes=10, max_lines=2)
    capture.feed(b"one\ntwo\nthree\nfour")
    held = capture.finish()
    assert (held.data, held.omitted_bytes, held.omitted_lines) == (b"three\nfour", 8, 2)


def test_invalid_bytes_count_what_a_decoder_rejects_but_not_a_character_the_ring_cut() -> None:
    capture = TailCapture(max_bytes=6, max_lines=10)
    capture.feed("é".encode() + b"ab\xff\xfe\n")  # the ring keeps the second byte of é
    held = capture.finish()
    assert (held.data, held.invalid_bytes) == (b"\xa9ab\xff\xfe\n", 2)
    head = HeadCapture(max_bytes=100, max_lines=10)
    head.feed(b"\xef\xbf\xbd genuine, \xc3 cut, \xff bad\n")
    assert head.finish().invalid_bytes == 2


def test_the_first_line_is_measured_whole_past_the_capture_ceiling() -> None:
    capture = HeadCapture(max_bytes=1000, max_lines=10)
    for _ in range(5000):
        capture.feed(b"x" * 840)
    capture.feed(b"x" * 1000 + b"\ndone\n")
    held = capture.finish()
    assert (len(held.data), held.edge_line_bytes, held.total_lines) == (1000, 4_201_000, 2)


def test_the_last_line_is_measured_whole_past_the_ring() -> None:
    capture = TailCapture(max_bytes=1000, max_lines=10)
    capture.feed(b"first\nsecond\n")
    for _ in range(5000):
        capture.feed(b"y" * 840)
    capture.feed(b"\n")
    held = capture.finish()
    assert (len(held.data), held.edge_line_bytes, held.total_lines) == (1000, 4_200_000, 3)


def read_into(
    capture: HeadCapture | TailCapture, data: bytes, sizes: list[int], block: int
) -> None:
    """Feed ``data`` the way a reader past the ceiling does: each read lands in the
    room ``reserve`` offers (at most its size), then ``commit`` takes it."""
    at, turn = 0, 0
    while at < len(data):
        room = capture.reserve(block)
        n = min(len(room), len(data) - at, sizes[turn % len(sizes)] if sizes else len(room))
        room[:n] = data[at : at + n]
        capture.commit(n)
        at, turn = at + n, turn + 1


@settings(max_examples=300, deadline=None)
@given(
    data=stream_bytes,
    fed=st.integers(0, 400),
    sizes=st.lists(st.integers(1, 50), max_size=6),
    block=st.integers(1, 64),
    max_bytes=st.integers(1, 40),
    max_lines=st.integers(1, 8),
)
def test_reads_straight_into_the_capture_keep_and_count_what_feeding_does(
    data: bytes, fed: int, sizes: list[int], block: int, max_bytes: int, max_lines: int
) -> None:
    # A stream starts with chunks fed from the loop, then reads go into the capture.
    fed = min(fed, len(data))
    head = HeadCapture(max_bytes=max_bytes, max_lines=max_lines)
    tail = TailCapture(max_bytes=max_bytes, max_lines=max_lines)
    for capture in (head, tail):
        if fed:
            capture.feed(data[:fed])
        read_into(capture, data[fed:], sizes, block)
    assert head.finish() == Captured(
        first(data, max_bytes, max_lines), "head", len(data), count_lines(data), first_line(data)
    )
    assert tail.finish() == Captured(
        last(data, max_bytes, max_lines), "tail", len(data), count_lines(data), last_line(data)
    )


def test_the_tail_ring_reuses_its_blocks_and_holds_at_most_the_ceiling_and_two_more() -> None:
    tail = TailCapture(max_bytes=1000, max_lines=10_000)
    data = b"".join(b"%09d\n" % i for i in range(2000))
    blocks: set[int] = set()
    at = 0
    while at < len(data):
        room = tail.reserve(256)
        blocks.add(id(room.obj))  # every block stays alive: in the ring or spare
        n = min(len(room), 10, len(data) - at)
        room[:n] = data[at : at + n]
        tail.commit(n)
        at += n
    assert tail.finish().data == data[-1000:]
    # 1000 bytes in 256-byte blocks: 4 cover them, one more is dropped and refilled.
    assert len(blocks) <= 6
