"""The economy capture behind the reader's interface: both ends, however the bytes came."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolbound.bounds.headtail import HeadTailCapture
from toolbound.exec.capture import BothEndsCapture
from toolbound.limits import Budget

BUDGET = st.builds(
    Budget, max_bytes=st.integers(min_value=1, max_value=64), max_lines=st.integers(1, 8)
)


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=400).map(lambda b: b.replace(b"\x00", b"\n")),
    BUDGET,
    BUDGET,
    st.lists(st.tuples(st.booleans(), st.integers(1, 40)), min_size=1, max_size=30),
)
def test_fed_and_read_in_place_chunks_keep_the_same_ends_as_the_retainer(
    data: bytes, head: Budget, tail: Budget, reads: list[tuple[bool, int]]
) -> None:
    capture = BothEndsCapture(head=head, tail=tail)
    retainer = HeadTailCapture(head=head, tail=tail)
    at = 0
    while at < len(data):
        for in_place, size in reads:
            part = data[at : at + size]
            if not part:
                break
            if in_place:
                # The reader's path past the live ceiling: reserve, read into it, commit.
                view = capture.reserve(size)
                view[: len(part)] = part
                capture.commit(len(part))
            else:
                capture.feed(part)
            retainer.feed(part)
            at += len(part)
    assert capture.retained() == retainer.finish()
    finished = capture.finish()
    assert (finished.total_bytes, finished.keep) == (len(data), "head")
    assert data.startswith(finished.data)
