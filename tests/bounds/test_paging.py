"""Read's window as pure functions: lines from bytes, the page, the notice."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolbound.bounds.paging import (
    Page,
    RawLine,
    build_page,
    decode_counting,
    head_bytes_for,
    iter_raw_lines,
    quick_page,
)
from toolbound.notices import read_window as window_notice


def lines_of(data: bytes, *, head_bytes: int = 64, chunk_bytes: int = 7) -> list[RawLine]:
    def read_at(pos: int, size: int) -> bytes:
        return data[pos : pos + size]

    return list(
        iter_raw_lines(read_at, 0, len(data), head_bytes=head_bytes, chunk_bytes=chunk_bytes)
    )


def page_of(
    data: bytes, *, max_lines: int = 2000, max_bytes: int = 48 * 1024, max_line_chars: int = 2000
) -> Page:
    raw = lines_of(data, head_bytes=head_bytes_for(max_line_chars), chunk_bytes=1024)
    return build_page(
        iter(raw), max_lines=max_lines, max_bytes=max_bytes, max_line_chars=max_line_chars
    )


def test_lines_keep_their_endings_crlf_included() -> None:
    assert lines_of(b"a\r\nb\n\nc") == [
        RawLine(b"a", 1, b"\r\n"),
        RawLine(b"b", 1, b"\n"),
        RawLine(b"", 0, b"\n"),
        RawLine(b"c", 1, b""),
    ]


def test_a_long_line_keeps_only_its_head_and_its_full_length() -> None:
    data = b"x" * 1000 + b"\r\n" + b"tail\n"
    assert lines_of(data, head_bytes=16, chunk_bytes=5) == [
        RawLine(b"x" * 16, 1000, b"\r\n"),
        RawLine(b"tail", 4, b"\n"),
    ]


def test_a_long_last_line_without_newline_is_still_a_line() -> None:
    assert lines_of(b"ok\n" + b"y" * 100, head_bytes=8, chunk_bytes=3) == [
        RawLine(b"ok", 2, b"\n"),
        RawLine(b"y" * 8, 100, b""),
    ]


def test_reading_stops_at_the_end_it_was_given() -> None:
    data = b"one\ntwo\nthree\n"

    def read_at(pos: int, size: int) -> bytes:
        return data[pos : pos + size]

    got = list(iter_raw_lines(read_at, 4, 8, head_bytes=10, chunk_bytes=2))
    assert got == [RawLine(b"two", 3, b"\n")]


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=300).map(lambda b: b.replace(b"a", b"\n").replace(b"b", b"\r")),
    head_bytes=st.integers(1, 40),
    chunk_bytes=st.integers(1, 50),
)
def test_lines_reassemble_the_bytes_exactly(data: bytes, head_bytes: int, chunk_bytes: int) -> None:
    got = lines_of(data, head_bytes=head_bytes, chunk_bytes=chunk_bytes)
    expected = data.split(b"\n")
    if expected[-1] == b"":
        expected.pop()
    assert len(got) == len(expected)
    rebuilt = b""
    for line, body_and_cr in zip(got, expected, strict=True):
        body = body_and_cr[:-1] if line.eol == b"\r\n" else body_and_cr
        assert line.body_bytes == len(body)
        assert line.head == body[:head_bytes]
        rebuilt += body + line.eol
    assert rebuilt == data


def test_valid_utf8_decodes_without_repairs() -> None:
    assert decode_counting("中文 😀\n".encode()) == ("中文 😀\n", ())


def test_bad_bytes_become_replacement_characters_and_are_located() -> None:
    data = b"ok\xff\xfe" + "é".encode() + b"\xf0\x9f\x98" + b"!" + "\ufffd".encode()
    text, bad = decode_counting(data)
    assert text == data.decode("utf-8", "replace")
    # A genuine U+FFFD in the file is not a repair.
    assert bad == ((2, 1), (3, 1), (5, 3))


def test_page_stops_at_the_line_limit() -> None:
    page = page_of(b"a\nb\nc\n", max_lines=2)
    assert page == Page("a\nb\n", 2, 4, 0, 0, "limit")


def test_page_stops_before_the_line_that_breaks_the_byte_budget() -> None:
    data = b"12345\n" * 10
    page = page_of(data, max_bytes=20)
    assert page == Page("12345\n" * 3, 3, 18, 0, 0, "budget")


def test_page_takes_all_lines_and_says_eof() -> None:
    assert page_of(b"a\r\nb") == Page("a\r\nb", 2, 4, 0, 0, "eof")


def test_long_lines_are_clipped_by_characters_with_their_ending_kept() -> None:
    data = ("é" * 30).encode() + b"\r\n" + b"x" * 5 + b"\n" + ("😀" * 11).encode()
    page = page_of(data, max_line_chars=10)
    assert page == Page("é" * 10 + "\r\n" + "xxxxx\n" + "😀" * 10, 3, len(data), 2, 0, "eof")


def test_replaced_bytes_are_counted_only_in_what_is_shown() -> None:
    data = b"\xff" * 3 + b"a" * 20 + b"\xfe" * 4 + b"\n"
    page = page_of(data, max_line_chars=10)
    assert page == Page("\ufffd" * 3 + "a" * 7 + "\n", 1, len(data), 1, 3, "eof")


def test_a_single_line_bigger_than_the_budget_is_cut_char_safe_never_empty() -> None:
    data = ("中" * 100).encode() + b"\n"
    page = page_of(data, max_bytes=32, max_line_chars=100)
    assert page == Page("中" * 10 + "\n", 1, len(data), 1, 0, "eof")


def test_the_head_always_holds_enough_characters_to_clip() -> None:
    # Every character 4 bytes: the head still yields max_line_chars of them.
    data = ("😀" * 50).encode()
    page = page_of(data, max_line_chars=10)
    assert page.text == "😀" * 10
    assert page.clipped_lines == 1


NOTICE = {"limit_lines": 2000, "max_bytes": 48 * 1024, "max_line_chars": 2000}


def test_notice_names_the_next_offset_and_the_budget_that_stopped() -> None:
    page = Page("x", 490, 49000, 0, 0, "budget")
    notice = window_notice(offset=1000, page=page, reached_eof=False, total_lines=None, **NOTICE)
    assert notice == (
        "Showing lines 1001-1490; stopped at the 48KB budget. "
        "The file continues: call Read with offset 1490 for the next lines."
    )


def test_notice_names_the_line_limit_clips_and_replacements() -> None:
    page = Page("x", 1, 3, 1, 2, "limit")
    notice = window_notice(
        offset=0, page=page, reached_eof=False, total_lines=None, **{**NOTICE, "limit_lines": 1}
    )
    assert notice == (
        "Showing line 1; stopped at the 1-line limit. "
        "The file continues: call Read with offset 1 for the next lines. "
        "1 line longer than 2000 characters was clipped to 2000. "
        "2 bytes of invalid UTF-8 were replaced with U+FFFD."
    )


def test_a_clean_end_of_file_needs_no_notice() -> None:
    page = Page("a\n", 1, 2, 0, 0, "eof")
    assert window_notice(offset=0, page=page, reached_eof=True, total_lines=1, **NOTICE) is None


def test_an_end_of_file_with_clipped_lines_says_so() -> None:
    page = Page("a\n", 3, 9000, 2, 0, "eof")
    notice = window_notice(offset=7, page=page, reached_eof=True, total_lines=10, **NOTICE)
    assert notice == (
        "Showing lines 8-10 of 10 (end of file). "
        "2 lines longer than 2000 characters were clipped to 2000."
    )


def test_past_the_end_the_notice_says_how_many_lines_there_are() -> None:
    page = Page("", 0, 0, 0, 0, "eof")
    notice = window_notice(offset=9000, page=page, reached_eof=True, total_lines=5000, **NOTICE)
    assert notice == (
        "offset 9000 is past the end: the file has 5000 lines. "
        "Use an offset below 5000 (the last 2000 lines start at offset 3000)."
    )
    empty = window_notice(offset=3, page=page, reached_eof=True, total_lines=0, **NOTICE)
    assert empty == "offset 3 is past the end: the file is empty (0 lines)."


@settings(max_examples=300, deadline=None)
@given(
    data=st.binary(max_size=400).map(
        lambda b: b.replace(b"a", b"\n").replace(b"b", b"\r").replace(b"c", b"x" * 9)
    ),
    cut=st.integers(0, 400),
    max_lines=st.integers(1, 30),
    max_bytes=st.integers(8, 200),
    max_line_chars=st.integers(2, 40),
)
def test_the_quick_page_is_the_line_by_line_page_whenever_it_applies(
    data: bytes, cut: int, max_lines: int, max_bytes: int, max_line_chars: int
) -> None:
    limits = {"max_lines": max_lines, "max_bytes": max_bytes, "max_line_chars": max_line_chars}
    quick = quick_page(data[:cut], at_eof=cut >= len(data), **limits)
    if quick is not None:
        assert quick == page_of(data, **limits)


def test_the_quick_page_applies_to_plain_text() -> None:
    data = b"".join(b"line %d\r\n" % i for i in range(5000))
    limits = {"max_lines": 2000, "max_bytes": 48 * 1024, "max_line_chars": 2000}
    assert quick_page(data[:60_000], at_eof=False, **limits) == page_of(data, **limits)
    assert quick_page(data[:40], at_eof=True, **limits) == page_of(data[:40], **limits)
