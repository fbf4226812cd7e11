"""The text block of a tool result: what an MCP client hands the model."""

from __future__ import annotations

from typing import Any

import pytest

from toolbound.mcp_server import call_result, payload_text

ZERO = {"bytes": 0, "lines": 0}


def bash(**fields: Any) -> dict[str, Any]:
    result: dict[str, Any] = {
        "stdout": "",
        "stderr": "",
        "exitCode": 0,
        "signal": None,
        "timedOut": False,
        "aborted": False,
        "truncated": False,
        "spill": {},
        "omitted": {"stdout": ZERO, "stderr": ZERO},
        "totals": {"stdout": ZERO, "stderr": ZERO},
        "durationMs": 5,
    }
    return {**result, **fields}


@pytest.mark.parametrize(
    ("result", "text"),
    [
        (bash(stdout="out\n", stderr="err\n", exitCode=2), "out\nerr\n[exit status 2]"),
        (bash(stdout="no newline", stderr="tail"), "no newline\ntail\n[exit status 0]"),
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
            "partial\n[timed out]\n"
            "[The command timed out after 1 s and its whole process tree was stopped.]",
        ),
        (
            bash(exitCode=None, signal="SIGTERM", aborted=True, notice="The call was aborted."),
            "[aborted]\n[The call was aborted.]",
        ),
    ],
)
def test_bash_text_is_stdout_then_stderr_then_how_it_ended(
    result: dict[str, Any], text: str
) -> None:
    assert payload_text("Bash", result) == text


def test_bash_markers_stay_in_the_text() -> None:
    marker = "[truncated: kept the first 1 of 3 lines; limit 1 lines / 96KB.]"
    result = bash(stdout=f"a\n{marker}", stderr="", truncated=True)
    assert payload_text("Bash", result) == f"a\n{marker}\n[exit status 0]"


def test_read_text_is_the_content_then_the_notice_when_bounded() -> None:
    window = {"path": "a", "root": "workspace", "offset": 0, "lineCount": 2, "fileBytes": 99}
    whole = {**window, "content": "one\ntwo\n", "totalLines": 2, "truncated": False}
    cut = {**window, "content": "one\ntwo\n", "truncated": True, "notice": "Next offset: 2."}
    assert payload_text("Read", whole) == "one\ntwo\n"
    assert payload_text("Read", cut) == "one\ntwo\n[Next offset: 2.]"


def test_glob_text_is_one_path_a_line_then_the_notice() -> None:
    found = {"matches": ["b.py", "a.py"], "count": 2, "truncated": True, "notice": "Narrow it."}
    none = {"matches": [], "count": 0, "truncated": False}
    assert payload_text("Glob", found) == "b.py\na.py\n[Narrow it.]"
    assert payload_text("Glob", none) == "No files matched."


def test_grep_text_renders_each_output_mode() -> None:
    content = {
        "matches": [{"path": "a.py", "line": 3, "text": "def f():"}],
        "count": 1,
        "files": 1,
        "truncated": False,
    }
    files = {"files": ["a.py", "b.py"], "count": 2, "truncated": False}
    counts = {
        "counts": [{"path": "a.py", "count": 4}],
        "count": 1,
        "truncated": True,
        "notice": "Call again with offset 1.",
    }
    assert payload_text("Grep", content) == "a.py:3:def f():"
    assert payload_text("Grep", files) == "a.py\nb.py"
    assert payload_text("Grep", counts) == "a.py:4\n[Call again with offset 1.]"
    assert payload_text("Grep", {**files, "files": [], "count": 0}) == "No matches."


def test_an_error_result_is_an_is_error_call_result_with_the_error_as_structured_content() -> None:
    error = {"error": {"code": "TOOL_NOT_FOUND", "message": "No file a.txt; Glob for it."}}
    result = call_result("Read", error)
    assert result.model_dump(by_alias=True, exclude_none=True, mode="json") == {
        "content": [{"type": "text", "text": "TOOL_NOT_FOUND: No file a.txt; Glob for it."}],
        "structuredContent": error,
        "isError": True,
        "resultType": "complete",
    }
