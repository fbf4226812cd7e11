"""An update's chunks on a file's bytes: graded matching, line endings, refusals with repair data.

Many cases follow Codex CLI's apply-patch tests (src/lib.rs, seek_sequence.rs,
tests/suite/tool.rs and the scenario fixtures), run here on bytes alone.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from toolbound.edit.patch import (
    Chunk,
    FilePatched,
    HunkReport,
    UpdateFile,
    apply_chunks,
    parse_patch,
)
from toolbound.results import ErrorCode, ToolError


def chunks_of(body: str) -> tuple[Chunk, ...]:
    (update,) = parse_patch(f"*** Begin Patch\n*** Update File: f.txt\n{body}\n*** End Patch")
    assert isinstance(update, UpdateFile)
    return update.chunks


def patched(data: bytes, body: str) -> FilePatched:
    return apply_chunks(data, chunks_of(body), shown="f.txt")


def refused(data: bytes, body: str) -> ToolError:
    with pytest.raises(ToolError) as caught:
        patched(data, body)
    return caught.value


def test_a_chunk_replaces_its_lines_and_reports_an_exact_match() -> None:
    result = patched(b"foo\nbar\n", "@@\n foo\n-bar\n+baz")
    assert result == FilePatched(b"foo\nbaz\n", (HunkReport("exact", 1),))


def test_several_chunks_apply_in_order() -> None:
    result = patched(b"foo\nbar\nbaz\nqux\n", "@@\n foo\n-bar\n+BAR\n@@\n baz\n-qux\n+QUX")
    assert result.text == b"foo\nBAR\nbaz\nQUX\n"
    assert result.hunks == (HunkReport("exact", 1), HunkReport("exact", 3))


def test_chunks_without_context_each_replace_their_line() -> None:
    data = b"line1\nline2\nline3\nline4\n"
    result = patched(data, "@@\n-line2\n+changed2\n@@\n-line4\n+changed4")
    assert result.text == b"line1\nchanged2\nline3\nchanged4\n"


def test_interleaved_changes_and_an_append_at_end_of_file() -> None:
    body = "@@\n a\n-b\n+B\n@@\n c\n d\n-e\n+E\n@@\n f\n+g\n*** End of File"
    assert patched(b"a\nb\nc\nd\ne\nf\n", body).text == b"a\nB\nc\nd\nE\nf\ng\n"


def test_a_pure_addition_without_context_goes_to_the_end() -> None:
    result = patched(b"line1\nline2\n", "@@\n+added line 1\n+added line 2")
    assert result == FilePatched(
        b"line1\nline2\nadded line 1\nadded line 2\n", (HunkReport("exact", 3),)
    )


def test_a_pure_addition_before_a_removal_still_goes_to_the_end() -> None:
    body = "@@\n+after-context\n+second-line\n@@\n line1\n-line2\n-line3\n+line2-replacement"
    result = patched(b"line1\nline2\nline3\n", body)
    assert result.text == b"line1\nline2-replacement\nafter-context\nsecond-line\n"


def test_a_pure_addition_after_an_at_at_line_goes_right_after_it() -> None:
    body = "@@ def f():\n+    '''Doc.'''"
    result = patched(b"x = 1\ndef f():\n    return 1\n", body)
    assert result == FilePatched(
        b"x = 1\ndef f():\n    '''Doc.'''\n    return 1\n", (HunkReport("exact", 3),)
    )


def test_crlf_lines_stay_crlf_and_added_lines_get_crlf() -> None:
    result = patched(b"a\r\nb\r\nc\r\n", "@@\n a\n-b\n+B\n@@\n c\n+d\n*** End of File")
    assert result.text == b"a\r\nB\r\nc\r\nd\r\n"


def test_a_carriage_return_inside_a_crlf_line_is_kept() -> None:
    result = patched(b"foo\r\r\nbar\r\n", "@@\n+BAZ\n*** End of File")
    assert result.text == b"foo\r\r\nbar\r\nBAZ\r\n"


def test_an_added_empty_line_in_a_crlf_file_is_crlf() -> None:
    body = "@@\n-one\n+uno\n@@\n two\n+\n+between\n three"
    assert (
        patched(b"one\r\ntwo\r\nthree\r\n", body).text == b"uno\r\ntwo\r\n\r\nbetween\r\nthree\r\n"
    )


def test_removed_and_added_repeated_lines_keep_their_order() -> None:
    assert patched(b"a\nb\n", "@@\n-a\n-b\n+b\n+b\n+a").text == b"b\nb\na\n"


def test_a_context_line_keeps_its_own_line_ending() -> None:
    assert patched(b"same\r\nsame\n", "@@\n-same\n same").text == b"same\n"


def test_untouched_lines_of_mixed_endings_keep_theirs() -> None:
    body = "@@\n one\n two\n-three\n+THREE\n four"
    result = patched(b"one\r\ntwo\nthree\r\nfour\n", body)
    assert result.text == b"one\r\ntwo\nTHREE\r\nfour\n"


def test_a_changed_file_gets_a_final_line_ending_in_its_style() -> None:
    assert patched(b"one\r\ntwo", "@@\n-one\n+ONE").text == b"ONE\r\ntwo\r\n"
    body = "@@\n-no newline at end\n+first line\n+second line"
    assert patched(b"no newline at end", body).text == b"first line\nsecond line\n"


def test_replacing_the_first_and_the_last_line() -> None:
    assert patched(b"foo\nbar\nbaz\n", "@@\n-foo\n+FOO\n bar").text == b"FOO\nbar\nbaz\n"
    result = patched(b"foo\nbar\nbaz\n", "@@\n foo\n bar\n-baz\n+BAZ")
    assert result.text == b"foo\nbar\nBAZ\n"


def test_a_deletion_only_chunk_removes_its_lines() -> None:
    body = "@@\n line1\n-line2\n line3"
    assert patched(b"line1\nline2\nline3\n", body).text == b"line1\nline3\n"


def test_end_of_file_anchors_the_chunk_at_the_end() -> None:
    data = b"first\nsecond\nmiddle\nfirst\nsecond\n"
    result = patched(data, "@@\n first\n-second\n+second updated\n*** End of File")
    assert result == FilePatched(
        b"first\nsecond\nmiddle\nfirst\nsecond updated\n", (HunkReport("exact", 4),)
    )


def test_unicode_lines_match_and_change() -> None:
    data = "line1\nnaïve café\nline3\n".encode()
    result = patched(data, "@@\n line1\n-naïve café\n+naïve café ✅")
    assert result.text == "line1\nnaïve café ✅\nline3\n".encode()


def test_trailing_whitespace_in_the_file_is_the_second_grade() -> None:
    result = patched(b"foo   \nbar\t\t\n", "@@\n-foo\n+FOO\n bar")
    assert result == FilePatched(b"FOO\nbar\t\t\n", (HunkReport("trailing-space", 1),))


def test_other_indentation_is_the_third_grade() -> None:
    result = patched(b"    foo   \n   bar\t\n", "@@\n-foo\n+FOO\n bar")
    assert result == FilePatched(b"FOO\n   bar\t\n", (HunkReport("whitespace", 1),))


def test_the_strictest_grade_that_matches_decides_even_if_a_laxer_one_matches_earlier() -> None:
    result = patched(b"  x\nx\n", "@@\n-x\n+y")
    assert result == FilePatched(b"  x\ny\n", (HunkReport("exact", 2),))


def test_at_at_lines_match_with_grades_too() -> None:
    data = b"class A:\n  def f(self):\n    return 1\nclass B:\n  def f(self):\n    return 1\n"
    result = patched(data, "@@ class B:\n@@ def f(self):\n-    return 1\n+    return 2")
    assert result == FilePatched(
        b"class A:\n  def f(self):\n    return 1\nclass B:\n  def f(self):\n    return 2\n",
        (HunkReport("exact", 6),),
    )


def test_a_bom_is_kept_and_not_part_of_the_first_line() -> None:
    result = patched(b"\xef\xbb\xbffoo\nbar\n", "@@\n-foo\n+FOO")
    assert result == FilePatched(b"\xef\xbb\xbfFOO\nbar\n", (HunkReport("exact", 1),))


def test_bytes_that_are_not_utf8_outside_the_change_are_kept() -> None:
    result = patched(b"\xff\xfe latin\nfoo\n\x80\n", "@@\n-foo\n+bar")
    assert result.text == b"\xff\xfe latin\nbar\n\x80\n"


def test_a_trailing_empty_context_line_may_stand_for_the_final_newline() -> None:
    assert patched(b"foo\nbar\n", "@@\n foo\n-bar\n+BAR\n \n").text == b"foo\nBAR\n"


def test_a_chunk_is_found_by_its_rarest_line_among_repeated_context() -> None:
    data = b"}\n}\nkeep\n}\n}\nold\n}\n"
    result = patched(data, "@@\n }\n }\n-old\n+new\n }")
    assert result == FilePatched(b"}\n}\nkeep\n}\n}\nnew\n}\n", (HunkReport("exact", 4),))
    # Its rarest line alone is not enough: the lines around it must match too.
    assert refused(data, "@@\n keep\n-old\n+new").code == ErrorCode.NO_MATCH


def test_a_later_chunk_is_not_matched_before_the_earlier_one() -> None:
    data = b"b\na\nb\n"
    result = patched(data, "@@\n-a\n+A\n@@\n-b\n+B")
    assert result == FilePatched(b"b\nA\nB\n", (HunkReport("exact", 2), HunkReport("exact", 3)))


def test_a_chunk_longer_than_the_file_is_no_match() -> None:
    assert refused(b"just one line\n", "@@\n-too\n-many\n-lines").code == ErrorCode.NO_MATCH


def test_a_chunk_found_nowhere_names_the_chunk_and_the_nearest_lines() -> None:
    data = b"def f():\n    x = 1\n    return x + 1\n\nprint(f())\n"
    err = refused(data, "@@\n def f():\n     x = 1\n-    return x\n+    return x * 2")
    assert err.code == ErrorCode.NO_MATCH
    assert err.message == (
        "Chunk 1 of the update of f.txt (patch line 3) was not found: these lines are not "
        "in f.txt, not even ignoring whitespace:\n"
        "   def f():\n"
        "       x = 1\n"
        "  -    return x\n"
        "The nearest lines of f.txt are 1-4:\n"
        "  1| def f():\n"
        "  2|     x = 1\n"
        "  3|     return x + 1\n"
        "  4| \n"
        "Nothing was changed. Read those lines of the file, then make the chunk's ' ' and "
        "'-' lines match them exactly."
    )


def test_no_match_finds_the_most_similar_line_when_no_line_is_equal() -> None:
    data = b"".join(b"filler %d\n" % i for i in range(50)) + b"total = compute(a, b)\n"
    err = refused(data, "@@\n-total = compute(a, c)\n+total = 0")
    assert err.message.endswith(
        "The nearest lines of f.txt are 50-51:\n"
        "  50| filler 49\n"
        "  51| total = compute(a, b)\n"
        "Nothing was changed. Read those lines of the file, then make the chunk's ' ' and "
        "'-' lines match them exactly."
    )


def test_no_match_says_so_when_nothing_is_alike() -> None:
    err = refused(b"aaa\nbbb\n", "@@\n-zzzzzzzz qqqqq\n+x")
    assert "\nNo line of f.txt is like them; check the file's path and Read it.\n" in err.message


def test_a_missing_at_at_line_is_no_match_naming_it() -> None:
    err = refused(b"def f():\n    return 1\n", "@@ def g():\n-    return 1\n+    return 2")
    assert err.code == ErrorCode.NO_MATCH
    assert err.message.startswith(
        "Chunk 1 of the update of f.txt (patch line 3) names '@@ def g():', but no such line "
        "is in f.txt anywhere, not even ignoring whitespace.\nThe nearest lines of f.txt are "
        "1-2:\n  1| def f():\n  2|     return 1\nNothing was changed."
    )


def test_a_chunk_matching_twice_without_an_at_at_line_is_ambiguous_with_its_lines() -> None:
    data = b"if a:\n    go()\nif b:\n    go()\n"
    err = refused(data, "@@\n-    go()\n+    stop()")
    assert err.code == ErrorCode.AMBIGUOUS_MATCH
    assert err.message == (
        "Chunk 1 of the update of f.txt (patch line 3) matches 2 places, at lines 2, 4. "
        "Nothing was changed. Add an '@@' line naming the class or function it is in, or "
        "more context lines, so that it matches one place."
    )


def test_an_at_at_line_decides_between_places() -> None:
    data = b"if a:\n    go()\nif b:\n    go()\n"
    result = patched(data, "@@ if b:\n-    go()\n+    stop()")
    assert result == FilePatched(b"if a:\n    go()\nif b:\n    stop()\n", (HunkReport("exact", 4),))


def test_a_patch_applied_twice_says_already_applied_and_changes_nothing() -> None:
    body = "@@\n foo\n-bar\n+BAR\n@@\n baz\n-qux\n+QUX"
    once = patched(b"foo\nbar\nbaz\nqux\n", body)
    twice = patched(once.text, body)
    assert twice == FilePatched(
        once.text,
        (
            HunkReport("exact", 1, already_applied=True),
            HunkReport("exact", 3, already_applied=True),
        ),
    )
    assert twice.already_applied


def test_an_addition_in_a_patch_applied_twice_is_not_added_again() -> None:
    body = "@@\n-a\n+A\n@@\n+tail"
    once = patched(b"a\nb\n", body)
    assert once.text == b"A\nb\ntail\n"
    twice = patched(once.text, body)
    assert twice.text == once.text
    assert twice.already_applied


def test_one_chunk_already_applied_and_one_not_applies_the_other() -> None:
    result = patched(b"A\nb\n", "@@\n-a\n+A\n@@\n-b\n+B")
    assert result == FilePatched(
        b"A\nB\n", (HunkReport("exact", 1, already_applied=True), HunkReport("exact", 2))
    )


def test_typographic_dashes_are_not_matched_by_ascii_ones() -> None:
    # Codex matches them in a fourth pass; our grades stop at whitespace, and the
    # refusal shows the line as the file has it.
    data = "import asyncio  # local import \u2013 avoids top\u2011level dep\n".encode()
    err = refused(data, "@@\n-import asyncio  # local import - avoids top-level dep\n+x")
    assert err.code == ErrorCode.NO_MATCH
    assert "\n  1| import asyncio  # local import \u2013 avoids top\u2011level dep\n" in err.message


_WORDS = st.lists(st.integers(0, 10**6), min_size=1, max_size=30, unique=True)


@given(
    lines=_WORDS,
    data=st.data(),
    crlf=st.booleans(),
)
def test_applying_a_patch_then_its_reverse_gives_the_file_back(
    lines: list[int], data: st.DataObject, crlf: bool
) -> None:
    ending = b"\r\n" if crlf else b"\n"
    original = b"".join(b"line %d" % n + ending for n in lines)
    start = data.draw(st.integers(0, len(lines) - 1))
    stop = data.draw(st.integers(start, len(lines)))
    before = data.draw(st.integers(0, 2))
    after = data.draw(st.integers(0, 2))
    added = data.draw(st.lists(st.integers(10**6 + 1, 2 * 10**6), max_size=4, unique=True))
    assume(stop > start or added)
    lo, hi = max(0, start - before), min(len(lines), stop + after)
    tagged = [f" line {n}" for n in lines[lo:start]]
    tagged += [f"-line {n}" for n in lines[start:stop]]
    tagged += [f"+new {n}" for n in added]
    tagged += [f" line {n}" for n in lines[stop:hi]]
    # Without a context line the reverse of a pure deletion could go anywhere.
    assume(any(line.startswith(" ") for line in tagged))
    forward = "@@\n" + "\n".join(tagged)
    reverse = "@@\n" + "\n".join(
        {"-": "+", "+": "-"}.get(line[0], line[0]) + line[1:] for line in tagged
    )
    changed = patched(original, forward)
    assert changed.hunks == (HunkReport("exact", lo + 1),)
    back = patched(changed.text, reverse)
    assert back.text == original
