"""rg's content output read back: whole names, bounded windows, context marks (pure)."""

from __future__ import annotations

import io

from toolbound.search.matchlines import Record, match_window, read_counts, read_records


def test_a_short_line_is_whole() -> None:
    assert match_window(b"ab", b"cd", from_start=True, to_end=True, max_chars=10) == (
        "abcd",
        False,
        0,
    )


def test_an_early_match_keeps_the_lines_head() -> None:
    assert match_window(b"ab", b"c" * 20, from_start=True, to_end=True, max_chars=8) == (
        "abcccccc",
        True,
        0,
    )


def test_a_late_match_gets_a_quarter_of_the_window_before_it() -> None:
    text, clipped, left_out = match_window(
        b"x" * 100, b"MATCH" + b"y" * 100, from_start=True, to_end=True, max_chars=20
    )
    assert (text, clipped, left_out) == ("xxxxxMATCH" + "y" * 10, True, 95)


def test_a_match_near_the_end_fills_the_window_from_before() -> None:
    text, _, _ = match_window(b"x" * 100, b"END", from_start=True, to_end=True, max_chars=8)
    assert text == "xxxxxEND"


def test_cuts_fall_on_characters() -> None:
    e = "\u00e9".encode()
    # The kept bytes start and end inside a two-byte character.
    text, _, _ = match_window(
        e[1:] + e * 10, b"M" + e * 10 + e[:1], from_start=False, to_end=False, max_chars=8
    )
    assert text == "\u00e9\u00e9M" + "\u00e9" * 5


def test_records_keep_names_with_newlines_and_mark_context() -> None:
    out = b"".join(
        [
            b"./two\nlines.txt\x001-a\n",
            b"./two\nlines.txt\x002:3:a hit\n",
            b"./other\x005:1:hit\n",
        ]
    )
    paths = {b"./two\nlines.txt"}
    assert list(read_records(io.BytesIO(out), paths=paths, max_chars=100)) == [
        Record(b"./two\nlines.txt", 1, True, "a", False),
        Record(b"./two\nlines.txt", 2, False, "a hit", False),
    ]


def test_a_giant_line_is_read_in_pieces_around_its_match() -> None:
    line = b"x" * 1_000_000 + b"hit" + b"y" * 1_000_000
    out = io.BufferedReader(io.BytesIO(b"./f\x001:1000001:" + line + b"\n"))
    [record] = read_records(out, paths={b"./f"}, max_chars=20)
    # The window starts at the line's 999,996th character: its column.
    assert record == Record(b"./f", 1, False, "xxxxxhit" + "y" * 12, True, 999_996)


def test_a_window_column_counts_characters_not_bytes() -> None:
    line = "é".encode() * 500_000 + b"hit" + b"y" * 100
    out = io.BufferedReader(io.BytesIO(b"./f\x003:1000001:" + line + b"\n"))
    [record] = read_records(out, paths={b"./f"}, max_chars=20)
    assert record == Record(b"./f", 3, False, "ééééé" + "hit" + "y" * 12, True, 499_996)
    assert line.decode()[: record.column - 1 + 8] == "é" * 500_000 + "hit"


def test_counts_keep_names_with_newlines() -> None:
    out = io.BytesIO(b"./a\nb\x003\n./c\x001\n")
    assert list(read_counts(out, paths={b"./a\nb", b"./c"})) == [(b"./a\nb", 3), (b"./c", 1)]
