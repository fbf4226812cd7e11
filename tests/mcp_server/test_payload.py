"""The call result of a tool result: the model text, isError (and structuredContent when
structured)."""

from __future__ import annotations

from typing import Any

import pytest

from support import bash_result as bash
from toolbound import model_text
from toolbound.mcp_server import ResultShape, call_result


def dumped(tool: str, result: dict[str, Any], *, shape: ResultShape = "text") -> dict[str, Any]:
    return call_result(tool, result, shape=shape).model_dump(
        by_alias=True, exclude_none=True, mode="json"
    )


def test_the_text_block_is_the_model_text_with_each_stream_labelled() -> None:
    result = bash(stdout="out\n", stderr="no newline", exitCode=2)
    assert dumped("Bash", result) == {
        "content": [
            {
                "type": "text",
                "text": "[exit status 2]\n<stdout>\nout\n</stdout>\n<stderr>\nno newline</stderr>",
            }
        ],
        "isError": False,
        "resultType": "complete",
    }


@pytest.mark.parametrize(
    ("tool", "result"),
    [
        ("Read", {"path": "a", "root": "workspace", "content": "one\n", "offset": 0,
                  "lineCount": 1, "fileBytes": 4, "truncated": True, "notice": "Next: 1."}),
        ("Glob", {"matches": ["b.py", "a.py"], "count": 2, "truncated": False}),
        ("Grep", {"matches": [{"path": "a.py", "line": 3, "text": "def f():"}], "count": 1,
                  "files": 1, "truncated": False}),
        ("Grep", {"counts": [{"path": "a.py", "count": 4}], "count": 1, "truncated": False}),
        ("Bash", bash(stdout="partial\n", exitCode=None, signal="SIGTERM", timedOut=True)),
    ],
)  # fmt: skip
def test_every_tool_s_text_block_is_its_model_text(tool: str, result: dict[str, Any]) -> None:
    (block,) = dumped(tool, result)["content"]
    assert block == {"type": "text", "text": model_text(tool, result)}


def test_a_timed_out_call_is_an_error_whose_text_is_the_bash_text() -> None:
    result = bash(stdout="partial\n", exitCode=None, signal="SIGTERM", timedOut=True)
    assert dumped("Bash", result) == {
        "content": [{"type": "text", "text": model_text("Bash", result)}],
        "isError": True,
        "resultType": "complete",
    }


def test_a_structured_timed_out_call_is_an_error_that_keeps_its_bash_result() -> None:
    result = bash(stdout="partial\n", exitCode=None, signal="SIGTERM", timedOut=True)
    assert dumped("Bash", result, shape="structured")["isError"] is True
    assert dumped("Bash", result, shape="structured")["structuredContent"] == result


def test_an_error_result_is_an_is_error_call_result_whose_text_is_code_and_message() -> None:
    error = {"error": {"code": "TOOL_NOT_FOUND", "message": "No file a.txt; Glob for it."}}
    assert dumped("Read", error) == {
        "content": [{"type": "text", "text": "TOOL_NOT_FOUND: No file a.txt; Glob for it."}],
        "isError": True,
        "resultType": "complete",
    }


def test_a_structured_error_result_carries_the_error_as_structured_content() -> None:
    error = {"error": {"code": "TOOL_NOT_FOUND", "message": "No file a.txt; Glob for it."}}
    assert dumped("Read", error, shape="structured") == {
        "content": [{"type": "text", "text": "TOOL_NOT_FOUND: No file a.txt; Glob for it."}],
        "structuredContent": error,
        "isError": True,
        "resultType": "complete",
    }
