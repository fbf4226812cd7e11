"""cut, one end kept: exact markers, both ends, char safety, and properties over random text."""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolbound import bounds
from toolbound.bounds import Cut, count_lines
from toolbound.limits import Budget

SPILL = "/data/scratch/s1/tool-output/stdout-1700000000000-0.log"


def lines(n: int, width: int = 9) -> str:
    return "".join(f"{i:0{width}d}\n" for i in range(n))


def whole_lines(text: str) -> list[str]:
    """``text``'s lines as count_lines counts them, each with its newline."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def test_head_cut_by_lines_appends_the_seed_marker_with_spill_sentence() -> None:
    cut = bounds.cut(lines(51234), Budget(96 * 1024, 4000), keep="head", spill_path=SPILL)
    assert cut.truncated
    assert cut.fired == "lines"
    assert cut.kept == lines(4000)
    assert cut.marker == (
        "[truncated: kept the first 4000 of 51234 lines; limit 4000 lines / 96KB. "
        f"Full output saved to {SPILL} — Grep it, or Read it with offset/limit.]"
    )
    assert cut.payload == lines(4000) + cut.marker


def test_tail_cut_by_bytes_prepends_the_narrow_marker() -> None:
    text = "".join(f"{i:079d}\n" for i in range(51234))  # 80 bytes a line
    cut = bounds.cut(text, Budget(96 * 1024, 4000), keep="tail")
    assert cut.fired == "bytes"
    assert cut.kept_lines == 1228  # 98304 // 80
    assert cut.kept == text[-1228 * 80 :]
    assert cut.marker == (
        "[truncated: kept the last 1228 of 51234 lines; limit 4000 lines / 96KB. "
        "Narrow the request to see more.]"
    )
    assert cut.payload == cut.marker + "\n" + cut.kept


def test_single_giant_line_keeps_a_prefix_with_the_single_line_marker() -> None:
    text = "x" * 4_200_000
    cut = bounds.cut(text, Budget(96 * 1024, 4000), keep="head", spill_path=SPILL)
    assert cut.kept == "x" * 98304
    assert cut.marker == (
        "[truncated: no complete line fits the 96KB limit; kept 98304 bytes of a single "
        f"4200000-byte line. Full output saved to {SPILL} — Grep it, or Read it with "
        "offset/limit.]"
    )
    assert cut.payload == cut.kept + "\n" + cut.marker


def test_single_giant_line_in_a_tail_cut_keeps_its_suffix() -> None:
    text = "start\n" + "é" * 100_000 + "end"
    cut = bounds.cut(text, Budget(1024, 10), keep="tail")
    assert cut.kept.endswith("end")
    assert len(cut.kept.encode()) <= 1024
    assert text.endswith(cut.kept)
    assert cut.single_line_bytes == 200_003
    assert cut.marker is not None
    assert cut.marker.startswith("[truncated: no complete line fits the 1KB limit; kept ")


def test_a_giant_first_line_past_what_is_held_is_named_by_its_real_size() -> None:
    # What a capture holds of `print("x" * 4200000); print("done")`: its first 512 KB.
    cut = bounds.cut(
        b"x" * 524288,
        Budget(96 * 1024, 4000),
        keep="head",
        total_bytes=4_200_006,
        total_lines=2,
        edge_line_bytes=4_200_000,
        spill_path=SPILL,
    )
    assert cut.payload == "x" * 98304 + (
        "\n[truncated: no complete line fits the 96KB limit; kept 98304 bytes of a single "
        f"4200000-byte line. Full output saved to {SPILL} — Grep it, or Read it with "
        "offset/limit.]"
    )


def test_a_giant_last_line_past_what_is_held_is_named_by_its_real_size() -> None:
    cut = bounds.cut(
        b"y" * 524287 + b"\n",
        Budget(96 * 1024, 4000),
        keep="tail",
        total_bytes=4_200_014,
        total_lines=3,
        edge_line_bytes=4_200_000,
    )
    assert cut.payload == (
        "[truncated: no complete line fits the 96KB limit; kept 98304 bytes of a single "
        "4200000-byte line. Narrow the request to see more.]\n" + "y" * 98303 + "\n"
    )


def test_a_giant_line_held_whole_is_sized_without_its_newline() -> None:
    head = bounds.cut("x" * 5000 + "\nok\n", Budget(1024, 10), keep="head")
    tail = bounds.cut("ok\n" + "y" * 5000 + "\n", Budget(1024, 10), keep="tail")
    assert (head.single_line_bytes, tail.single_line_bytes) == (5000, 5000)


def test_nothing_cut_means_no_marker_and_the_text_unchanged() -> None:
    cut = bounds.cut("a\nb\n", Budget(1024, 10), keep="head")
    assert (cut.truncated, cut.marker, cut.payload, cut.fired) == (False, None, "a\nb\n", None)


def test_totals_beyond_what_is_held_report_a_capture_cut() -> None:
    cut = bounds.cut("a\nb\n", Budget(1024, 10), keep="head", total_bytes=10_000, total_lines=5000)
    assert cut.fired == "capture"
    assert cut.marker == (
        "[truncated: kept the first 2 of 5000 lines; limit 10 lines / 1KB. "
        "Narrow the request to see more.]"
    )


def test_invalid_utf8_is_replaced_not_raised() -> None:
    cut = bounds.cut(b"ok\xff\xfe\n" * 3, Budget(1024, 10), keep="head")
    assert cut.kept == "ok\ufffd\ufffd\n" * 3


def test_spill_can_be_named_after_the_cut() -> None:
    cut = bounds.cut(lines(10), Budget(1024, 2), keep="head")
    assert cut.marker is not None
    assert "Narrow the request" in cut.marker
    named = cut.with_spill(SPILL)
    assert named.marker is not None
    assert f"Full output saved to {SPILL}" in named.marker
    assert named.kept == cut.kept


# --- properties -------------------------------------------------------------

TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(["\n", "\n", "\n", "a", "b", " ", "é", "ß", "中", "文", "😀", "𝄞"]),
        st.characters(codec="utf-8"),
    ),
    max_size=400,
)
ARGS = {
    "text": TEXT,
    "max_bytes": st.integers(min_value=4, max_value=300),
    "max_lines": st.integers(min_value=1, max_value=30),
    "keep": st.sampled_from(["head", "tail"]),
}


@settings(max_examples=300)
@given(**ARGS)
def test_bounds_hold_and_kept_part_is_a_true_end(
    text: str, max_bytes: int, max_lines: int, keep: str
) -> None:
    cut = bounds.cut(text, Budget(max_bytes, max_lines), keep=keep)  # type: ignore[arg-type]
    data = cut.kept.encode()
    assert len(data) <= max_bytes
    assert count_lines(data) <= max_lines
    assert text.startswith(cut.kept) if keep == "head" else text.endswith(cut.kept)
    if text:
        assert cut.kept, "never an empty payload for non-empty input"


@settings(max_examples=300)
@given(**ARGS)
def test_marker_present_exactly_when_something_was_cut(
    text: str, max_bytes: int, max_lines: int, keep: str
) -> None:
    cut = bounds.cut(text, Budget(max_bytes, max_lines), keep=keep)  # type: ignore[arg-type]
    was_cut = cut.kept != text
    assert cut.truncated is was_cut
    assert (cut.marker is not None) is was_cut
    if was_cut:
        assert cut.marker is not None
        assert cut.marker in cut.payload
        if keep == "head":
            assert cut.payload.endswith(cut.marker)
        else:
            assert cut.payload.startswith(cut.marker)
    else:
        assert cut.payload == text


@settings(max_examples=300)
@given(**ARGS)
def test_marker_counts_are_right(text: str, max_bytes: int, max_lines: int, keep: str) -> None:
    cut = bounds.cut(text, Budget(max_bytes, max_lines), keep=keep)  # type: ignore[arg-type]
    data = text.encode()
    assert cut.total_bytes == len(data)
    assert cut.total_lines == count_lines(data)
    assert cut.kept_bytes == len(cut.kept.encode())
    assert cut.kept_lines == count_lines(cut.kept.encode())
    if cut.marker is None:
        return
    if cut.single_line_bytes is None:
        end = "first" if keep == "head" else "last"
        assert f"kept the {end} {cut.kept_lines} of {cut.total_lines} lines;" in cut.marker
        # Whole lines: the kept text is the original's first (head) or last (tail) lines.
        whole = whole_lines(text)
        ends = whole[: cut.kept_lines] if keep == "head" else whole[len(whole) - cut.kept_lines :]
        assert cut.kept == "".join(ends)
    else:
        assert f"kept {cut.kept_bytes} bytes of a single {cut.single_line_bytes}-byte line" in (
            cut.marker
        )


@settings(max_examples=200)
@given(
    raw=st.binary(max_size=300),
    max_bytes=st.integers(min_value=4, max_value=200),
    keep=st.sampled_from(["head", "tail"]),
)
def test_any_bytes_give_valid_utf8_within_bounds(raw: bytes, max_bytes: int, keep: str) -> None:
    cut = bounds.cut(raw, Budget(max_bytes, 5), keep=keep)  # type: ignore[arg-type]
    cut.payload.encode("utf-8")  # raises on a lone surrogate: not valid UTF-8
    assert len(cut.kept.encode()) <= max_bytes
    # The kept text is one end of the bytes, decoded: nothing invented, nothing reordered.
    ends = [raw[:n] if keep == "head" else raw[n:] for n in range(len(raw) + 1)]
    assert cut.kept in {end.decode("utf-8", "replace") for end in ends}


# --- large inputs: the counting that runs on flags ----------------------------


def naive_cut(data: bytes, max_bytes: int, max_lines: int, keep: str) -> tuple[bytes, str]:
    """Reference: the most whole lines from one end within both limits, and the
    limit that stopped it."""
    lines = [line + b"\n" for line in data.split(b"\n")]
    lines[-1] = lines[-1][:-1]
    if not lines[-1]:
        lines.pop()
    if keep == "tail":
        lines.reverse()
    kept: list[bytes] = []
    size = 0
    for line in lines:
        if len(kept) == max_lines:
            return b"".join(kept[::-1] if keep == "tail" else kept), "lines"
        if size + len(line) > max_bytes:
            return b"".join(kept[::-1] if keep == "tail" else kept), "bytes"
        kept.append(line)
        size += len(line)
    return data, "none"


def uneven_lines(size: int, seed: int) -> bytes:
    """Runs of short, long and empty lines, so the line density changes along the text."""
    rnd = random.Random(seed)
    out = bytearray()
    while len(out) < size:
        width = rnd.choice([0, 3, 7, 80, 1500])
        for _ in range(rnd.randrange(1, 300)):
            out += b"y" * rnd.randrange(width + 1) + b"\n"
    return bytes(out[:size])


@pytest.mark.parametrize("keep", ["head", "tail"])
@pytest.mark.parametrize("max_lines", [1, 700, 4000, 30_000])
def test_large_uneven_text_is_cut_on_the_same_whole_lines_as_a_naive_scan(
    keep: str, max_lines: int
) -> None:
    for seed in range(12):
        data = uneven_lines(300_000, seed)
        cut = bounds.cut(data, Budget(96 * 1024, max_lines), keep=keep)  # type: ignore[arg-type]
        kept, fired = naive_cut(data, 96 * 1024, max_lines, keep)
        assert (cut.kept.encode(), cut.fired) == (kept, fired)
        assert cut.kept_lines == count_lines(kept)
        assert cut.total_lines == count_lines(data)


@settings(max_examples=400)
@given(
    text=st.text(alphabet=st.sampled_from(["\n", "a", "é", "😀"]), max_size=300),
    max_bytes=st.integers(min_value=4, max_value=40),
    keep=st.sampled_from(["head", "tail"]),
)
def test_a_line_too_long_to_fit_is_named_by_its_whole_size(
    text: str, max_bytes: int, keep: str
) -> None:
    cut = bounds.cut(text, Budget(max_bytes, 50), keep=keep)  # type: ignore[arg-type]
    data = text.encode()
    edge = data.split(b"\n")[0] if keep == "head" else data.removesuffix(b"\n").split(b"\n")[-1]
    if cut.single_line_bytes is not None:
        assert cut.single_line_bytes == len(edge)
        assert cut.truncated


@pytest.mark.parametrize("keep", ["head", "tail"])
def test_a_cut_is_the_same_value_as_one_built_by_hand(keep: str) -> None:
    cut = bounds.cut(lines(50), Budget(1024, 10), keep=keep)  # type: ignore[arg-type]
    by_hand = Cut(**{f.name: getattr(cut, f.name) for f in dataclasses.fields(Cut) if f.init})
    assert (cut, hash(cut), repr(cut)) == (by_hand, hash(by_hand), repr(by_hand))
    assert by_hand.kept == (lines(50)[:100] if keep == "head" else lines(50)[-100:])
    assert by_hand.payload == cut.payload
    # Replacing a field gives a cut whose payload follows it.
    named = dataclasses.replace(cut, spill_path=SPILL)
    assert named == cut.with_spill(SPILL)
    assert named.marker is not None
    assert named.kept == cut.kept
    assert named.payload == (
        named.kept + named.marker if keep == "head" else f"{named.marker}\n{named.kept}"
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        cut.kept = "changed"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "keep"),
    [
        (lines(50), "head"),
        (lines(50), "tail"),
        ("x" * 5000 + "\nok\n", "head"),  # a prefix of one line: no newline before the marker
        ("ok\n" + "é" * 3000 + "\n", "tail"),
        ("a\nb\n", "head"),  # nothing cut
    ],
)
def test_naming_the_spill_gives_the_payload_a_cut_built_by_hand_has(text: str, keep: str) -> None:
    cut = bounds.cut(text, Budget(1024, 10), keep=keep)  # type: ignore[arg-type]
    named = cut.with_spill(SPILL)
    by_hand = dataclasses.replace(
        Cut(**{f.name: getattr(cut, f.name) for f in dataclasses.fields(Cut) if f.init}),
        spill_path=SPILL,
    )
    assert (named, named.kept, named.payload) == (by_hand, by_hand.kept, by_hand.payload)
    assert (SPILL in named.payload) is cut.truncated


# --- one cutter: keep head, tail or both; never twice --------------------------------


@pytest.mark.parametrize("keep", ["head", "tail", "both"])
def test_a_cut_payload_is_refused_when_it_would_be_cut_again(keep: str) -> None:
    first = bounds.cut(lines(100), Budget(1024, 10), keep=keep)  # type: ignore[call-overload]
    assert first.truncated
    with pytest.raises(ValueError, match="cut already"):
        bounds.cut(first.payload, Budget(1024, 5), keep=keep)  # type: ignore[call-overload]
    # A payload that fits its budget is handed back as it is, its marker once.
    again = bounds.cut(first.payload, Budget(4096, 100), keep=keep)  # type: ignore[call-overload]
    assert (again.truncated, again.payload) == (False, first.payload)


def test_a_stream_that_prints_a_marker_is_cut_like_any_other_output() -> None:
    printed = lines(100, width=9).encode() + b"[truncated: kept the first 3 of 9 lines; x]\n"
    cut = bounds.cut(printed, Budget(1024, 10), keep="tail")
    assert cut.truncated
    assert cut.kept.endswith("[truncated: kept the first 3 of 9 lines; x]\n")
    assert cut.kept_lines == 10


def test_both_ends_of_a_budget_split_by_the_head_share() -> None:
    cut = bounds.cut(lines(1000), Budget(1024, 40), keep="both", head_share=0.25)
    assert (cut.head_lines, cut.tail_lines) == (10, 30)
    assert cut.head == lines(10)
    assert cut.marker == (
        "[truncated: kept the first 10 and the last 30 of 1000 lines; 960 lines "
        "(9600 bytes) cut here; limit 40 lines / 1KB. Narrow the request to see more.]"
    )
