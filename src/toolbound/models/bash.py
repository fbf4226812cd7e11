"""Bash's arguments and result (a background job's start is ``toolbound.jobs.models``).

Pieces:
    BashArgs, StreamCounts, StreamPair, SpillPaths, BashResult
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pydantic import Field

from toolbound.arguments import Args
from toolbound.results import WireModel, _optional


class BashArgs(Args):
    program_arguments: ClassVar[Mapping[str, str]] = {
        "command": "write the script to a file with Write, then run that file (`bash script.sh`)"
    }

    command: str = Field(description="The shell command.")
    timeout: float | None = Field(
        default=None,
        allow_inf_nan=False,
        description="Seconds, {range} (a background job's: no default, up to a day).",
    )
    description: str | None = Field(
        default=None, description="What the command does, in a few words."
    )
    background: bool = Field(
        default=False,
        description="Run it as a background job: returns a jobId at once (JobOutput, "
        "JobInput, JobStop).",
    )
    workdir: str | None = Field(
        default=None,
        min_length=1,
        description="The folder the command starts in, relative to the workspace (default: "
        "the workspace root); it must be a folder inside the workspace.",
    )
    tty: bool = Field(
        default=False,
        description="Background jobs only: run the job on a pseudo-terminal (one stream, "
        "stdout) for programs that need one (REPLs, prompts, full-screen tools).",
    )

    def problem(self) -> str | None:
        if not self.command.strip():
            return "'command' is empty; give the shell command to run"
        if self.tty and not self.background:
            return (
                "'tty' is for background jobs only (a foreground command's stdin is "
                "/dev/null); add `background: true` and talk to it with JobInput"
            )
        return None


class StreamCounts(WireModel):
    bytes: int
    lines: int


class StreamPair(WireModel):
    stdout: StreamCounts
    stderr: StreamCounts


class SpillPaths(WireModel):
    stdout: str | None = _optional()
    stderr: str | None = _optional()


class BashResult(WireModel):
    stdout: str
    stderr: str
    exit_code: int | None
    signal: str | None
    timed_out: bool
    aborted: bool
    truncated: bool
    spill: SpillPaths
    omitted: StreamPair
    totals: StreamPair
    duration_ms: int
    # The folder the command started in, when it is not the workspace root.
    workdir: str | None = _optional()
    # Model-facing prose: a timeout or the processes stopped after the shell exited.
    notice: str | None = _optional()
