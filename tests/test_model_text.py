"""model_text: the one text the model reads for a result."""

from __future__ import annotations

from typing import Any

import pytest

from support import bash_result as bash
from toolbound import model_text


@pytest.mark.parametrize(
    ("result", "text"),
    [
        (
            bash(stdout="out\n", stderr="err\n", exitCode=2),
            "[exit status 2]\n<stdout>\nout\n</stdout>\n<stderr>\nerr\n</stderr>",
        ),
        (
            bash(stdout="no newline", stderr="tail"),
            "[exit status 0]\n<stdout>\nno newline</stdout>\n<stderr>\ntail</stderr>",
        ),
        (bash(stderr="only err\n", exitCode=1), "[exit status 1]\n<stderr>\nonly err\n</stderr>"),
        (bash(), "[exit status 0]"),
        (bash(exitCode=None, signal="SIGKILL"), "[killed by signal SIGKILL]"),
        (
            bash(
                stdout="partial\n",
                exitCode=None,
                signal="SIGTERM",
                timedOut=True,
                notice="The command timed out after 1 s and its whole process tree was stopped.",
            ),
            "[timed out]\n"
            "[The command timed out after 1 s and its whole process tree was stopped.]\n"
            "<stdout>\npartial\n</stdout>",
        ),
        (
            bash(exitCode=None, signal="SIGTERM", aborted=True, notice="The call was aborted."),
            "[aborted]\n[The call was aborted.]",
        ),
    ],
)
def test_bash_text_is_the_outcome_then_each_stream_under_its_label(
    result: dict[str, Any], text: str
) -> None:
    assert model_text("Bash", result) == text


def test_bash_markers_stand_in_the_text_verbatim() -> None:
    marker = "[truncated: kept the last 1 of 3 lines; limit 1 lines / 96KB. Narrow the request.]"
    result = bash(stderr=f"{marker}\nlast\n", truncated=True, exitCode=1)
    assert model_text("Bash", result) == f"[exit status 1]\n<stderr>\n{marker}\nlast\n</stderr>"


def read(content: str, **fields: Any) -> dict[str, Any]:
    base = {"path": "a.py", "root": "workspace", "content": content, "offset": 0}
    return {**base, "lineCount": content.count("\n"), "fileBytes": 9, "truncated": False, **fields}


@pytest.mark.parametrize(
    ("result", "text"),
    [
        (read("a\nb\n", totalLines=2), "a\nb\n"),
        (read("no end", totalLines=1), "no end"),
        (
            read("a\n", truncated=True, notice="More lines follow: call Read with offset 1."),
            "a\n[More lines follow: call Read with offset 1.]",
        ),
    ],
)
def test_read_text_is_the_content_then_the_notice(result: dict[str, Any], text: str) -> None:
    assert model_text("Read", result) == text


def test_glob_text_is_a_path_a_line_then_the_notice() -> None:
    result = {"matches": ["b.py", "a.py"], "count": 2, "truncated": True, "notice": "More."}
    assert model_text("Glob", result) == "b.py\na.py\n[More.]"
    assert model_text("Glob", {"matches": [], "count": 0, "truncated": False}) == (
        "No files matched."
    )


def test_grep_text_names_each_path_once_and_marks_context_lines() -> None:
    result = {
        "matches": [
            {"path": "new.py", "line": 3, "text": "before", "context": True},
            {"path": "new.py", "line": 4, "text": "hit"},
            {"path": "new.py", "line": 9, "text": "hit again"},
            {"path": "old.py", "line": 1, "text": "hit", "context": False},
        ],
        "count": 4,
        "files": 2,
        "truncated": True,
        "notice": "More: offset 4.",
    }
    assert model_text("Grep", result) == (
        "new.py\n3-before\n4:hit\n9:hit again\n\nold.py\n1:hit\n[More: offset 4.]"
    )


def test_grep_files_and_counts_are_one_line_each() -> None:
    files = {"files": ["b", "a"], "count": 2, "truncated": False}
    counts = {"counts": [{"path": "b", "count": 3}], "count": 1, "truncated": False}
    empty = {"matches": [], "count": 0, "files": 0, "truncated": False}
    assert model_text("Grep", files) == "b\na"
    assert model_text("Grep", counts) == "b:3"
    assert model_text("Grep", empty) == "No matches."


def test_an_error_is_its_code_and_message() -> None:
    result = {"error": {"code": "TOOL_NOT_FOUND", "message": "No such file; use Glob."}}
    assert model_text("Read", result) == "TOOL_NOT_FOUND: No such file; use Glob."


DIFF = "--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-old\n+new\n"


def change(**fields: Any) -> dict[str, Any]:
    return {"path": "src/a.py", "created": False, "diff": DIFF, "truncated": False, **fields}


@pytest.mark.parametrize(
    ("tool", "result", "text"),
    [
        ("Edit", change(replacements=1), f"Edited src/a.py: 1 replacement.\n{DIFF}"),
        (
            "Edit",
            change(replacements=3, truncated=True, notice="The diff was cut."),
            f"Edited src/a.py: 3 replacements.\n{DIFF}[The diff was cut.]",
        ),
        ("Write", change(bytes=123), f"Wrote src/a.py (123 bytes).\n{DIFF}"),
        (
            "Write",
            change(bytes=1, created=True, diff="--- /dev/null\n+++ b/src/a.py\n"),
            "Created src/a.py (1 byte).\n--- /dev/null\n+++ b/src/a.py\n",
        ),
        ("Write", change(bytes=0, diff=""), "Wrote src/a.py (0 bytes)."),
    ],
)
def test_edit_and_write_text_is_a_summary_then_the_diff_then_the_notice(
    tool: str, result: dict[str, Any], text: str
) -> None:
    assert model_text(tool, result) == text


@pytest.mark.parametrize("tool", ["Bash", "Read", "Grep", "Glob", "Edit", "Write", "Nope"])
def test_a_dict_of_another_shape_reads_as_its_json(tool: str) -> None:
    assert model_text(tool, {"x": 1}) == '{"x": 1}'
