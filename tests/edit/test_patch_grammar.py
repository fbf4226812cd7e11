"""Codex's apply_patch grammar: the operations it parses to, its leniency, its refusals by line.

The cases follow Codex CLI's own parser tests (codex-rs/apply-patch/src/parser.rs
and the scenario fixtures), written here for our parser.
"""

from __future__ import annotations

import pytest

from toolbound.edit.patch import (
    AddFile,
    Chunk,
    DeleteFile,
    PatchSyntaxError,
    UpdateFile,
    parse_patch,
)
from toolbound.results import ErrorCode


def refusal(text: str) -> PatchSyntaxError:
    with pytest.raises(PatchSyntaxError) as caught:
        parse_patch(text)
    return caught.value


def test_a_patch_not_starting_with_begin_patch_is_refused_at_line_1() -> None:
    err = refusal("bad")
    assert err.code == ErrorCode.INVALID_ARGUMENT
    assert (err.line, err.problem) == (1, "the first line of the patch must be '*** Begin Patch'")
    assert err.message == (
        "The patch is not valid at line 1: the first line of the patch must be "
        "'*** Begin Patch'. Fix that line and send the whole patch again; no file was changed."
    )


def test_a_patch_not_ending_with_end_patch_is_refused_at_its_last_line() -> None:
    err = refusal("*** Begin Patch\nbad")
    assert (err.line, err.problem) == (2, "the last line of the patch must be '*** End Patch'")


def test_an_empty_patch_parses_to_no_operation() -> None:
    assert parse_patch("*** Begin Patch\n*** End Patch") == ()


def test_markers_padded_with_spaces_are_read() -> None:
    text = "*** Begin Patch \n*** Add File: foo\n+hi\n *** End Patch"
    assert parse_patch(text) == (AddFile("foo", ("hi",), 2),)
    assert parse_patch(" *** Begin Patch\n*** Delete File: x\n*** End Patch \n") == (
        DeleteFile("x", 2),
    )


def test_a_padded_file_header_is_read() -> None:
    text = "*** Begin Patch\n  *** Update File: foo.txt\n@@\n-old\n+new\n*** End Patch\n"
    assert parse_patch(text) == (
        UpdateFile("foo.txt", None, (Chunk((), (("-", "old"), ("+", "new")), False, 3),), 2),
    )


def test_an_update_without_chunks_is_refused_at_its_header() -> None:
    err = refusal("*** Begin Patch\n*** Update File: test.py\n*** End Patch")
    assert err.line == 2
    assert err.problem == ("the update of test.py is empty; give its chunks ('@@' then the lines)")


def test_add_delete_and_update_with_a_move_parse_in_order() -> None:
    text = (
        "*** Begin Patch\n"
        "*** Add File: path/add.py\n"
        "+abc\n"
        "+def\n"
        "*** Delete File: path/delete.py\n"
        "*** Update File: path/update.py\n"
        "*** Move to: path/update2.py\n"
        "@@ def f():\n"
        "-    pass\n"
        "+    return 123\n"
        "*** End Patch"
    )
    assert parse_patch(text) == (
        AddFile("path/add.py", ("abc", "def"), 2),
        DeleteFile("path/delete.py", 5),
        UpdateFile(
            "path/update.py",
            "path/update2.py",
            (Chunk(("def f():",), (("-", "    pass"), ("+", "    return 123")), False, 8),),
            6,
        ),
    )
    add = parse_patch(text)[0]
    assert isinstance(add, AddFile)
    assert add.content == "abc\ndef\n"


def test_an_update_ends_where_the_next_operation_starts() -> None:
    text = (
        "*** Begin Patch\n*** Update File: file.py\n@@\n+line\n"
        "*** Add File: other.py\n+content\n*** End Patch"
    )
    assert parse_patch(text) == (
        UpdateFile("file.py", None, (Chunk((), (("+", "line"),), False, 3),), 2),
        AddFile("other.py", ("content",), 5),
    )


def test_the_first_chunk_may_leave_out_its_at_at_line() -> None:
    text = "*** Begin Patch\n*** Update File: file2.py\n import foo\n+bar\n*** End Patch"
    (update,) = parse_patch(text)
    assert update == UpdateFile(
        "file2.py", None, (Chunk((), ((" ", "import foo"), ("+", "bar")), False, 3),), 2
    )
    assert isinstance(update, UpdateFile)
    assert update.chunks[0].old == ("import foo",)
    assert update.chunks[0].new == ("import foo", "bar")


@pytest.mark.parametrize("opening", ["<<EOF", "<<'EOF'", '<<"EOF"', "apply_patch <<'PATCH'"])
def test_a_patch_wrapped_in_a_heredoc_is_unwrapped(opening: str) -> None:
    closing = "PATCH" if "PATCH" in opening else "EOF"
    inner = "*** Begin Patch\n*** Update File: file2.py\n import foo\n+bar\n*** End Patch"
    # Line numbers count the heredoc's opening line too.
    assert parse_patch(f"{opening}\n{inner}\n{closing}\n") == (
        UpdateFile(
            "file2.py", None, (Chunk((), ((" ", "import foo"), ("+", "bar")), False, 4),), 3
        ),
    )


def test_a_heredoc_with_mismatched_quotes_is_not_unwrapped() -> None:
    text = "<<\"EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n"
    assert refusal(text).problem == "the first line of the patch must be '*** Begin Patch'"


def test_a_heredoc_without_end_patch_is_refused_for_the_missing_end() -> None:
    err = refusal("<<EOF\n*** Begin Patch\n*** Update File: file2.py\nEOF\n")
    assert (err.line, err.problem) == (3, "the last line of the patch must be '*** End Patch'")


def test_a_patch_in_a_code_fence_is_unwrapped() -> None:
    text = "```\n*** Begin Patch\n*** Delete File: a\n*** End Patch\n```"
    assert parse_patch(text) == (DeleteFile("a", 3),)


def test_an_unknown_operation_is_refused_naming_the_valid_headers() -> None:
    err = refusal("*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch")
    assert err.line == 2
    assert err.problem == (
        "'*** Frobnicate File: foo' is not a file operation; each starts with one of "
        "'*** Add File: path', '*** Delete File: path', '*** Update File: path'"
    )


def test_a_line_that_is_not_a_chunk_line_is_refused_with_its_number() -> None:
    err = refusal("*** Begin Patch\n*** Update File: a.py\n@@\nbad\n*** End Patch")
    assert err.line == 4
    assert err.problem == (
        "unexpected line 'bad' in the update of a.py: every line of a chunk starts with "
        "' ' (context), '-' (removed) or '+' (added)"
    )


def test_an_unprefixed_line_after_a_chunk_is_refused_with_its_number() -> None:
    err = refusal("*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\nbad\n*** End Patch")
    assert err.line == 6
    assert err.problem == (
        "'bad' in the update of a.py starts neither with '@@' (a new chunk) nor with "
        "' ' (context), '-' (removed) or '+' (added)"
    )


def test_a_chunk_without_lines_is_refused() -> None:
    err = refusal("*** Begin Patch\n*** Update File: a.py\n@@\n*** End Patch")
    assert err.line == 3
    assert err.problem == (
        "a chunk in the update of a.py has no lines; give its ' ', '-' and '+' lines"
    )


def test_end_of_file_right_after_the_at_at_line_is_refused() -> None:
    err = refusal("*** Begin Patch\n*** Update File: a.py\n@@\n*** End of File\n*** End Patch")
    assert (err.line, err.problem) == (4, "'*** End of File' ends a chunk with no lines")


def test_an_empty_line_inside_a_chunk_is_an_empty_context_line() -> None:
    text = (
        "*** Begin Patch\n*** Update File: a.py\n@@ change_context\n\n context\n-remove\n"
        "+add\n context2\n*** End Patch"
    )
    (update,) = parse_patch(text)
    assert isinstance(update, UpdateFile)
    (chunk,) = update.chunks
    assert chunk.contexts == ("change_context",)
    assert chunk.old == ("", "context", "remove", "context2")
    assert chunk.new == ("", "context", "add", "context2")


def test_end_of_file_marks_the_chunk() -> None:
    text = "*** Begin Patch\n*** Update File: a\n@@\n+line\n*** End of File\n*** End Patch"
    assert parse_patch(text) == (UpdateFile("a", None, (Chunk((), (("+", "line"),), True, 3),), 2),)


def test_several_chunks_separated_by_blank_lines_and_empty_lines_at_a_chunk_end_dropped() -> None:
    text = (
        "*** Begin Patch\n*** Update File: m.txt\n@@\n foo\n-bar\n+BAR\n\n\n"
        "@@\n baz\n-qux\n+QUX\n\n*** End Patch"
    )
    assert parse_patch(text) == (
        UpdateFile(
            "m.txt",
            None,
            (
                Chunk((), ((" ", "foo"), ("-", "bar"), ("+", "BAR")), False, 3),
                Chunk((), ((" ", "baz"), ("-", "qux"), ("+", "QUX")), False, 9),
            ),
            2,
        ),
    )


def test_several_at_at_lines_narrow_one_chunk() -> None:
    text = (
        "*** Begin Patch\n*** Update File: a.py\n@@ class Base\n@@     def method(self):\n"
        "-        return 1\n+        return 2\n*** End Patch"
    )
    (update,) = parse_patch(text)
    assert isinstance(update, UpdateFile)
    assert update.chunks[0].contexts == ("class Base", "def method(self):")


def test_a_unified_diff_header_keeps_only_its_context() -> None:
    text = (
        "*** Begin Patch\n*** Update File: a.py\n@@ -12,5 +12,6 @@ def f():\n-x\n+y\n"
        "@@ -30 +31 @@\n-z\n+w\n*** End Patch"
    )
    (update,) = parse_patch(text)
    assert isinstance(update, UpdateFile)
    assert [chunk.contexts for chunk in update.chunks] == [("def f():",), ()]


def test_a_move_without_chunks_is_a_rename() -> None:
    text = "*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n*** End Patch"
    assert parse_patch(text) == (UpdateFile("a.py", "b.py", (), 2),)


def test_crlf_line_ends_and_blank_lines_around_the_patch_are_read_and_counted() -> None:
    text = "\r\n\r\n*** Begin Patch\r\n*** Update File: a\r\n@@\r\nbad\r\n*** End Patch\r\n"
    assert refusal(text).line == 6


def test_an_operation_without_a_path_is_refused() -> None:
    err = refusal("*** Begin Patch\n*** Delete File:\n*** End Patch")
    assert (err.line, err.problem) == (2, "'*** Delete File:' names no file; give its path")


def test_an_add_file_without_lines_is_an_empty_file() -> None:
    text = "*** Begin Patch\n*** Add File: empty.txt\n*** End Patch"
    (add,) = parse_patch(text)
    assert isinstance(add, AddFile)
    assert add.content == ""


def test_an_empty_line_between_added_lines_is_an_empty_line_of_the_file() -> None:
    text = (
        "*** Begin Patch\n*** Add File: a.py\n+x = 1\n\n+y = 2\n\n*** Delete File: b\n*** End Patch"
    )
    assert parse_patch(text) == (AddFile("a.py", ("x = 1", "", "y = 2"), 2), DeleteFile("b", 7))
