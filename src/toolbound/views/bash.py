"""Bash's view: a command's outcome and streams, a background job's start and end.

The text: the outcome first (``[exit status 0]``, ``[killed by signal
SIGKILL]``, ``[timed out]``, ``[aborted]``) with the notice, then each
non-empty stream inside its own ``<stdout>`` / ``<stderr>`` tags, the seed's
markers verbatim in the stream text. A background job's start and its own
result (the job is a call of its own, ``toolbound.listeners``) read as the
jobs' (``toolbound.views.jobs``).

The status: a timeout is an error the protocols report (the seed: "kill
process tree + error"); a command that exited non-zero or died of a signal
failed, which the page shows as an error but the protocols do not; an abort
is an abort; a started job is a call done; a job's own result is its state's
(``job_outcome``).

Pieces:
    BashView  text, status, outcome line, spill files, elided bytes, the command
"""

from __future__ import annotations

from typing import Any

from toolbound.bounds.utf8 import utf8_len
from toolbound.views.base import ABORTED, DONE, FAILED, TIMED_OUT, Outcome, Status, View
from toolbound.views.jobs import job_outcome, job_text
from toolbound.views.parts import bracketed, joined, stream

_STREAMS = ("stdout", "stderr")


def _is_job(result: dict[str, Any]) -> bool:
    """A background job's start, or a job's own result (its final page)."""
    return "jobId" in result


class BashView(View):
    def text(self, result: dict[str, Any]) -> str:
        if _is_job(result):
            return job_text(result)
        return joined(
            _outcome_marker(result),
            f"[in {result['workdir']}]" if result.get("workdir") else "",
            bracketed(result.get("notice")),
            stream("stdout", result["stdout"]),
            stream("stderr", result["stderr"]),
        )

    def status(self, result: dict[str, Any]) -> Status:
        outcomes = self.outcomes(result)
        return outcomes[0].status if outcomes else DONE  # a job started: the call is done

    def outcomes(self, result: dict[str, Any]) -> list[Outcome]:
        """The command's end, or the job's state (none for a job's start: it has not ended)."""
        if "logs" in result:
            return []
        if "state" in result:
            return [job_outcome(result)]
        if result.get("timedOut") is True:
            return [Outcome(TIMED_OUT, "timed out; the process tree was stopped")]
        if result.get("aborted"):
            return [Outcome(ABORTED, "aborted; the process tree was stopped")]
        if result["signal"] is not None:
            return [Outcome(FAILED, f"killed by signal {result['signal']}")]
        code = result["exitCode"]
        return [Outcome(DONE if code == 0 else FAILED, f"exit status {code}")]

    def outputs(self, result: dict[str, Any]) -> list[dict[str, Any]]:
        """The spill files, a stream each."""
        spill = result.get("spill") or {}
        return [{"name": s, "path": spill[s], "offset": 0} for s in _STREAMS if spill.get(s)]

    def elided_bytes(self, result: dict[str, Any]) -> int:
        """For each stream, its total bytes (``totals``) minus the UTF-8 bytes of the
        stream as kept in the result, at least 0.

        That covers what the result budget cut, what the capture ceiling
        omitted and what a terminal rewrite collapsed. A cut stream's marker is
        part of the kept text (the model reads it where the cut was), so the
        figure is short of the cut by the marker's bytes.
        """
        return sum(
            max(0, int(result["totals"][s]["bytes"]) - utf8_len(result[s])) for s in _STREAMS
        )

    def short_args(self, args: dict[str, Any]) -> str | None:
        command = args.get("command")
        return command if isinstance(command, str) else None


def _outcome_marker(result: dict[str, Any]) -> str:
    if result["timedOut"]:
        return "[timed out]"
    if result["aborted"]:
        return "[aborted]"
    if result["exitCode"] is not None:
        return f"[exit status {result['exitCode']}]"
    return f"[killed by signal {result['signal']}]"
