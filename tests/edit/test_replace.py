"""Edit's replacement rules on bytes: exact, unique unless replaceAll, CRLF and BOM kept."""

from __future__ import annotations

import pytest

from toolbound.edit.replace import EditPlan, EditsApplied, EditSpec, apply_edits, plan_edit
from toolbound.results import ErrorCode, ToolError


def apply(buf: bytes, plan: EditPlan) -> bytes:
    return b"".join(bytes(piece) for piece in plan.pieces(buf))


def edit(buf: bytes, old: str, new: str, *, replace_all: bool = False) -> bytes:
    return apply(buf, plan_edit(buf, old, new, replace_all=replace_all, shown="f.py"))


def error_of(buf: bytes, old: str, new: str = "X", *, replace_all: bool = False) -> ToolError:
    with pytest.raises(ToolError) as caught:
        plan_edit(buf, old, new, replace_all=replace_all, shown="f.py")
    return caught.value


def test_a_unique_occurrence_is_replaced_and_nothing_else_changes() -> None:
    buf = b"a = 1\nb = 2\n\xff latin byte kept\n"
    assert edit(buf, "b = 2", "b = 3") == b"a = 1\nb = 3\n\xff latin byte kept\n"


def test_no_occurrence_is_no_match_naming_the_next_step() -> None:
    err = error_of(b"def f():\n    return 1\n", "def g():")
    assert err.code == ErrorCode.NO_MATCH
    assert err.message == (
        "oldString was not found in f.py. Read the file again and copy the text exactly, "
        "including indentation and line endings (Read's content is the file's own text)."
    )


def test_no_match_points_at_the_line_where_a_multiline_old_string_starts_to_differ() -> None:
    err = error_of(b"x\ndef f():\n    return 1\n", "def f():\n  return 1")
    assert err.message.endswith(" Its first line occurs at line 2; the text differs after it.")


def test_no_match_names_other_indentation() -> None:
    err = error_of(b"if x:\n    y = 1\n", "  y = 1  ")
    assert err.message.endswith(
        " It occurs with other leading or trailing whitespace: check the indentation."
    )


def test_two_occurrences_are_ambiguous_with_the_count_and_line_numbers() -> None:
    buf = b"".join(b"x = %d\nfoo()\n" % i for i in range(7))
    err = error_of(buf, "foo()")
    assert err.code == ErrorCode.AMBIGUOUS_MATCH
    assert err.message == (
        "oldString occurs 7 times in f.py (at lines 2, 4, 6, 8, 10, …). Add surrounding "
        "lines to oldString to make it unique, or pass replaceAll: true to replace every "
        "occurrence."
    )


def test_overlapping_occurrences_are_ambiguous() -> None:
    err = error_of(b"start\naaa\n", "aa")
    assert err.message.startswith("oldString occurs 2 times in f.py (at lines 2, 2).")


def test_replace_all_replaces_every_occurrence() -> None:
    buf = b"foo foo\nfoo\n"
    plan = plan_edit(buf, "foo", "bar", replace_all=True, shown="f.py")
    assert (plan.replacements, apply(buf, plan)) == (3, b"bar bar\nbar\n")


def test_crlf_text_copied_from_read_matches_exactly() -> None:
    buf = b"one\r\ntwo\r\nthree\r\n"
    assert edit(buf, "one\r\ntwo", "1\r\n2") == b"1\r\n2\r\nthree\r\n"


def test_lf_old_string_matches_a_crlf_file_and_the_new_text_is_written_crlf() -> None:
    buf = b"one\r\ntwo\r\nthree\r\n"
    plan = plan_edit(buf, "one\ntwo\n", "1\n2\n2.5\n", replace_all=False, shown="f.py")
    assert plan.translated
    assert apply(buf, plan) == b"1\r\n2\r\n2.5\r\nthree\r\n"


def test_new_lines_inserted_into_a_crlf_file_are_crlf_even_when_matched_exactly() -> None:
    assert edit(b"a\r\nb\r\n", "b", "b\nc") == b"a\r\nb\r\nc\r\n"


def test_a_mixed_file_is_matched_exactly_only() -> None:
    buf = b"one\r\ntwo\nthree\r\n"
    assert error_of(buf, "one\ntwo").code == ErrorCode.NO_MATCH
    assert edit(buf, "two\nthree", "2\n3") == b"one\r\n2\n3\r\n"


def test_crlf_old_string_in_an_lf_file_is_no_match_saying_so() -> None:
    err = error_of(b"one\ntwo\n", "one\r\ntwo")
    assert err.message.endswith(" The file's lines end with \\n, but oldString has \\r\\n.")


def test_the_bom_stays_when_the_old_string_includes_it() -> None:
    buf = b"\xef\xbb\xbfimport os\n"
    assert edit(buf, "\ufeffimport os", "import sys") == b"\xef\xbb\xbfimport sys\n"
    assert edit(buf, "import os", "import re") == b"\xef\xbb\xbfimport re\n"


@pytest.mark.parametrize(("old", "new"), [("", "x"), ("same", "same"), ("same", "\ud800")])
def test_an_empty_or_unchanged_old_string_is_an_invalid_argument(old: str, new: str) -> None:
    with pytest.raises(ToolError) as caught:
        plan_edit(b"same\n", old, new, replace_all=False, shown="f.py")
    assert caught.value.code == ErrorCode.INVALID_ARGUMENT


# -- several edits in one call -----------------------------------------------------------


def test_several_edits_apply_in_order_each_to_the_text_the_earlier_ones_left() -> None:
    buf = b"a = 1\nb = 2\n"
    applied = apply_edits(
        buf,
        [EditSpec("a = 1", "a = 10"), EditSpec("a = 10\nb", "a = 10\nc"), EditSpec("2", "3")],
        shown="f.py",
    )
    assert applied == EditsApplied(b"a = 10\nc = 3\n", 3)


def test_replace_all_inside_several_edits_counts_every_replacement() -> None:
    applied = apply_edits(
        b"x x x\ny\n", [EditSpec("x", "z", replace_all=True), EditSpec("y", "w")], shown="f.py"
    )
    assert applied == EditsApplied(b"z z z\nw\n", 4)


def test_a_failing_edit_is_named_by_its_index_and_refuses_them_all() -> None:
    with pytest.raises(ToolError) as caught:
        apply_edits(b"a\nb\n", [EditSpec("a", "A"), EditSpec("c", "C")], shown="f.py")
    assert caught.value.code == ErrorCode.NO_MATCH
    assert caught.value.message == (
        "Edit 2 of 2 (edits[1]) failed (in the text edits[0..0] left): oldString was not "
        "found in f.py. Read the file again and copy the text exactly, including indentation "
        "and line endings (Read's content is the file's own text). No edit was made."
    )


def test_the_first_edit_failing_names_index_0_and_an_ambiguous_one_keeps_its_code() -> None:
    with pytest.raises(ToolError) as caught:
        apply_edits(b"a\na\n", [EditSpec("a", "b")], shown="f.py")
    assert caught.value.code == ErrorCode.AMBIGUOUS_MATCH
    assert caught.value.message.startswith("Edit 1 of 1 (edits[0]) failed: oldString occurs 2")


def test_several_edits_keep_crlf_and_a_bom() -> None:
    buf = b"\xef\xbb\xbfa\r\nb\r\n"
    applied = apply_edits(buf, [EditSpec("a\nb", "A\nB"), EditSpec("B", "B\nC")], shown="f")
    assert applied.text == b"\xef\xbb\xbfA\r\nB\r\nC\r\n"
