"""JobOutput's and JobStop's arguments (their results: ``toolbound.jobs.models``).

Pieces:
    JobSince, JobOutputArgs, JobStopArgs
"""

from __future__ import annotations

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

    def problem(self) -> str | None:
        if self.job_id is None and (
            self.since is not None or self.wait_s is not None or self.until is not None
        ):
            return "'since', 'waitS' and 'until' need a 'jobId' (leave them all out to list jobs)"
        return None


class JobStopArgs(Args):
    job_id: str = Field(alias="jobId", min_length=1, description="The job to stop.")
