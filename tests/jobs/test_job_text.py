"""The model text of job results: the state first, each stream labelled, where to go on."""

from __future__ import annotations

from typing import Any

import pytest

from toolbound import model_text

COUNTS = {"stdout": {"bytes": 3, "lines": 1}, "stderr": {"bytes": 0, "lines": 0}}
ZERO = {"stdout": {"bytes": 0, "lines": 0}, "stderr": {"bytes": 0, "lines": 0}}


def page(**fields: Any) -> dict[str, Any]:
    result: dict[str, Any] = {
        "jobId": "job_1",
        "state": "running",
        "exitCode": None,
        "signal": None,
        "stdout": "hi\n",
        "stderr": "",
        "next": {"stdout": 3, "stderr": 0},
        "truncated": False,
        "totals": COUNTS,
        "omitted": ZERO,
    }
    return {**result, **fields}


def test_a_jobs_start_names_its_pid_and_logs() -> None:
    result = {
        "jobId": "job_1",
        "state": "running",
        "pid": 42,
        "logs": {"stdout": "/s/jobs/job_1/stdout.log", "stderr": "/s/jobs/job_1/stderr.log"},
    }
    assert model_text("Bash", result) == (
        "[job job_1 started: pid 42, running]\n"
        "stdout log: /s/jobs/job_1/stdout.log\n"
        "stderr log: /s/jobs/job_1/stderr.log"
    )


@pytest.mark.parametrize(
    ("fields", "first"),
    [
        ({}, "[job job_1 running]"),
        ({"state": "exited", "exitCode": 3}, "[job job_1 exited: exit status 3]"),
        ({"state": "killed", "signal": "SIGTERM"}, "[job job_1 killed by signal SIGTERM]"),
        ({"state": "killed", "exitCode": 0}, "[job job_1 stopped: exit status 0]"),
        ({"state": "timedOut", "signal": "SIGTERM"}, "[job job_1 timed out]"),
    ],
)
def test_a_page_starts_with_the_state_and_ends_with_next(
    fields: dict[str, Any], first: str
) -> None:
    for tool in ("JobOutput", "JobStop"):
        assert model_text(tool, page(**fields)) == (
            f"{first}\n<stdout>\nhi\n</stdout>\n[next: stdout 3, stderr 0]"
        )


def test_a_page_shows_the_matched_line_and_the_notice_before_the_streams() -> None:
    result = page(matched="hi", stderr="oops", notice="The job is still running.")
    assert model_text("JobOutput", result) == (
        "[job job_1 running]\n[matched: hi]\n[The job is still running.]\n"
        "<stdout>\nhi\n</stdout>\n<stderr>\noops</stderr>\n[next: stdout 3, stderr 0]"
    )


def test_the_list_is_one_line_a_job() -> None:
    jobs = {
        "jobs": [
            {
                "jobId": "job_1",
                "command": "make watch",
                "state": "exited",
                "exitCode": 0,
                "startedAt": "2026-12-01T12:00:00.000+00:00",
                "totals": COUNTS,
            }
        ]
    }
    assert model_text("JobOutput", jobs) == (
        "job_1 exited: exit status 0: make watch (started 2026-12-01T12:00:00.000+00:00; "
        "stdout 3 bytes / 1 lines, stderr 0 bytes / 0 lines)"
    )
    assert model_text("JobOutput", {"jobs": []}) == "No background jobs in this session."


def test_a_job_error_reads_as_any_tool_error() -> None:
    error = {"error": {"code": "TOOL_JOB_NOT_FOUND", "message": "There is no job 'x'."}}
    assert model_text("JobStop", error) == "TOOL_JOB_NOT_FOUND: There is no job 'x'."
