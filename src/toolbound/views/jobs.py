"""The background jobs' view (CONTRACT section 9): JobOutput, JobStop, JobInput, and a job's
start and end as Bash's.

A job's start (Bash with ``background: true``) reads ``[job job_… started: pid
N, running]`` and its two log paths; a page (JobOutput, JobStop, a job's final
result event) its state first (``[job job_… exited: exit status 0]``, ``killed
by signal SIGTERM``, ``stopped: …`` for a job stopped that exited on its own
terms, ``timed out``), the matched line and the notice, each non-empty stream
in its tags as Bash, then where the next JobOutput goes on (``[next: stdout
120, stderr 0]``); the list a line per job.

A page or the list tells a job's state: that is its content, not its call's
outcome, so JobOutput and JobStop are done whatever the job's state; the
state's own status (``job_outcome``) is what the page shows of the job.

Pieces:
    NO_JOBS      the text of a session without jobs
    job_text     a job result (a start, a page, the list) -> the model's text
    job_outcome  a job's state -> its status and the line that says it
    JobView      JobOutput's, JobStop's and JobInput's view
"""

from __future__ import annotations

import json
from typing import Any

from toolbound.views.base import DONE, FAILED, KILLED, RUNNING, TIMED_OUT, Outcome, View
from toolbound.views.parts import bracketed, joined, stream

NO_JOBS = "No background jobs in this session."


def job_outcome(job: dict[str, Any]) -> Outcome:
    """A job's state (a page, a job's own result, a list entry, a row of the page's
    jobs): running is not an end, stopped is not a failure, a non-zero exit is."""
    state = job["state"]
    if state == "running":
        return Outcome(RUNNING, "running")
    if state == "timedOut":
        return Outcome(TIMED_OUT, "timed out; the process tree was stopped")
    if state == "killed":
        signal = job.get("signal")
        return Outcome(KILLED, f"killed ({signal})" if signal else "killed")
    code = job.get("exitCode")
    return Outcome(DONE if code == 0 else FAILED, f"exited, exit status {code}")


def _state(result: dict[str, Any]) -> str:
    state = str(result["state"])
    if state == "running":
        return "running"
    if state == "timedOut":
        return "timed out"
    if result.get("signal"):
        return f"killed by signal {result['signal']}"
    if result.get("exitCode") is not None:
        verb = "exited" if state == "exited" else "stopped"
        return f"{verb}: exit status {result['exitCode']}"
    return state


def _sizes(totals: dict[str, Any]) -> str:
    out, err = totals["stdout"], totals["stderr"]
    return (
        f"stdout {out['bytes']} bytes / {out['lines']} lines, "
        f"stderr {err['bytes']} bytes / {err['lines']} lines"
    )


def job_text(result: dict[str, Any]) -> str:
    """The text the model reads for a job result (a start, a page, or the list)."""
    if "jobs" in result:
        lines = [
            f"{job['jobId']} {_state(job)}: {job['command']} "
            f"(started {job['startedAt']}; {_sizes(job['totals'])})"
            for job in result["jobs"]
        ]
        return "\n".join(lines) or NO_JOBS
    job_id = result["jobId"]
    if "logs" in result:
        logs = result["logs"]
        where = f", in {result['workdir']}" if result.get("workdir") else ""
        tty = ", on a terminal (one stream: stdout)" if result.get("tty") else ""
        return joined(
            f"[job {job_id} started: pid {result['pid']}, running{where}{tty}]",
            f"stdout log: {logs['stdout']}\nstderr log: {logs['stderr']}",
            bracketed(result.get("notice")),
        )
    matched = result.get("matched")
    nxt = result["next"]
    return joined(
        f"[job {job_id} {_state(result)}]",
        f"[matched: {matched}]" if matched is not None else "",
        bracketed(result.get("notice")),
        stream("stdout", result["stdout"]),
        stream("stderr", result["stderr"]),
        f"[next: stdout {nxt['stdout']}, stderr {nxt['stderr']}]",
    )


class JobView(View):
    """JobOutput's and JobStop's: a page of a job, or (JobOutput) the list."""

    def text(self, result: dict[str, Any]) -> str:
        return job_text(result)

    def outcomes(self, result: dict[str, Any]) -> list[Outcome]:
        """The job's state, or each listed job's."""
        if "jobs" in result:
            return [job_outcome(job) for job in result["jobs"]]
        return [job_outcome(result)]

    def short_args(self, args: dict[str, Any]) -> str | None:
        """The job, then the other arguments as given."""
        rest = [f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items() if k != "jobId"]
        return " ".join([str(args.get("jobId", "(all jobs)")), *rest])
