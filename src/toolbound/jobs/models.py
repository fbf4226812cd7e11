"""The wire shapes of background jobs (CONTRACT section 9).

Pieces:
    JobState        running, exited, killed, timedOut
    JobLogs         the two log paths
    JobStartResult  what Bash with ``background: true`` returns at once
    JobPositions    one byte position per stream (``since``, ``next``)
    JobOutputResult a page of a job's output (JobOutput, JobStop)
    JobEntry, JobListResult  JobOutput without ``jobId``: the session's jobs
"""

from __future__ import annotations

from typing import Literal

from toolbound.models.bash import StreamPair
from toolbound.results import WireModel, _optional

JobState = Literal["running", "exited", "killed", "timedOut"]


class JobLogs(WireModel):
    stdout: str
    stderr: str


class JobStartResult(WireModel):
    job_id: str
    state: Literal["running"]
    pid: int
    logs: JobLogs
    # The folder it started in, when it is not the workspace root.
    workdir: str | None = _optional()
    # True when it runs on a pseudo-terminal (one stream: stdout).
    tty: bool | None = _optional()
    # Model-facing prose: a job of a one-call host (`toolbound call`) ends with it.
    notice: str | None = _optional()


class JobPositions(WireModel):
    stdout: int
    stderr: int


class JobOutputResult(WireModel):
    job_id: str
    state: JobState
    exit_code: int | None
    signal: str | None
    stdout: str
    stderr: str
    next: JobPositions
    matched: str | None = _optional()
    truncated: bool
    totals: StreamPair
    omitted: StreamPair
    notice: str | None = _optional()


class JobEntry(WireModel):
    job_id: str
    command: str
    state: JobState
    exit_code: int | None
    started_at: str
    totals: StreamPair


class JobListResult(WireModel):
    jobs: list[JobEntry]
