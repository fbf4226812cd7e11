"""Result models on the wire: camelCase, optional fields omitted, nullable ones kept."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from toolbound.results import (
    BashResult,
    ChunkEvent,
    ErrorCode,
    GrepContentResult,
    GrepMatch,
    ReadResult,
    ResultEvent,
    SpillPaths,
    StreamCounts,
    StreamPair,
    ToolError,
)


def test_read_result_omits_total_lines_and_notice_until_set() -> None:
    mid = ReadResult(
        path="a.py",
        root="workspace",
        content="x\n",
        offset=0,
        line_count=1,
        file_bytes=4,
        truncated=True,
        notice="Next: offset 1.",
    )
    assert mid.to_wire() == {
        "path": "a.py",
        "root": "workspace",
        "content": "x\n",
        "offset": 0,
        "lineCount": 1,
        "fileBytes": 4,
        "truncated": True,
        "notice": "Next: offset 1.",
    }
    end = ReadResult(
        path="a.py",
        root="workspace",
        content="",
        offset=1,
        line_count=0,
        total_lines=1,
        file_bytes=4,
        truncated=False,
    )
    assert end.to_wire() == {
        "path": "a.py",
        "root": "workspace",
        "content": "",
        "offset": 1,
        "lineCount": 0,
        "totalLines": 1,
        "fileBytes": 4,
        "truncated": False,
    }


def test_bash_result_keeps_null_exit_code_and_signal() -> None:
    zero = StreamCounts(bytes=0, lines=0)
    result = BashResult(
        stdout="",
        stderr="",
        exit_code=None,
        signal=None,
        timed_out=True,
        aborted=False,
        truncated=False,
        spill=SpillPaths(stdout="/s/o.log"),
        omitted=StreamPair(stdout=zero, stderr=zero),
        totals=StreamPair(stdout=zero, stderr=zero),
        duration_ms=5,
    )
    wire = result.to_wire()
    assert (wire["exitCode"], wire["signal"], wire["timedOut"]) == (None, None, True)
    assert wire["spill"] == {"stdout": "/s/o.log"}
    assert wire["omitted"] == {
        "stdout": {"bytes": 0, "lines": 0},
        "stderr": {"bytes": 0, "lines": 0},
    }
    assert "notice" not in wire


def test_grep_content_and_events_are_camel_case() -> None:
    grep = GrepContentResult(
        matches=[GrepMatch(path="a", line=3, text="x")], count=1, files=1, truncated=False
    )
    assert grep.to_wire() == {
        "matches": [{"path": "a", "line": 3, "text": "x"}],
        "count": 1,
        "files": 1,
        "truncated": False,
    }
    chunk = ChunkEvent(tool_call_id="c", stream="stderr", seq=0, data="boom")
    assert chunk.to_wire() == {
        "type": "chunk",
        "toolCallId": "c",
        "stream": "stderr",
        "seq": 0,
        "data": "boom",
    }
    done = ResultEvent(tool_call_id="c", seq=1, result={"ok": 1}, text="ok")
    assert done.to_wire() == {
        "type": "result",
        "toolCallId": "c",
        "seq": 1,
        "result": {"ok": 1},
        "text": "ok",
    }


def test_a_result_event_carries_the_model_text_of_its_result() -> None:
    error = {"error": {"code": "TOOL_NOT_FOUND", "message": "No such file; try Glob."}}
    assert ResultEvent.of("Read", "c", 0, error) == {
        "type": "result",
        "toolCallId": "c",
        "seq": 0,
        "result": error,
        "text": "TOOL_NOT_FOUND: No such file; try Glob.",
    }


def test_error_result_shape_and_codes() -> None:
    err = ToolError(ErrorCode.NOT_FOUND, "No such file; try Glob.")
    assert err.to_result().to_wire() == {
        "error": {"code": "TOOL_NOT_FOUND", "message": "No such file; try Glob."}
    }
    assert sorted(c.value for c in ErrorCode) == sorted(
        [
            "TOOL_BINARY_CONTENT",
            "TOOL_NOT_FOUND",
            "TOOL_IS_DIRECTORY",
            "TOOL_NOT_REGULAR_FILE",
            "TOOL_PERMISSION_DENIED",
            "TOOL_PATH_NOT_ALLOWED",
            "TOOL_INVALID_ARGUMENT",
            "TOOL_INVALID_PATTERN",
            "TOOL_UNKNOWN",
            "TOOL_SANDBOX_UNAVAILABLE",
            "TOOL_NO_MATCH",
            "TOOL_AMBIGUOUS_MATCH",
            "TOOL_NOT_READ",
            "TOOL_FILE_CHANGED",
            "TOOL_JOB_NOT_FOUND",
        ]
    )


def test_models_refuse_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        GrepMatch(path="a", line=1, text="x", offset=3)  # type: ignore[call-arg]


def test_a_result_event_of_a_wire_dict_is_the_one_the_model_dumps() -> None:
    # The host builds its result events from to_wire() dicts without checking them
    # again: the event must serialize byte for byte as the model's dump.
    zero = StreamCounts(bytes=0, lines=0)
    results = [
        BashResult(
            stdout="hé\n",
            stderr="",
            exit_code=0,
            signal=None,
            timed_out=False,
            aborted=False,
            truncated=False,
            spill=SpillPaths(),
            omitted=StreamPair(stdout=zero, stderr=zero),
            totals=StreamPair(stdout=StreamCounts(bytes=4, lines=1), stderr=zero),
            duration_ms=3,
            notice="1 lingering process stopped",
        ).to_wire(),
        ToolError(ErrorCode.NOT_FOUND, "No such file; try Glob.").to_result().to_wire(),
    ]
    for result in results:
        built = ResultEvent.of("Bash", "c", 7, result, wire=True)
        dumped = ResultEvent.of("Bash", "c", 7, result)
        assert json.dumps(built, ensure_ascii=False) == json.dumps(dumped, ensure_ascii=False)
