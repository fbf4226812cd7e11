"""The model text of background jobs' results (``toolbound.model_text`` calls it).

- a job's start (Bash with ``background: true``): ``[job job_… started: pid N]``,
  the two log paths, then the notice;
- a page (JobOutput, JobStop, and a job's final result event): the state first
  (``[job job_… running]``, ``[job job_… exited: exit status 0]``, ``killed by
  signal SIGTERM``, ``stopped: exit status 0`` for a job stopped that exited on
  its own terms, ``timed out``), the matched line and the notice, then each
  non-empty stream in its own ``<stdout>`` / ``<stderr>`` tags as Bash does,
  then where the next JobOutput goes on (``[next: stdout 120, stderr 0]``);
- the list: one line per job, ``job_… running: COMMAND``, its state, exit
  code and output sizes.

Pure, and it imports nothing of toolbound: ``results`` imports the model text.

Pieces:
    JOB_TOOLS  the tools whose results are rendered here
    job_text   result dict -> the model's text
"""

from __future__ import annotations

from typing import Any

JOB_TOOLS = ("JobOutput", "JobStop")

NO_JOBS = "No background jobs in this session."


def _bracketed(notice: str | None) -> str:
    return f"[{notice}]" if notice else ""


def _lines(*parts: str) -> str:
    out = ""
    for part in parts:
        if not part:
            continue
        if out and not out.endswith("\n"):
            out += "\n"
        out += part
    return out


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


def _stream(label: str, text: str) -> str:
    return f"<{label}>\n{text}</{label}>" if text else ""


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
        return _lines(
            f"[job {job_id} started: pid {result['pid']}, running]",
            f"stdout log: {logs['stdout']}\nstderr log: {logs['stderr']}",
            _bracketed(result.get("notice")),
        )
    matched = result.get("matched")
    nxt = result["next"]
    return _lines(
        f"[job {job_id} {_state(result)}]",
        f"[matched: {matched}]" if matched is not None else "",
        _bracketed(result.get("notice")),
        _stream("stdout", result["stdout"]),
        _stream("stderr", result["stderr"]),
        f"[next: stdout {nxt['stdout']}, stderr {nxt['stderr']}]",
    )
