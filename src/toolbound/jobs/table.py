"""A host's background jobs: start, page, list, stop, and stop them all at the end.

One ``JobTable`` per ``ToolHost`` (so per session), reached from a tool through
``ToolContext.jobs``. At most ``job_max_running`` jobs run at once; the table
remembers ``job_max_kept`` jobs, and starting one more forgets the oldest ended
one (its log dir goes with it). The jobs stop when the host closes or ends
(``aclose``), and when the host process dies: every job is a tree started like
a Bash call's, carrying the host's marker, so the host's guard kills it
(``exec.guard``).

Pieces:
    JobTable  start(), output(), input(), stop(), aclose(); ``ends_with_call`` for one-call hosts
    new_job_id  a fresh job id
    require     the context's table, or the error of a tool run without a host
"""

from __future__ import annotations

import asyncio
import collections
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from toolbound import notices
from toolbound.arguments import filled
from toolbound.limits import Limits, ProfileName
from toolbound.listeners import JOB_ID_PREFIX, CallListener, CallStart
from toolbound.paths import Roots
from toolbound.results import ErrorCode, Stream, ToolError
from toolbound.scratch import Scratch

if TYPE_CHECKING:
    # Every host has a table; a job's machinery is imported by the first job
    # (``toolbound call Read`` never starts one).
    from toolbound.exec.sandbox import SandboxPolicy
    from toolbound.jobs.job import Job
    from toolbound.jobs.log import StreamLog
    from toolbound.jobs.models import JobListResult, JobOutputResult, JobStartResult
    from toolbound.linear_regex import LinearRegex
    from toolbound.models.bash import BashArgs
    from toolbound.models.jobs import JobInputArgs, JobOutputArgs


def new_job_id() -> str:
    return f"{JOB_ID_PREFIX}{uuid.uuid4().hex[:12]}"


class JobTable:
    """The background jobs of one host and session."""

    def __init__(
        self,
        *,
        session_id: str,
        limits: Limits,
        scratch: Scratch,
        roots: Roots,
        sandbox: SandboxPolicy,
        listeners: Callable[[], tuple[CallListener, ...]],
        profile: ProfileName = "exact",
    ) -> None:
        self.session_id = session_id
        self.profile = profile
        self.limits = limits
        self.scratch = scratch
        self.roots = roots
        self.workspace = roots.workspace
        self.sandbox = sandbox
        self._listeners = listeners
        self._jobs: collections.OrderedDict[str, Job] = collections.OrderedDict()
        self._closed = False
        # True for a host that serves one call (`toolbound call`): its jobs end with it.
        self.ends_with_call = False

    @property
    def jobs_dir(self) -> Path:
        return self.scratch.dir / "jobs"

    def running(self) -> list[Job]:
        return [job for job in self._jobs.values() if job.running]

    def get(self, job_id: str) -> Job:
        job = self._jobs.get(job_id)
        if job is None:
            known = ", ".join(self._jobs) or "none"
            raise ToolError(
                ErrorCode.JOB_NOT_FOUND,
                f"There is no job {job_id!r} in this session (its jobs: {known}). Call "
                "JobOutput without `jobId` to list them, or start one with Bash and "
                "`background: true`.",
            )
        return job

    # --- start -----------------------------------------------------------------

    async def start(self, args: BashArgs, raw_args: object) -> JobStartResult:
        """Start ``args.command`` as a job; it runs until it ends, is stopped, or the host goes."""
        from toolbound.exec.buffering import known_env, line_buffered_env, with_preload
        from toolbound.exec.events import CallEvents
        from toolbound.exec.run import spawn, workdir_of
        from toolbound.jobs.job import Job
        from toolbound.jobs.models import JobLogs, JobStartResult
        from toolbound.jobs.stdin import JobStdin

        if self._closed:
            raise ToolError(
                ErrorCode.INVALID_ARGUMENT,
                "This host is closing and starts no more jobs; start it in a new session.",
            )
        running = self.running()
        if len(running) >= self.limits.job_max_running:
            raise ToolError(
                ErrorCode.INVALID_ARGUMENT,
                notices.jobs_full(
                    ((job.job_id, job.command) for job in running),
                    max_running=self.limits.job_max_running,
                ),
            )
        await asyncio.to_thread(self._forget_old)
        # Probed in a thread by the first job; later ones take it without a thread hop.
        known = known_env()
        env = with_preload(
            known if known is not None else await asyncio.to_thread(line_buffered_env)
        )
        job_id = new_job_id()
        logs = self._open_logs(job_id)
        stdin = JobStdin.open(tty=args.tty, limits=self.limits)
        try:
            with workdir_of(self.roots, args.workdir) as workdir:
                tree = await spawn(
                    args.command,
                    cwd=self.workspace,
                    policy=self.sandbox,
                    scratch=self.scratch,
                    workdir=workdir,
                    stdio=stdin.stdio(env),
                )
        except BaseException:
            stdin.abandon()
            self._drop_logs(job_id, logs)
            raise
        stdin.started()
        call = CallStart(
            session_id=self.session_id,
            tool_call_id=job_id,
            tool="Bash",
            args=raw_args,
            profile=self.profile,
        )
        job = Job(
            job_id,
            args.command,
            tree,
            logs,
            emitter=CallEvents(call, self._listeners()),
            limits=self.limits,
            timeout_s=args.timeout,
            stdin=stdin,
        )
        self._jobs[job_id] = job
        job.start()
        return JobStartResult(
            job_id=job_id,
            state="running",
            pid=tree.pid,
            logs=JobLogs(stdout=str(logs["stdout"].path), stderr=str(logs["stderr"].path)),
            workdir=None if workdir is None else workdir.shown,
            tty=args.tty or None,
            notice=notices.job_one_call() if self.ends_with_call else None,
        )

    def _open_logs(self, job_id: str) -> dict[Stream, StreamLog]:
        # Reached through descriptors from the data dir: a `jobs` a command planted
        # as a symlink is replaced by a real folder, never written through.
        from toolbound.jobs.job import STREAMS
        from toolbound.jobs.log import StreamLog

        folder = self.jobs_dir / job_id
        try:
            folder_fd = self.scratch.open_folder("jobs", job_id)
            try:
                return {
                    stream: StreamLog(
                        folder / f"{stream}.log",
                        head_bytes=self.limits.job_log_head_bytes,
                        tail_bytes=self.limits.job_log_tail_bytes,
                        dir_fd=folder_fd,
                    )
                    for stream in STREAMS
                }
            finally:
                os.close(folder_fd)
        except OSError as err:
            self.scratch.remove_entry("jobs", job_id)
            raise ToolError(
                ErrorCode.PERMISSION_DENIED,
                f"The job's logs could not be created under {self.jobs_dir} ({err}); "
                "free some disk space or check the data dir's permissions, then try again.",
            ) from err

    def _drop_logs(self, job_id: str, logs: dict[Stream, StreamLog]) -> None:
        for log in logs.values():
            log.close()
        self.scratch.remove_entry("jobs", job_id)

    def _forget_old(self) -> None:
        """Make room for one more: forget the oldest ended jobs past ``job_max_kept``."""
        while len(self._jobs) >= self.limits.job_max_kept:
            ended = next((j for j in self._jobs.values() if not j.running), None)
            if ended is None:
                return
            del self._jobs[ended.job_id]
            self._drop_logs(ended.job_id, ended.logs)

    # --- output ----------------------------------------------------------------

    async def output(
        self, args: JobOutputArgs, abort: asyncio.Event
    ) -> JobOutputResult | JobListResult:
        """A page of a job's output after waiting as asked, or the session's jobs."""
        from toolbound.jobs.models import JobListResult

        if args.job_id is None:
            return JobListResult(jobs=[job.entry() for job in self._jobs.values()])
        job = self.get(args.job_id)
        since: dict[Stream, int] = dict(job.cursor)
        if args.since is not None:
            since = {"stdout": args.since.stdout, "stderr": args.since.stderr}
        problem = job.check_since(since)
        if problem is not None:
            raise ToolError(
                ErrorCode.INVALID_ARGUMENT,
                f"Invalid arguments for JobOutput: {problem}. Fix the arguments and call again.",
            )
        until = _compile(args.until)
        wait_s = filled(args.wait_s)
        if args.wait_for == "exit":
            await job.wait_exit(wait_s=wait_s, abort=abort)
            return await self._page(job, since)
        matched = await job.wait_for(since, wait_s=wait_s, until=until, abort=abort)
        notes: tuple[str, ...] = ()
        if until is not None and matched is None:
            notes = (notices.job_until_unmatched(wait_s=wait_s, ended=not job.running),)
        return await self._page(job, since, matched=matched, notes=notes)

    # --- input -----------------------------------------------------------------

    async def input(self, args: JobInputArgs, abort: asyncio.Event) -> JobOutputResult:
        """Write ``args.input`` to a running job's stdin (then close it with ``close``),
        wait a moment for what it prints, and page its output as JobOutput would from
        where the previous JobOutput stopped."""
        job = self.get(args.job_id)
        limit = self.limits.job_input_max_bytes
        size = len(args.input.encode())
        if size > limit:
            raise ToolError(
                ErrorCode.INVALID_ARGUMENT,
                f"Invalid arguments for JobInput: 'input' is {size} bytes, more than the "
                f"{limit} bytes ({limit // 1024} KB) one call writes; send it in parts, one "
                "JobInput call each (or write it to a file with Write and have the job read "
                "that).",
            )
        if not job.running:
            raise ToolError(
                ErrorCode.INVALID_ARGUMENT,
                notices.job_ended(job.job_id, job.state, job.exit_code, job.signal),
            )
        if job.stdin.closed:
            raise ToolError(
                ErrorCode.INVALID_ARGUMENT,
                f"Job {job.job_id}'s stdin was closed by an earlier JobInput (`close: true`); "
                "it reads no more input. Read its output with JobOutput, or stop it with "
                "JobStop.",
            )
        written = await job.send(args.input, close=args.close)
        notes: tuple[str, ...] = ()
        if written < size:
            notes = (
                notices.job_input_short(
                    written=written, size=size, wait_s=self.limits.job_input_wait_s
                ),
            )
        await job.wait_quiet(
            wait_s=self.limits.job_input_wait_s, quiet_s=self.limits.job_input_quiet_s, abort=abort
        )
        return await self._page(job, dict(job.cursor), notes=notes)

    async def _page(
        self,
        job: Job,
        since: dict[Stream, int],
        *,
        matched: str | None = None,
        notes: tuple[str, ...] = (),
    ) -> JobOutputResult:
        result = await asyncio.to_thread(job.page, since, matched=matched, notes=notes)
        job.cursor = {"stdout": result.next.stdout, "stderr": result.next.stderr}
        return result

    # --- stop ------------------------------------------------------------------

    async def stop(self, job_id: str) -> JobOutputResult:
        """Stop a job's whole tree (TERM, grace, KILL, reap); its final output from the
        previous JobOutput's stop."""
        job = self.get(job_id)
        job.request_stop()
        await job.stopped()
        return await self._page(job, dict(job.cursor))

    async def aclose(self) -> None:
        """Stop every running job and wait for each to be gone (the host closes)."""
        self._closed = True
        jobs = list(self._jobs.values())
        for job in jobs:
            job.request_stop()
        await asyncio.gather(*(job.stopped() for job in jobs), return_exceptions=True)
        for job in jobs:
            job.close()


def _compile(pattern: str | None) -> LinearRegex | None:
    """``until`` compiled by RE2 (linear time), ``^`` and ``$`` at each line;
    TOOL_INVALID_PATTERN when RE2 cannot compile it."""
    if pattern is None:
        return None
    from toolbound.linear_regex import PatternError, compile_lines

    try:
        return compile_lines(pattern)
    except PatternError as err:
        raise ToolError(
            ErrorCode.INVALID_PATTERN,
            f"`until` is not a valid RE2 regular expression ({err}); fix or escape it "
            "(e.g. `\\(` for a literal parenthesis; no backreferences or look-around) "
            "and call again.",
        ) from None


def require(jobs: JobTable | None) -> JobTable:
    """The host's jobs; a tool run outside a host (no table) cannot have any."""
    if jobs is None:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            "Background jobs need a ToolHost to belong to; run the call through one "
            "(`toolbound call`, `toolbound serve` or the library's ToolHost).",
        )
    return jobs
