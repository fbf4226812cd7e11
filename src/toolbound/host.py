"""``ToolHost``: dispatch a tool call, stream its events, bound its lifetime.

A call is a chain of stages: parse the arguments against the limits in force
(``TOOL_INVALID_ARGUMENT`` / ``TOOL_UNKNOWN`` on failure), run the tool as a
task, relay its chunk events in ``seq`` order, then the one result event. No
event follows the result. Cancelling the caller aborts the call and waits for
the tool to finish stopping before the cancellation goes on.

Call listeners (``toolbound.listeners``: ``ToolHost(listeners=...)``, or
appended to ``host.listeners``) see every call producer-side, as its events
are emitted, whether or not anyone consumes its stream. The session store's
recorder is one, the first: every call and its events are recorded (the same
path for every tool), and a store that cannot be opened or written costs the
recording only. The session itself (store, recorder, read records, context
estimate, scratch sweep, live lock) is ``toolbound.session``'s.

Pieces:
    ToolHost      the async host: call(), stream(), abort(), end(), listeners, jobs
    run_tool      one tool call's arguments parsed and its runner run -> result
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from toolbound import busy
from toolbound.context import ToolContext
from toolbound.exec.abort import Abort
from toolbound.exec.events import CallEvents
from toolbound.exec.sandbox import SandboxPolicy, store_socket_dirs
from toolbound.exec.shield import wait_stopped
from toolbound.fit import NO_FIT, Fit
from toolbound.gauge import ContextGauge
from toolbound.jobs.table import JobTable
from toolbound.limits import DEFAULT_LIMITS, Limits, Profile, profile_named
from toolbound.listeners import CallListener, CallStart
from toolbound.paths import Roots, default_data_dir, path_error
from toolbound.results import ToolError, WireModel
from toolbound.scratch import check_session_id
from toolbound.session import HostSession
from toolbound.shrink import Budgets
from toolbound.store import is_url
from toolbound.tools.registry import import_runners, spec_for


class ToolHost:
    """Runs the registry's tools (``toolbound.tools.registry``) for one session, within the limits.

    ``call`` returns the result as a plain dict (a tool error is a result,
    ``{"error": {"code", "message"}}``, never an exception); ``stream`` yields
    the chunk events and then the one result event.

    ``sandbox`` (``"off"``, ``"read-only"``, ``"workspace-write"``) and
    ``network`` confine Bash commands (``toolbound.exec.sandbox``); a sandbox
    that cannot be built makes every Bash call ``TOOL_SANDBOX_UNAVAILABLE``.
    Confined commands never see the data dir or the store (only this
    session's scratch dir, read-only); ``allow_write`` folders stay writable
    beside the workspace and ``protect_git`` keeps ``.git/hooks`` and
    ``.git/config`` read-only. No command, confined or not, gets
    ``TOOLBOUND_TOKEN``, ``TOOLBOUND_STORE`` or a variable named in
    ``keep_env_back`` in its environment.
    ``listeners`` see every call (``toolbound.listeners``); each call keeps
    the ones listening when it started.

    ``profile`` is the result profile (CONTRACT section 8), a ``Profile`` or its
    name (``limits.PROFILES``: exact, the seed's table, or economy).
    ``context_window`` is the model's context in tokens and
    ``context_used(tokens)`` reports how much of it is in use; a profile that
    ``shrinks`` (economy) shrinks its budgets as it fills.

    ``warm`` imports every tool's module as the host starts, so no call pays
    an import; False leaves each to its tool's first call (``toolbound call``,
    whose host serves one call).

    ``session`` runs the session's life (``toolbound.session.HostSession``):
    ``store`` (a data dir or a ``postgresql://`` URL; None: ``$TOOLBOUND_STORE``,
    else the data dir) records every call, and a store that fails costs the
    recording, never a call.
    """

    def __init__(
        self,
        workspace: str | Path = ".",
        data_dir: str | Path | None = None,
        session_id: str | None = None,
        *,
        allow_external: Iterable[str | Path] = (),
        limits: Limits = DEFAULT_LIMITS,
        sandbox: str = "off",
        network: bool = True,
        store: str | Path | None = None,
        listeners: Iterable[CallListener] = (),
        profile: Profile | str = "exact",
        context_window: int | None = None,
        warm: bool = True,
        keep_env_back: Iterable[str] = (),
        allow_write: Iterable[str | Path] = (),
        protect_git: bool = False,
    ) -> None:
        self.limits = limits
        self._warm = warm
        self.profile = profile_named(profile)
        self.gauge = ContextGauge(window=context_window)
        self.workspace = Path(workspace).resolve()
        if not self.workspace.is_dir():
            raise ValueError(f"workspace {workspace} is not a directory")
        self.data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
        self.data_dir = self.data_dir.absolute()
        self.session_id = check_session_id(session_id or f"s-{uuid.uuid4().hex[:16]}")
        self.session = HostSession(
            self.session_id,
            self.data_dir,
            store=store,
            workspace=self.workspace,
            limits=limits,
            gauge=self.gauge,
        )
        # Where calls are recorded: ``store`` (a data dir or a postgresql:// URL),
        # else $TOOLBOUND_STORE, else the data dir.
        self.store = self.session.location
        # Resolved once: bwrap found (or not) now, so a call never probes PATH.
        self.sandbox = SandboxPolicy.create(
            sandbox,
            network=network,
            keep_env_back=tuple(keep_env_back),
            hidden=self._hidden(),
            allow_write=tuple(allow_write),
            protect_git=protect_git,
            max_processes=limits.sandbox_max_processes,
            memory_bytes=limits.sandbox_memory_bytes,
            tmp_bytes=limits.sandbox_tmp_bytes,
        )
        self.scratch = self.session.scratch
        self.roots = Roots.create(self.workspace, self.scratch.dir, allow_external)
        self._calls: dict[str, ToolContext] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.listeners: list[CallListener] = list(listeners)
        # Background jobs (CONTRACT section 9): they see the listeners of the moment they start.
        self.jobs = JobTable(
            session_id=self.session_id,
            limits=self.limits,
            scratch=self.scratch,
            roots=self.roots,
            sandbox=self.sandbox,
            listeners=self._call_listeners,
            profile=self.profile.name,
        )

    def _hidden(self) -> tuple[Path, ...]:
        """What no confined command sees: the data dir, the store's folder, and the
        folder of a PostgreSQL store's socket."""
        if is_url(self.store):
            return (self.data_dir, *store_socket_dirs(self.store))
        return (self.data_dir, Path(self.store).absolute())

    async def __aenter__(self) -> ToolHost:
        if self._warm:
            await asyncio.to_thread(import_runners)
        await self.session.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Abort running calls, stop the background jobs, wait for both, release the session."""
        await self._close(end=False)

    async def end(self) -> None:
        """Close (its jobs stopped), and end the session: marked ended in this host's
        store, scratch dir (the jobs' logs with it) removed.

        A store that cannot be written costs the record only (as for the
        recording), never the removal.
        """
        await self._close(end=True)

    async def _close(self, *, end: bool) -> None:
        for ctx in list(self._calls.values()):
            ctx.abort.set()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        # Before the recorder closes, so each job's end is recorded.
        await self.jobs.aclose()
        if self.sandbox.confined:  # the session's warm spare sandbox dies with it
            from toolbound.exec import spare

            await spare.release(self.scratch)
        await self.session.close(end=end)

    @property
    def busy(self) -> bool:
        """Whether a call or a background job of this host is running."""
        return bool(self._calls) or bool(self.jobs.running())

    def context_used(self, tokens: int) -> None:
        """The model's context holds ``tokens`` tokens now (see ``context_window``)."""
        self.gauge.report(tokens)

    def _call_listeners(self) -> tuple[CallListener, ...]:
        """The listeners of a call (or job) starting now."""
        # The recorder first: a listener that reads the store sees what is stored.
        recorder = self.session.recorder
        return (*((recorder,) if recorder is not None else ()), *self.listeners)

    def abort(self, tool_call_id: str) -> bool:
        """Abort a running call; False if no such call is running."""
        ctx = self._calls.get(tool_call_id)
        if ctx is None:
            return False
        ctx.abort.set()
        return True

    async def call(
        self,
        name: str,
        args: object,
        *,
        tool_call_id: str | None = None,
        reader: str | None = None,
    ) -> dict[str, Any]:
        """Run a tool to completion and return its result dict."""
        result: dict[str, Any] = {}
        async for event in self.stream(name, args, tool_call_id=tool_call_id, reader=reader):
            if event["type"] == "result":
                result = event["result"]
        return result

    async def stream(
        self,
        name: str,
        args: object,
        *,
        tool_call_id: str | None = None,
        reader: str | None = None,
        fit: Fit = NO_FIT,
    ) -> AsyncIterator[dict[str, Any]]:
        """Yield a call's chunk events in ``seq`` order, then its result event.

        ``reader`` names who receives the result when several share the session
        (an MCP server's connections to its shared session): what "was Read" and
        "is still in the model's context" is then that reader's alone. ``fit`` is
        the per-result cap of the client the result goes to (``toolbound.fit``):
        the call's budgets shrink to it and its text is kept within it.
        """
        call = CallStart(
            session_id=self.session_id,
            # 16 random hex digits: os.urandom is 0.45 us against uuid4's 3.6 (timeit).
            tool_call_id=tool_call_id or f"call_{os.urandom(8).hex()}",
            tool=name,
            args=args,
            profile=self.profile.name,
            fit=fit,
        )
        if self.profile.shrinks and self.gauge.window and not self.gauge.reported:
            # Shrinking budgets follow the session's own context until the caller reports.
            await self.session.estimate_context()
        listeners = self._call_listeners()
        sink = CallEvents(call, listeners, loop=asyncio.get_running_loop())
        ctx = ToolContext(
            limits=self.limits,
            roots=self.roots,
            scratch=self.scratch,
            tool_call_id=call.tool_call_id,
            emit=sink.chunk,
            abort=Abort(),
            sandbox=self.sandbox,
            record=self.session.record_of(reader),
            budgets=Budgets.for_call(self.limits, self.profile, gauge=self.gauge, fit=fit),
            jobs=self.jobs,
        )
        sink.started()
        task = asyncio.create_task(self._run(call, ctx, sink))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            async for event in sink.events():
                yield event
        finally:
            if not task.done():
                ctx.abort.set()
                # Always wait for the tool to finish stopping (its process tree
                # included) before a cancellation goes on.
                await wait_stopped(task)

    async def _run(self, call: CallStart, ctx: ToolContext, sink: CallEvents) -> None:
        self._calls[ctx.tool_call_id] = ctx
        # The call is work that bulk streams give way to (``busy``) until it is
        # recorded too: a PostgreSQL store's backend then gets the CPU for it.
        busy.begin(call=True, owner=self.session_id)
        try:
            try:
                result = await run_tool(call.tool, call.args, ctx)
                # The read record this call changed is written with its recording
                # (recorder.keep).
                event = sink.result(result.to_wire())
            except BaseException as exc:
                # A bug, not a tool error: the consumer of the events gets the exception.
                sink.fail(exc)
                if not isinstance(exc, Exception):
                    raise
                return
            finally:
                self._calls.pop(ctx.tool_call_id, None)
            await sink.settle(event)
        finally:
            busy.end()


async def run_tool(name: str, raw: object, ctx: ToolContext) -> WireModel:
    """Parse ``raw`` for tool ``name`` against ``ctx.limits`` and run it: always a result."""
    try:
        spec = spec_for(name)
        return await spec.runner()(spec.parse(raw, ctx.limits), ctx)
    except ToolError as err:
        return err.to_result()
    except OSError as err:
        # The one backstop for the file system changing under a call (a race
        # another process can cause at any time): a result, never an exception.
        return path_error(err).to_result()
