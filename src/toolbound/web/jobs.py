"""What the page shows of a session's background jobs (CONTRACT section 9), and stopping one.

A job is a call of its own (``toolbound.listeners``: its ``tool_call_id`` is
its ``jobId``), so its live output reaches the page as any call's does, from
the hub or the store, with its own ``seq``; the page opens it like a call.
A job's row says what it runs, its state (its ``status`` the jobs' view's,
``toolbound.views.jobs``: running, done, error, killed, timedOut) and its
output so far. While the
host that started it is attached to this web view, its state and totals
are the job table's own (never stale) and the page may stop it; otherwise
they are its recorded call's: ``running`` until its final output is
recorded, which it is when it ends, however it ends.

Stopping from the page stops the job's tree as ``JobStop`` does (TERM, grace,
KILL, reap) but is not a tool call of the agent: it is not listed or
recorded as one, and the agent's next ``JobOutput`` still starts where its
previous one stopped, the job's end in it.

A row's ``output`` is the last lines of each stream so far (``TAIL_LINES``,
within ``TAIL_BYTES``): from the job's logs while its host is attached here
(the log's end, however long the job ran), else from its final result once
it ended, else from the chunks the page could stream (``JobTails``: each
poll reads only the chunks after the last one it read). A row also says how
many inputs the agent wrote to the job, the last one and whether it closed
stdin (``inputs``: from its JobInput calls that were not refused; the job's
own page shows each where it came among the output).

Pieces:
    job_rows   a session's calls (+ its host's job table) -> the jobs panel's rows
    JobTails   a running job's output so far from its chunk events, read on from the last
    stop_job   stop one job of an attached host; its row after
    JobStopRefused  why a job cannot be stopped from here
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolbound.jobs.table import JobTable
from toolbound.listeners import is_job_call
from toolbound.results import Stream, ToolError
from toolbound.views.jobs import job_outcome
from toolbound.web.calls import CallRecord

NOT_HERE = (
    "This web view does not hold the host that runs this job (another process or "
    "machine): stop it there, or have the agent call JobStop."
)


# The output a row shows of each stream: its last lines, the bytes they are read from.
TAIL_LINES = 8
TAIL_BYTES = 4096
# The characters of a job's last input a row shows (its call has the whole).
INPUT_CHARS = 200
_STREAMS: tuple[Stream, Stream] = ("stdout", "stderr")


def _tail(text: str, *, partial_start: bool) -> str:
    """The last ``TAIL_LINES`` lines of ``text`` (a first line cut by the read dropped)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if partial_start and len(lines) > 1:
        lines = lines[1:]
    return "\n".join(lines[-TAIL_LINES:])


def _log_output(table: JobTable, job_id: str) -> dict[str, str] | None:
    """The end of each of the job's logs (read under the log's lock), if still open."""
    try:
        logs = table.get(job_id).logs
        output: dict[str, str] = {}
        for stream in _STREAMS:
            log = logs[stream]
            start = max(0, log.total_bytes - TAIL_BYTES)
            seg = log.segment(start, TAIL_BYTES, from_end=True)
            text = seg.data.decode("utf-8", "replace")
            output[stream] = _tail(text, partial_start=seg.start > 0)
    except (ToolError, OSError, ValueError):  # forgotten, or its logs closed
        return None
    return output


def _result_output(result: dict[str, Any]) -> dict[str, str]:
    return {s: _tail(str(result.get(s) or ""), partial_start=False) for s in _STREAMS}


class JobTails:
    """The output so far of jobs of hosts elsewhere, from their chunk events.

    ``after(session, job)`` is the seq to read on from; ``take`` folds the
    events read since into the job's tails and returns them. A job's entry
    is dropped once its row no longer needs it (``keep_only``).
    """

    def __init__(self) -> None:
        self._tails: dict[tuple[str, str], tuple[int, dict[str, str]]] = {}

    def after(self, session_id: str, job_id: str) -> int:
        held = self._tails.get((session_id, job_id))
        return held[0] if held else -1

    def take(
        self, session_id: str, job_id: str, events: Iterable[dict[str, Any]] | None
    ) -> dict[str, str] | None:
        """The job's tails with ``events`` (seq past ``after``) added; None if none are held."""
        key = (session_id, job_id)
        seq, tails = self._tails.get(key, (-1, {s: "" for s in _STREAMS}))
        if events is None and seq < 0:
            return None
        joined: dict[str, list[str]] = {s: [tails[s]] for s in _STREAMS}
        for event in events or ():
            seq = max(seq, int(event.get("seq", seq)))
            stream = event.get("stream")
            if event.get("type") == "chunk" and stream in joined:
                joined[stream].append(event["data"])
        tails = {s: _tail_of_chunks("".join(joined[s])) for s in _STREAMS}
        self._tails[key] = (seq, tails)
        return {s: _tail(tails[s], partial_start=False) for s in _STREAMS}

    def keep_only(self, session_id: str, job_ids: Iterable[str]) -> None:
        keep = set(job_ids)
        for key in [k for k in self._tails if k[0] == session_id and k[1] not in keep]:
            del self._tails[key]


def _tail_of_chunks(text: str) -> str:
    """The last ``TAIL_BYTES`` characters of a stream so far, from a line start when
    one is in them (an unfinished last line is kept: the next chunk goes on with it)."""
    if len(text) <= TAIL_BYTES:
        return text
    cut = text[-TAIL_BYTES:]
    start = cut.find("\n")
    return cut[start + 1 :] if start >= 0 else cut


class JobStopRefused(Exception):
    """Why a job cannot be stopped from this web view; ``status`` is the HTTP status."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def _live(table: JobTable | None, job_id: str) -> dict[str, Any] | None:
    """The job table's entry of the job (JobOutput's listing), if its host is here."""
    if table is None:
        return None
    try:
        entry: dict[str, Any] = table.get(job_id).entry().to_wire()
    except ToolError:  # the table forgot it (past job_max_kept)
        return None
    return entry


def _inputs(records: list[CallRecord]) -> dict[str, dict[str, Any]]:
    """Per job id, of the JobInput calls that were not refused: ``{"count", "last"
    (its first INPUT_CHARS characters), "cut", "closed" (it closed stdin)}``."""
    out: dict[str, dict[str, Any]] = {}
    for record in records:
        args = record.args if isinstance(record.args, dict) else {}
        refused = record.failed is not None or "error" in (record.result or {})
        if record.tool != "JobInput" or refused or not isinstance(args.get("jobId"), str):
            continue
        given = args.get("input")
        text = given if isinstance(given, str) else ""
        held = out.setdefault(args["jobId"], {"count": 0})
        held.update(
            count=held["count"] + 1,
            last=text[:INPUT_CHARS],
            cut=len(text) > INPUT_CHARS,
            closed=args.get("close") is True,
        )
    return out


def _row(
    record: CallRecord, table: JobTable | None, inputs: dict[str, Any] | None = None
) -> dict[str, Any]:
    args = record.args if isinstance(record.args, dict) else {}
    result = record.result or {}
    live = _live(table, record.tool_call_id)
    state = live["state"] if live else result.get("state", "running")
    exit_code = live["exitCode"] if live else result.get("exitCode")
    status = job_outcome({**result, "state": state, "exitCode": exit_code}).status.name
    if record.failed is not None:
        state, status = "failed", "error"
    output = _log_output(table, record.tool_call_id) if table and live else None
    if output is None and record.result is not None:
        output = _result_output(record.result)
    return {
        "jobId": record.tool_call_id,
        "command": args.get("command"),
        "description": args.get("description"),
        "state": state,
        "status": status,
        "exitCode": exit_code,
        "signal": result.get("signal"),
        "startedAt": record.started_at,
        "totals": live["totals"] if live else result.get("totals"),
        "stoppable": live is not None and state == "running",
        "stopNote": NOT_HERE if live is None and state == "running" else None,
        "lastSeq": record.last_seq,
        "output": output,
        "inputs": inputs,
    }


def job_rows(records: list[CallRecord], table: JobTable | None) -> list[dict[str, Any]]:
    """The session's jobs, oldest first; ``table`` is its host's when attached here.

    A running job of a host elsewhere has ``output`` None: fill it in with
    ``JobTails``.
    """
    inputs = _inputs(records)
    return [
        _row(r, table, inputs.get(r.tool_call_id)) for r in records if is_job_call(r.tool_call_id)
    ]


async def stop_job(table: JobTable | None, job_id: str) -> dict[str, Any]:
    """Stop the job's tree and wait until it is gone; its state after, as the table tells.

    The agent's JobOutput position is left where it was (no page is read).
    """
    if table is None:
        raise JobStopRefused(409, NOT_HERE)
    try:
        job = table.get(job_id)
    except ToolError:
        raise JobStopRefused(404, f"This session has no job {job_id!r} (now).") from None
    job.request_stop()
    await job.stopped()
    entry: dict[str, Any] = job.entry().to_wire()
    return entry
