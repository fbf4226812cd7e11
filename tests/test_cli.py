"""The command line: one JSON document, exit 0/1/2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolbound", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_tools_prints_the_definitions_in_each_format(tmp_path: Path) -> None:
    for fmt, key in (("anthropic", "input_schema"), ("openai", "function"), ("mcp", "inputSchema")):
        out = run("tools", "--format", fmt, cwd=tmp_path)
        assert out.returncode == 0
        defs = json.loads(out.stdout)
        assert len(defs) == 4
        assert all(key in d for d in defs)


def test_a_tool_error_prints_json_and_exits_1(tmp_path: Path) -> None:
    out = run("call", "Nope", "{}", "--data-dir", str(tmp_path / "d"), cwd=tmp_path)
    assert out.returncode == 1
    assert json.loads(out.stdout)["error"]["code"] == "TOOL_UNKNOWN"
    assert out.stdout.count("\n") == 1


def test_events_print_json_lines_ending_with_the_result(tmp_path: Path) -> None:
    out = run("call", "Read", "{}", "--events", "--data-dir", str(tmp_path / "d"), cwd=tmp_path)
    assert out.returncode == 1
    events = [json.loads(line) for line in out.stdout.splitlines()]
    assert [e["type"] for e in events] == ["result"]
    assert events[0]["result"]["error"]["code"] == "TOOL_INVALID_ARGUMENT"


def test_bad_json_arguments_are_a_usage_error(tmp_path: Path) -> None:
    out = run("call", "Read", "{path:", "--data-dir", str(tmp_path / "d"), cwd=tmp_path)
    assert out.returncode == 2
    assert out.stdout == ""
    assert "JSON_ARGS is not valid JSON" in out.stderr


def test_a_missing_workspace_is_a_usage_error(tmp_path: Path) -> None:
    out = run("call", "Read", "{}", "--workspace", str(tmp_path / "nope"), cwd=tmp_path)
    assert out.returncode == 2
    assert "is not a directory" in out.stderr
