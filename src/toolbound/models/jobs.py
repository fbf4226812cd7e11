"""JobOutput's, JobInput's and JobStop's arguments (their results: ``toolbound.jobs.models``).

Pieces:
    JobSince, JobOutputArgs, JobInputArgs, JobStopArgs
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from toolbound.arguments import Args


class JobSince(Args):
    stdout: int = Field(ge=0, description="Byte position in the job's stdout.")
    stderr: int = Field(ge=0, description="Byte position in the job's stderr.")


class JobOutputArgs(Args):
    job_id: str | None = Field(
        default=None,
        alias="jobId",
        min_length=1,
        description="The job (Bash with background: true); leave it out to list the jobs.",
    )
    since: JobSince | None = Field(
        default=None,
        description="Where to read from, a `next` a JobOutput returned; default: where the "
        "previous JobOutput of this job stopped; {stdout: 0, stderr: 0} from the start.",
    )
    wait_s: float | None = Field(
        default=None,
        alias="waitS",
        allow_inf_nan=False,
        description="Seconds to wait for new output, the end, or an `until` line, {range}.",
    )
    until: str | None = Field(
        default=None,
        min_length=1,
        description="RE2 regex (Python syntax without backreferences or look-around): wait "
        "until a line of the output matches it.",
    )
    wait_for: Literal["output", "exit"] = Field(
        default="output",
        alias="waitFor",
        description="`output` (default): return at new output, an `until` line, the end, or "
        "`waitS`; `exit`: gather the output until the job ends or `waitS` passes.",
    )

    def problem(self) -> str | None:
        if self.job_id is None and (
            self.since is not None
            or self.wait_s is not None
            or self.until is not None
            or self.wait_for != "output"
        ):
            return (
                "'since', 'waitS', 'until' and 'waitFor' need a 'jobId' (leave them all out "
                "to list jobs)"
            )
        if self.wait_for == "exit" and self.until is not None:
            return "'until' waits for a line, 'waitFor: exit' for the end: give one of them"
        return None


class JobInputArgs(Args):
    job_id: str = Field(alias="jobId", min_length=1, description="The running job.")
    input: str = Field(
        description="The text to write to the job's stdin (its terminal with `tty`), as is: "
        "end a line with \\n to send it."
    )
    close: bool = Field(
        default=False, description="Close the job's stdin after the input (end of file)."
    )


class JobStopArgs(Args):
    job_id: str = Field(alias="jobId", min_length=1, description="The job to stop.")
