"""Head and tail: both ends kept, the cut named between them, the capture's counts exact."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolbound import bounds
from toolbound.bounds import count_lines
from toolbound.bounds.headtail import (
    HeadTailBudget,
    HeadTailCapture,
    Retained,
    gap_marker,
    shown_ends,
)
from toolbound.limits import KB, Budget

SPILL = "/data/scratch/s1/tool-output/stdout-1700000000000-0.log"
MODEL = HeadTailBudget(head=Budget(max_bytes=8 * KB, max_lines=120), tail=Budget(8 * KB, 240))
CEILING = Budget(max_bytes=256 * KB, max_lines=100_000)


def capture(data: bytes, *, head: Budget = CEILING, tail: Budget = CEILING, chunk: int = 65536):
    retainer = HeadTailCapture(head=head, tail=tail)
    for at in range(0, len(data), chunk):
        retainer.feed(data[at : at + chunk])
    return retainer.finish()


def summary_run() -> bytes:
    command = "seq 1 300000; echo SUMMARY: 1 failed"
    return subprocess.run(
        ["bash", "-c", command], capture_output=True, timeout=30, check=True
    ).stdout


def test_a_test_runs_closing_summary_survives_the_capture_the_cut_and_the_spill() -> None:
    out = summary_run()
    retained = capture(out)
    assert retained.head == out[: 256 * KB]
    assert retained.tail == out[-256 * KB :]
    assert retained.dropped_bytes == len(out) - 512 * KB
    assert retained.dropped_newlines == out[256 * KB : -256 * KB].count(b"\n")
    assert retained.total_lines == 300001

    cut = bounds.cut(retained, MODEL, keep="both", spill_path=SPILL)
    head = "".join(f"{i}\n" for i in range(1, 121))
    tail = "".join(f"{i}\n" for i in range(299762, 300001)) + "SUMMARY: 1 failed\n"
    cut_bytes = len(out) - len(head) - len(tail)
    assert cut.payload == (
        f"{head}[truncated: kept the first 120 and the last 240 of 300001 lines; "
        f"299641 lines ({cut_bytes} bytes) cut here; limit 360 lines / 16KB. "
        f"Full output saved to {SPILL} — Grep it, or Read it with offset/limit.]\n{tail}"
    )

    spill = retained.spill_bytes(head_ceiling_bytes=256 * KB, tail_ceiling_bytes=256 * KB)
    gap = gap_marker(
        dropped_bytes=retained.dropped_bytes,
        dropped_newlines=retained.dropped_newlines,
        head_ceiling_bytes=256 * KB,
        tail_ceiling_bytes=256 * KB,
    )
    assert gap == (
        f"[truncated: {retained.dropped_bytes} bytes ({retained.dropped_newlines} lines) "
        "not kept here; the capture keeps the first 256KB and the last 256KB.]"
    )
    # The head capture ended mid-line, so the gap line starts a line of its own.
    assert spill == out[: 256 * KB] + b"\n" + gap.encode() + b"\n" + out[-256 * KB :]
    assert spill.endswith(b"SUMMARY: 1 failed\n")


def test_a_single_huge_line_keeps_both_of_its_ends_and_counts_bytes() -> None:
    bundle = b"!function(){" + b"var a=1;" * 500_000 + b"}();//# sourceMappingURL=app.js.map"
    cut = bounds.cut(bundle, MODEL, keep="both")
    assert cut.head == bundle[: 8 * KB].decode()
    assert cut.tail == bundle[-8 * KB :].decode()
    assert cut.marker == (
        f"[truncated: kept the first 8192 and the last 8192 bytes of a single {len(bundle)}-byte "
        f"line; {len(bundle) - 16 * KB} bytes cut here; limit 360 lines / 16KB. "
        "Narrow the request to see more.]"
    )
    assert cut.payload == f"{cut.head}\n{cut.marker}\n{cut.tail}"


def test_a_cut_through_a_multibyte_character_keeps_whole_characters() -> None:
    text = ("é" * 10_000).encode()
    cut = bounds.cut(text, HeadTailBudget(Budget(1001, 5), Budget(1001, 5)), keep="both")
    assert (cut.head, cut.tail) == ("é" * 500, "é" * 500)
    assert (cut.head_bytes, cut.tail_bytes, cut.cut_bytes) == (1000, 1000, 18_000)


def test_what_fits_is_returned_unchanged_without_a_marker() -> None:
    cut = bounds.cut(b"a\nb\n", MODEL, keep="both")
    assert (cut.truncated, cut.marker, cut.payload) == (False, None, "a\nb\n")


def test_the_split_shares_a_budget_between_the_ends() -> None:
    split = HeadTailBudget.split(Budget(max_bytes=32 * KB, max_lines=1200), head_share=0.25)
    assert split == HeadTailBudget(Budget(8 * KB, 300), Budget(24 * KB, 900))
    assert split.label == "1200 lines / 32KB"


def test_a_stream_shorter_than_the_head_is_retained_whole() -> None:
    retained = capture(b"one\ntwo\n")
    assert retained == Retained(head=b"one\ntwo\n")
    assert retained.spill_bytes(head_ceiling_bytes=KB, tail_ceiling_bytes=KB) == b"one\ntwo\n"


LINE = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12).map(
    lambda s: s.replace("\n", "")
)
STREAM = st.tuples(
    st.lists(LINE, max_size=60),
    st.booleans(),
    st.binary(max_size=3),
).map(lambda t: ("\n".join(t[0]) + ("\n" if t[1] else "")).encode() + t[2])
SMALL_BUDGET = st.builds(
    Budget, max_bytes=st.integers(min_value=4, max_value=60), max_lines=st.integers(1, 8)
)


def assert_true_ends(data: bytes, cut, budget: HeadTailBudget, *, held_whole: bool = True) -> None:
    fits = count_lines(data) <= budget.max_lines and (
        len(data.decode("utf-8", "replace").encode()) <= budget.max_bytes
    )
    if not cut.truncated:
        assert fits
        assert cut.payload == data.decode("utf-8", "replace")
        assert cut.marker is None
        return
    # A capture that dropped bytes is a cut even when the stream would have fitted.
    assert not fits or not held_whole
    head_raw = data[: cut.head_bytes]
    tail_raw = data[len(data) - cut.tail_bytes :]
    middle = data[cut.head_bytes : len(data) - cut.tail_bytes]
    assert cut.head == head_raw.decode("utf-8", "replace")
    assert cut.tail == tail_raw.decode("utf-8", "replace")
    assert cut.head_bytes + cut.cut_bytes + cut.tail_bytes == len(data) == cut.total_bytes
    assert cut.cut_bytes > 0
    assert cut.cut_lines == middle.count(b"\n")
    assert len(cut.head.encode()) <= budget.head.max_bytes
    assert len(cut.tail.encode()) <= budget.tail.max_bytes
    assert count_lines(cut.head.encode()) <= budget.head.max_lines
    assert count_lines(cut.tail.encode()) <= budget.tail.max_lines
    if cut.whole_lines:
        assert cut.head_lines + cut.cut_lines + cut.tail_lines == count_lines(data)
        assert cut.head_bytes == 0 or data[cut.head_bytes - 1] == 0x0A
        assert cut.tail_bytes == len(data) or data[len(data) - cut.tail_bytes - 1] == 0x0A
    assert cut.marker is not None
    assert cut.marker.startswith("[truncated: kept the first ")
    assert cut.payload.startswith(cut.head)
    assert cut.payload.endswith(f"{cut.marker}\n{cut.tail}")


@settings(max_examples=400, deadline=None)
@given(STREAM, SMALL_BUDGET, SMALL_BUDGET)
def test_a_cut_keeps_a_true_prefix_and_a_true_suffix_within_the_budget(
    data: bytes, head: Budget, tail: Budget
) -> None:
    budget = HeadTailBudget(head, tail)
    assert_true_ends(data, bounds.cut(data, budget, keep="both"), budget)


@settings(max_examples=400, deadline=None)
@given(STREAM, SMALL_BUDGET, SMALL_BUDGET, st.integers(min_value=1, max_value=17))
def test_the_capture_keeps_both_ends_and_counts_what_it_dropped(
    data: bytes, head: Budget, tail: Budget, chunk: int
) -> None:
    retained = capture(data, head=head, tail=tail, chunk=chunk)
    assert data.startswith(retained.head)
    assert data.endswith(retained.tail)
    assert len(retained.head) <= head.max_bytes
    assert retained.head.count(b"\n") <= head.max_lines
    assert len(retained.tail) <= tail.max_bytes
    assert count_lines(retained.tail) <= tail.max_lines
    middle = data[len(retained.head) : len(data) - len(retained.tail)]
    assert retained.dropped_bytes == len(middle)
    assert retained.dropped_newlines == middle.count(b"\n")
    assert retained.total_bytes == len(data)
    assert retained.total_lines == count_lines(data)
    before = data[len(data) - len(retained.tail) - 1 : len(data) - len(retained.tail)]
    assert retained.tail_at_line_start == (before in (b"", b"\n"))
    spill = retained.spill_bytes(head_ceiling_bytes=64, tail_ceiling_bytes=64)
    assert (spill == data) == (retained.dropped_bytes == 0)
    assert spill.startswith(retained.head)
    assert spill.endswith(retained.tail)


@settings(max_examples=400, deadline=None)
@given(STREAM, SMALL_BUDGET, SMALL_BUDGET, st.integers(min_value=1, max_value=17))
def test_a_cut_of_what_the_capture_kept_is_exact_about_the_whole_stream(
    data: bytes, model: Budget, ceiling: Budget, chunk: int
) -> None:
    budget = HeadTailBudget(model, model)
    retained = capture(data, head=ceiling, tail=ceiling, chunk=chunk)
    cut = bounds.cut(retained, budget, keep="both")
    if cut.truncated:
        assert_true_ends(data, cut, budget, held_whole=retained.dropped_bytes == 0)
    else:
        assert cut.payload == data.decode("utf-8", "replace")


def test_the_capture_never_holds_more_than_its_ceilings() -> None:
    retainer = HeadTailCapture(head=Budget(KB, 10), tail=Budget(KB, 10))
    line = b"x" * 99 + b"\n"
    for _ in range(20_000):
        retainer.feed(line * 10)
        # The ring drops whole chunks once the rest covers the tail: one chunk of slack.
        assert retainer._held <= KB + len(line) * 10
    retained = retainer.finish()
    assert (len(retained.head), len(retained.tail)) == (1000, 1000)
    assert retained.dropped_newlines == 200_000 - 20
    assert sys.getsizeof(retained.head) < 2 * KB


@settings(max_examples=300, deadline=None)
@given(
    STREAM,
    SMALL_BUDGET,
    st.integers(min_value=1, max_value=17),
    st.integers(min_value=1, max_value=80),
)
def test_within_keeps_both_ends_of_what_was_kept_and_counts_the_rest_dropped(
    data: bytes, ceiling: Budget, chunk: int, max_bytes: int
) -> None:
    retained = capture(data, head=ceiling, tail=ceiling, chunk=chunk)
    fitted = retained.within(max_bytes)
    assert len(fitted.head) + len(fitted.tail) <= max(
        max_bytes, len(retained.head) + len(retained.tail)
    )
    if len(retained.head) + len(retained.tail) > max_bytes:
        assert len(fitted.head) + len(fitted.tail) <= max_bytes
    assert data.startswith(fitted.head)
    assert data.endswith(fitted.tail)
    assert fitted.total_bytes == len(data)
    assert fitted.total_lines == count_lines(data)
    middle = data[len(fitted.head) : len(data) - len(fitted.tail)]
    assert fitted.dropped_newlines == middle.count(b"\n")
    before = data[len(data) - len(fitted.tail) - 1 : len(data) - len(fitted.tail)]
    assert fitted.tail_at_line_start == (before in (b"", b"\n"))


def test_shown_ends_collapse_each_end_and_keep_the_gap_counted() -> None:
    raw = Retained(
        head=b"\x1b[1mstart\x1b[0m\n 10%\r 20%\r\xe2\x82",
        tail=b"\xac 90%\r100%\nFINISHED OK\n",
        dropped_bytes=1000,
        dropped_newlines=0,
        tail_at_line_start=False,
    )
    shown, elided = shown_ends(raw)
    # The tail's first line is rewritten from column 0: it is shown as a whole line.
    assert shown == Retained(
        head=b"start\n 20%",
        tail=b"100%\nFINISHED OK\n",
        dropped_bytes=1000,
        dropped_newlines=0,
        tail_at_line_start=True,
    )
    assert elided == len(raw.head) + len(raw.tail) - len(shown.head) - len(shown.tail)
    cut = bounds.cut(shown, MODEL, keep="both")
    assert cut.payload.endswith(
        "cut here; limit 360 lines / 16KB. Narrow the request to see more.]\n100%\nFINISHED OK\n"
    )


def test_shown_ends_of_a_whole_stream_collapse_it_as_one() -> None:
    shown, elided = shown_ends(Retained.whole(b"a\rb\x1b[2K\rdone\n"))
    assert shown == Retained.whole(b"done\n")
    assert elided == len(b"a\rb\x1b[2K\rdone\n") - len(b"done\n")


@pytest.mark.parametrize("max_bytes", [200, 1000, 4096, 6000])
def test_a_spill_within_a_size_holds_its_gap_marker_inside_that_size(max_bytes: int) -> None:
    data = b"".join(b"line %d\n" % i for i in range(2000))
    retained = capture(data, head=Budget(3000, 1000), tail=Budget(3000, 1000))
    spill = retained.spill_within(max_bytes, head_ceiling_bytes=3000, tail_ceiling_bytes=3000)
    assert max_bytes - 3 <= len(spill) <= max_bytes
    head, _, rest = spill.partition(b"\n[truncated: ")
    tail = rest.partition(b".]\n")[2]
    # The line break before the marker is the head's own, or one put there (`joint`).
    rebuilt = []
    for kept in (len(head), len(head) + 1):
        dropped = data[kept : len(data) - len(tail)]
        gap = gap_marker(
            dropped_bytes=len(dropped),
            dropped_newlines=dropped.count(b"\n"),
            head_ceiling_bytes=3000,
            tail_ceiling_bytes=3000,
        )
        rebuilt.append(head + b"\n" + gap.encode() + b"\n" + tail)
    assert spill in rebuilt
    assert data.startswith(head)
    assert data.endswith(tail)
    assert abs(len(head) - len(tail)) <= 2
