"""The terminal's final screen: rewrites collapsed, styling removed, streams in chunks."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from toolbound.bounds.terminal import MAX_ROWS, Shown, TerminalCollapser, collapse, strip_styling

# Pieces a noisy command prints: rewrites, erases, cursor moves, styling, links.
CONTROL_PIECES = [
    "\r",
    "\n",
    "\r\n",
    "\x08",
    "\x1b[K",
    "\x1b[0K",
    "\x1b[1K",
    "\x1b[2K",
    "\x1b[A",
    "\x1b[3A",
    "\x1b[1B",
    "\x1b[2F",
    "\x1b[E",
    "\x1b[1G",
    "\x1b[4D",
    "\x1b[J",
    "\x1b[2J",
    "\x1b[H",
    "\x1b[s",
    "\x1b[u",
    "\x1b7",
    "\x1b8",
    "\x1bM",
    "\x1b[31m",
    "\x1b[1;32m",
    "\x1b[0m",
    "\x1b[m",
    "\x1b[38;5;208m",
    "\x1b[?25l",
    "\x1b[?25h",
    "\x1b(B",
    "\x1b]8;;https://example.com/a\x1b\\",
    "\x1b]8;;\x07",
    "\x1b]0;title\x07",
    "\x1b",
    "\x1b[",
    "\x1b]",
]
NO_CONTROLS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x08\x1b")
PLAIN = st.text(NO_CONTROLS, max_size=30)
NOISY = st.lists(st.one_of(st.sampled_from(CONTROL_PIECES), PLAIN), max_size=40).map("".join)


def fed_in(text: str, cuts: list[int], *, max_rows: int = MAX_ROWS) -> str:
    collapser = TerminalCollapser(max_rows=max_rows)
    bounds = [0, *sorted(c % (len(text) + 1) for c in cuts), len(text)]
    out = [collapser.feed(text[a:b]) for a, b in itertools.pairwise(bounds)]
    return "".join(out) + collapser.finish()


@settings(deadline=None)
@given(st.lists(PLAIN, max_size=20), st.lists(st.sampled_from(["\n", "\r\n"]), max_size=20))
def test_plain_text_passes_through_unchanged(lines: list[str], endings: list[str]) -> None:
    text = "".join(line + (endings[i] if i < len(endings) else "") for i, line in enumerate(lines))
    assert collapse(text) == Shown(text, 0, 0)
    assert strip_styling(text) == Shown(text, 0, 0)


@settings(max_examples=300, deadline=None)
@given(NOISY)
def test_the_screen_holds_no_rewrite_and_no_escape(text: str) -> None:
    shown = collapse(text).text
    assert "\x1b" not in shown
    assert "\r" not in shown.replace("\r\n", "")
    assert "\x08" not in shown


@settings(max_examples=300, deadline=None)
@given(NOISY, st.lists(st.integers(min_value=0), max_size=8), st.sampled_from([2, 5, MAX_ROWS]))
# A chunk that ends in a `\r` inside an open OSC string (hypothesis found it).
@example("\r\r\r\n\x1b]\r\r\n", [7], 2)
def test_a_stream_fed_in_any_chunks_collapses_as_if_fed_whole(
    text: str, cuts: list[int], max_rows: int
) -> None:
    assert fed_in(text, cuts, max_rows=max_rows) == collapse(text, max_rows=max_rows).text


# Rewrites on one line and styling: every input byte is shown or counted.
ONE_LINE_PIECES = [
    "\r",
    "\n",
    "\r\n",
    "\x08",
    "\x1b[K",
    "\x1b[1K",
    "\x1b[2K",
    "\x1b[31m",
    "\x1b[0m",
]
ONE_LINE = st.lists(st.one_of(st.sampled_from(ONE_LINE_PIECES), PLAIN), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(ONE_LINE)
def test_the_counts_add_up_to_the_input(text: str) -> None:
    shown = collapse(text)
    assert len(text.encode()) == len(shown.text.encode()) + shown.elided_bytes


@settings(max_examples=300, deadline=None)
@given(NOISY)
def test_collapsed_bytes_are_what_is_neither_shown_nor_styling(text: str) -> None:
    # A cursor move onto a shorter line pads it with blanks it never received.
    shown = collapse(text)
    rest = len(text.encode()) - len(shown.text.encode()) - shown.styling_bytes
    assert shown.collapsed_bytes == max(0, rest)
    assert shown.styling_bytes <= len(text.encode())


@settings(deadline=None)
@given(st.lists(PLAIN, min_size=1, max_size=30), st.sampled_from(["\r", "\r\x1b[K", "\x1b[2K\r"]))
def test_the_last_frame_of_a_progress_bar_survives(frames: list[str], rewrite: str) -> None:
    text = "building\n" + rewrite.join(frames) + "\nFINISHED OK\n"
    # A rewrite that ends in \r before the newline makes a \r\n ending: still a line end.
    lines = collapse(text).text.replace("\r\n", "\n").split("\n")
    assert lines[0] == "building"
    assert lines[-2:] == ["FINISHED OK", ""]
    if rewrite == "\r":
        # Plain \r overwrites cell by cell: the last frame is where the line starts.
        assert lines[1].startswith(frames[-1])
    else:
        assert lines[1] == frames[-1]


@settings(deadline=None)
@given(st.lists(st.lists(PLAIN, min_size=3, max_size=3), min_size=1, max_size=10))
def test_the_last_frame_of_a_multi_line_bar_survives(frames: list[list[str]]) -> None:
    # docker / compose: draw N lines, move up N, erase and redraw each.
    redraw = "\x1b[3A" + "".join(f"\x1b[2K{line}\n" for line in frames[0])
    text = "".join(f"{line}\n" for line in frames[0])
    text += "".join("\x1b[3A" + "".join(f"\x1b[2K{line}\n" for line in f) for f in frames[1:])
    assert collapse(text).text == "".join(f"{line}\n" for line in frames[-1])
    assert collapse(text + redraw).text == "".join(f"{line}\n" for line in frames[0])


@pytest.mark.slow  # big data
def test_nine_megabytes_of_progress_bar_collapse_to_its_last_state() -> None:
    frames = "".join(
        f"\r\x1b[32m{i % 100:3d}%\x1b[0m |{'█' * (i % 40):<40}| {i}/150000" for i in range(150000)
    )
    text = "Collecting wheels\n" + frames + "\nFINISHED OK\n"
    assert len(text.encode()) > 9_000_000
    shown = collapse(text)
    assert shown.text == (f"Collecting wheels\n 99% |{'█' * 39:<40}| 149999/150000\nFINISHED OK\n")
    assert shown.elided_bytes == len(text.encode()) - len(shown.text.encode())
    assert shown.styling_bytes == 150000 * len("\x1b[32m\x1b[0m")


def test_an_erase_line_redraw_keeps_the_text_last_written() -> None:
    # npm: move to column 1, erase to the end, write the new state.
    npm = "".join(f"\x1b[1G\x1b[0K⸨{'#' * i}⸩ fetch {i}" for i in range(5)) + "\x1b[1G\x1b[0K"
    assert collapse(npm + "added 12 packages\n").text == "added 12 packages\n"
    # A shorter write after \r leaves the cells it did not overwrite, as a screen does.
    assert collapse("progress\rok").text == "okogress"
    assert collapse("progress\rok\x1b[K").text == "ok"
    assert collapse("abcdef\x1b[3D\x1b[1K").text == "    ef"
    assert collapse("abc\x08\x08X").text == "aXc"


def test_crlf_is_a_line_ending_and_a_lone_cr_a_rewrite() -> None:
    assert collapse("one\r\ntwo\r\n").text == "one\r\ntwo\r\n"
    assert collapse("one\rONE\r\n").text == "ONE\r\n"


def test_a_cr_lf_split_across_chunks_stays_a_line_ending() -> None:
    collapser = TerminalCollapser(max_rows=1)
    assert collapser.feed("one\r") == ""
    assert collapser.feed("\ntwo") == "one\r\n"
    assert collapser.finish() == "two"


def test_a_sequence_split_across_chunks_is_still_a_sequence() -> None:
    collapser = TerminalCollapser()
    parts = ["\x1b", "[3", "1mred", "\x1b]8;;https://x.test/", "p\x1b", "\\link", "\x1b]8;;\x1b\\"]
    assert "".join(collapser.feed(p) for p in parts) + collapser.finish() == "redlink"
    assert collapser.styling_bytes == len("\x1b[31m\x1b]8;;https://x.test/p\x1b\\\x1b]8;;\x1b\\")


def test_styling_comes_out_and_the_text_it_decorated_stays() -> None:
    text = "\x1b[1;31mFAILED\x1b[0m \x1b]8;;file:///t.py\x1b\\t.py\x1b]8;;\x1b\\\x1b[?25l::test\r\n"
    assert strip_styling(text) == Shown(
        "FAILED t.py::test\r\n", len(text.encode()) - len("FAILED t.py::test\r\n"), 0
    )
    # strip_styling keeps the rewrites for a caller that wants them; collapse drops them.
    assert strip_styling("50%\x1b[2K\r\x1b[32mdone\x1b[0m").text == "50%\x1b[2K\rdone"
    assert collapse("50%\x1b[2K\r\x1b[32mdone\x1b[0m") == Shown("done", 9, 8)


def test_an_escape_that_never_ends_does_not_swallow_the_text() -> None:
    text = "\x1b]8;;" + "x" * 5000 + "\nnext line\n"
    assert collapse(text).text.endswith("x" * 4000 + "\nnext line\n")


def test_lines_become_final_once_no_cursor_move_can_reach_them() -> None:
    collapser = TerminalCollapser(max_rows=10)
    first = collapser.feed("".join(f"line {i}\n" for i in range(100)))
    # Only the last rows stay pending: memory is bounded by them, not by the stream.
    assert first == "".join(f"line {i}\n" for i in range(91))
    # A move up past the oldest pending row stops there, as at the top of a screen.
    assert collapser.feed("\x1b[50A\x1b[2Kup\n") == ""
    assert collapser.finish() == "up\n" + "".join(f"line {i}\n" for i in range(92, 100))
