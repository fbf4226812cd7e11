"""The limits table, and tool definitions generated from it."""

from __future__ import annotations

import dataclasses

import pytest

from toolbound import DEFAULT_LIMITS, Budget, Limits, builtin_tool_defs
from toolbound.arguments import BashArgs, GlobArgs, GrepArgs, ReadArgs
from toolbound.results import ToolError
from toolbound.tooldefs import tool_defs
from toolbound.tools.registry import SPECS, TOOL_NAMES, spec_for

KB = 1024


def test_the_default_limits_are_the_seeds_table() -> None:
    d = DEFAULT_LIMITS
    assert d.search == Budget(max_bytes=48 * KB, max_lines=2000)
    assert d.shell_stdout == Budget(max_bytes=96 * KB, max_lines=4000)
    assert d.shell_stderr == Budget(max_bytes=96 * KB, max_lines=4000)
    assert (d.max_line_chars, d.read_window_lines, d.grep_head_limit) == (2000, 2000, 200)
    assert (d.glob_limit_default, d.glob_limit_max) == (100, 1000)
    assert (d.capture_max_bytes, d.capture_max_lines, d.spill_max_bytes) == (
        512 * KB,
        200_000,
        512 * KB,
    )
    assert (d.bash_timeout_default_s, d.bash_timeout_min_s, d.bash_timeout_max_s) == (60, 1, 300)
    assert (d.checkpoint_retained_tokens, d.checkpoint_head_share) == (20_000, 0.75)


def test_limits_are_frozen_and_replace_validates() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_LIMITS.max_line_chars = 5  # type: ignore[misc]
    assert DEFAULT_LIMITS.replace(grep_head_limit=50).grep_head_limit == 50
    with pytest.raises(ValueError, match="capture ceiling"):
        DEFAULT_LIMITS.replace(capture_max_bytes=1024)
    with pytest.raises(ValueError, match="timeout"):
        Limits(bash_timeout_default_s=500)


def test_descriptions_carry_the_numbers_and_scoping_parameters() -> None:
    defs = {d["name"]: d for d in builtin_tool_defs()}
    # The registry's order, spelled out in test_the_registry_lists_each_tool_once_with_a_runner.
    assert list(defs) == list(TOOL_NAMES)
    read, glob, grep, bash, edit, write, job_output, job_stop, apply_patch, listing, job_input = (
        d["description"] for d in defs.values()
    )
    for phrase in ("`offset`", "`limit`", "1-2000", "48KB / 2000 lines", "2000 characters"):
        assert phrase in read
    for phrase in ("png, jpeg, gif, webp", "1568 px", "1.15 megapixels", "`pages`", "20 pages"):
        assert phrase in read
    for phrase in ("`pattern`", "`path`", "default 100", "max 1000", "newest"):
        assert phrase in glob
    for phrase in ("`headLimit`", "default 200", "`glob`", "`type`", "`outputMode`", "`offset`"):
        assert phrase in grep
    for phrase in ("default 60", "1-300", "first 96KB / 4000", "last 96KB / 4000", "512KB"):
        assert phrase in bash
    for text in (edit, write):
        for phrase in (
            "workspace only",
            "TOOL_PATH_NOT_ALLOWED",
            "Read in this session first (TOOL_NOT_READ)",
            "TOOL_FILE_CHANGED",
            "atomic",
            "`diff`",
            "48KB / 2000 lines",
            "TOOL_BINARY_CONTENT",
        ):
            assert phrase in text
    for phrase in ("`oldString`", "exactly once", "`replaceAll`", "TOOL_NO_MATCH"):
        assert phrase in edit
    assert "TOOL_AMBIGUOUS_MATCH naming the count and the first line numbers" in edit
    assert "parent folders are created" in write
    for phrase in ("`background: true`", "1-86400 s with no default", "at most 8 run at once"):
        assert phrase in bash
    for phrase in (
        "`since`",
        "`waitS` (0-300, default 0)",
        "`until` (an RE2 regex: Python `re` syntax without backreferences or look-around",
        "first 96KB / 4000 lines",
        "last 96KB / 4000 lines",
        "first 1024KB and its last 4096KB or more (at most 9216KB)",
        "TOOL_INVALID_PATTERN",
        "TOOL_JOB_NOT_FOUND",
    ):
        assert phrase in job_output
    for phrase in ("whole process tree", "SIGTERM, 2 s grace, SIGKILL", "TOOL_JOB_NOT_FOUND"):
        assert phrase in job_stop
    for phrase in (
        "*** Begin Patch",
        "*** Move to: new/path",
        "TOOL_FILE_CHANGED",
        "TOOL_NO_MATCH",
        "TOOL_AMBIGUOUS_MATCH",
        "`exact`, `trailing-space`, `whitespace`",
        "48KB / 2000 lines",
        "workspace only",
    ):
        assert phrase in apply_patch
    for phrase in ("`depth`", "1-5, default 2", "default 200, max 1000", "48KB / 2000 lines"):
        assert phrase in listing
    # When to use a job, a terminal, input and waiting for the end, with their numbers.
    for phrase in ("`workdir`", "TOOL_PATH_NOT_ALLOWED", "line-buffered", "`tty: true`"):
        assert phrase in bash
    assert "120x40 pseudo-terminal" in bash
    assert '`waitFor: "exit"`' in bash
    assert '`waitFor: "exit"`' in job_output
    for phrase in (
        "stdin",
        "`tty: true`",
        "At most 64KB a call",
        "`close: true`",
        "up to 2 s",
        "pauses for 0.2 s",
        "TOOL_INVALID_ARGUMENT with its state",
        "TOOL_JOB_NOT_FOUND",
        "`background: true`",
    ):
        assert phrase in job_input


def test_a_smaller_search_budget_bounds_the_edit_diff_in_the_description() -> None:
    limits = DEFAULT_LIMITS.replace(search=Budget(max_bytes=16 * KB, max_lines=500))
    defs = {d["name"]: d["description"] for d in builtin_tool_defs(limits)}
    assert "16KB / 500 lines" in defs["Edit"]
    assert "16KB / 500 lines" in defs["Write"]


def test_a_changed_limit_changes_the_description_and_schema() -> None:
    limits = DEFAULT_LIMITS.replace(
        grep_head_limit=50, read_window_lines=500, glob_limit_max=300, bash_timeout_max_s=120
    )
    defs = {d["name"]: d for d in builtin_tool_defs(limits)}
    assert "default 50" in defs["Grep"]["description"]
    assert "default 200" not in defs["Grep"]["description"]
    assert "1-500" in defs["Read"]["description"]
    assert defs["Read"]["input_schema"]["properties"]["limit"]["maximum"] == 500
    assert "max 300" in defs["Glob"]["description"]
    assert "1-120" in defs["Bash"]["description"]
    assert defs["Bash"]["input_schema"]["properties"]["timeout"]["maximum"] == 120


def test_changed_job_limits_change_the_job_descriptions_and_schema() -> None:
    limits = DEFAULT_LIMITS.replace(
        job_max_running=3, job_wait_max_s=30, job_log_head_bytes=64 * KB, job_timeout_max_s=600
    )
    defs = {d["name"]: d for d in builtin_tool_defs(limits)}
    assert "at most 3 run at once" in defs["Bash"]["description"]
    assert "1-600 s with no default" in defs["Bash"]["description"]
    assert "`waitS` (0-30, default 0)" in defs["JobOutput"]["description"]
    assert "first 64KB and its last 4096KB" in defs["JobOutput"]["description"]
    assert defs["JobOutput"]["input_schema"]["properties"]["waitS"]["maximum"] == 30


def test_the_three_formats_render_the_same_definitions() -> None:
    anthropic = builtin_tool_defs(fmt="anthropic")
    openai = builtin_tool_defs(fmt="openai")
    mcp = builtin_tool_defs(fmt="mcp")
    for a, o, m in zip(anthropic, openai, mcp, strict=True):
        assert o == {
            "type": "function",
            "function": {
                "name": a["name"],
                "description": a["description"],
                "parameters": a["input_schema"],
            },
        }
        assert (m["name"], m["description"], m["inputSchema"]) == (
            a["name"],
            a["description"],
            a["input_schema"],
        )
    assert {m["name"]: m["annotations"]["readOnlyHint"] for m in mcp} == {
        "Read": True,
        "Glob": True,
        "Grep": True,
        "Bash": False,
        "Edit": False,
        "Write": False,
        "JobOutput": True,
        "JobStop": False,
        "ApplyPatch": False,
        "List": True,
        "JobInput": False,
    }


def test_schemas_name_exactly_the_arguments_the_host_accepts() -> None:
    for d in tool_defs():
        model_fields = spec_for(d.name).args.model_fields
        fields = {f.alias or name for name, f in model_fields.items()}
        assert set(d.input_schema["properties"]) == fields
        assert set(d.input_schema["required"]) == {
            f.alias or name for name, f in model_fields.items() if f.is_required()
        }


def test_the_registry_lists_each_tool_once_with_a_runner() -> None:
    assert TOOL_NAMES == (
        "Read",
        "Glob",
        "Grep",
        "Bash",
        "Edit",
        "Write",
        "JobOutput",
        "JobStop",
        "ApplyPatch",
        "List",
        "JobInput",
    )
    assert [d.name for d in tool_defs()] == list(TOOL_NAMES)
    for spec in SPECS:
        assert callable(spec.runner())
    with pytest.raises(ToolError, match="There is no tool named 'Patch'; the tools are Read, "):
        spec_for("Patch")


def test_the_input_schema_is_derived_from_the_model_and_the_limits_in_force() -> None:
    limits = DEFAULT_LIMITS.replace(
        bash_timeout_min_s=2, bash_timeout_max_s=90, bash_timeout_default_s=30
    )
    bash = {d.name: d for d in tool_defs(limits)}["Bash"].input_schema
    assert bash == {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The shell command."},
            "timeout": {
                "type": "number",
                "minimum": 2,
                "maximum": 90,
                "default": 30,
                "description": "Seconds, 2-90 (a background job's: no default, up to a day).",
            },
            "description": {
                "type": "string",
                "description": "What the command does, in a few words.",
            },
            "background": {
                "type": "boolean",
                "default": False,
                "description": "Run it as a background job: returns a jobId at once "
                "(JobOutput, JobInput, JobStop).",
            },
            "workdir": {
                "type": "string",
                "description": "The folder the command starts in, relative to the workspace "
                "(default: the workspace root); it must be a folder inside the workspace.",
            },
            "tty": {
                "type": "boolean",
                "default": False,
                "description": "Background jobs only: run the job on a pseudo-terminal (one "
                "stream, stdout) for programs that need one (REPLs, prompts, full-screen tools).",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    }
    grep = {d.name: d for d in tool_defs()}["Grep"].input_schema["properties"]
    assert grep["outputMode"] == {
        "type": "string",
        "enum": ["content", "filesWithMatches", "count"],
        "default": "content",
    }


def test_host_defaults_are_filled_from_the_limits_in_one_place() -> None:
    limits = DEFAULT_LIMITS.replace(
        read_window_lines=7, glob_limit_default=9, grep_head_limit=11, bash_timeout_default_s=13
    )
    assert spec_for("Read").parse({"path": "a"}, limits) == ReadArgs(path="a", limit=7)
    assert spec_for("Glob").parse({"pattern": "*"}, limits) == GlobArgs(pattern="*", limit=9)
    assert spec_for("Grep").parse({"pattern": "x", "headLimit": None}, limits) == GrepArgs(
        pattern="x", head_limit=11
    )
    assert spec_for("Bash").parse({"command": "true", "timeout": 5}, limits) == BashArgs(
        command="true", timeout=5
    )
    assert spec_for("Bash").parse({"command": "true"}, limits) == BashArgs(
        command="true", timeout=13
    )


def test_every_output_schema_admits_the_error_shape() -> None:
    for d in tool_defs():
        variants = d.output_schema["anyOf"]
        assert {"$ref": "#/$defs/ErrorResult"} in variants
        assert len(variants) == len(spec_for(d.name).results) + 1
