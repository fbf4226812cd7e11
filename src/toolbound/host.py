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
recording only.

Pieces:
    ToolHost      the async host: call(), stream(), abort(), end(), listeners, jobs
    run_tool      one tool call's arguments parsed and its runner run -> result
    estimate_context  the session's transcript in a store -> the gauge's estimate
    _EventSink    thread-safe, seq-numbering queue of one call's events
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from toolbound import busy
from toolbound.context import ToolContext
from toolbound.edit import ReadRecord
from toolbound.exec.abort import Abort
from toolbound.exec.sandbox import SandboxPolicy, store_socket_dirs
from toolbound.exec.shield import wait_stopped
from toolbound.fit import NO_FIT, Fit
from toolbound.gauge import ContextGauge
from toolbound.jobs.table import JobTable
from toolbound.limits import DEFAULT_LIMITS, Limits
from toolbound.listeners import CallListener, CallStart, all_settled, tell
from toolbound.model_text import profile_named
from toolbound.paths import Roots, default_data_dir, path_error
from toolbound.results import ChunkEvent, ResultEvent, Stream, ToolError, WireModel
from toolbound.scratch import LiveLock, Scratch, check_session_id, sweep
from toolbound.store import (
    CallRecorder,
    SessionError,
    SessionStore,
    StoreUnavailable,
    is_url,
    store_location,
)
from toolbound.store.summaries import machine_name
from toolbound.store.tokens import estimate_tokens
from toolbound.tools.registry import import_runners, spec_for

log = logging.getLogger(__name__)

# The most readers of one session whose read records a host keeps (``record_of``).
MAX_READERS = 64


class _EventSink:
    """One call's events: seq assigned at emission, under a lock, from any thread.

    Each event goes to the call's listeners as it is emitted (under the lock,
    so in seq order) and is queued for the consumer of ``events``; the result
    event is handed to the consumer separately (``hand_out``), once the
    listeners settled.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        call: CallStart,
        listeners: tuple[CallListener, ...],
    ) -> None:
        self._loop = loop
        self._call = call
        self._listeners = listeners
        self._lock = threading.Lock()
        self._seq = 0
        self._items: collections.deque[dict[str, Any]] = collections.deque()
        self._wake = asyncio.Event()
        self._closed = False

    def _emit(
        self, make: Callable[[int], dict[str, Any]], *, queue: bool, last: bool = False
    ) -> dict[str, Any] | None:
        """Number the event, tell the listeners, queue it for the consumer if ``queue``.

        None once the call's result is out; ``last`` (the result) closes the sink.
        """
        with self._lock:
            if self._closed:
                return None
            item = make(self._seq)
            self._seq += 1
            self._closed = last
            for listener in self._listeners:
                tell(listener, "call_event", self._call, item)
            if queue:
                self._items.append(item)
        if queue:
            self._wake_consumer()
        return item

    def _queue(self, item: dict[str, Any]) -> None:
        with self._lock:
            self._items.append(item)
        self._wake_consumer()

    def _wake_consumer(self) -> None:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._wake.set()
        else:
            self._loop.call_soon_threadsafe(self._wake.set)

    def chunk(self, stream: Stream, data: str) -> None:
        if not data:
            return
        tool_call_id = self._call.tool_call_id
        self._emit(
            lambda seq: ChunkEvent(
                tool_call_id=tool_call_id, stream=stream, seq=seq, data=data
            ).to_wire(),
            queue=True,
        )

    def result(self, result: dict[str, Any]) -> dict[str, Any] | None:
        """Emit the result event (to the listeners, not yet the consumer); no chunk follows.

        ``result`` is the tool's result model's ``to_wire()`` dict.
        """
        tool_call_id = self._call.tool_call_id
        return self._emit(
            lambda seq: ResultEvent.of(
                self._call.tool,
                tool_call_id,
                seq,
                result,
                profile=self._call.profile,
                fit=self._call.fit,
                wire=True,
            ),
            queue=False,
            last=True,
        )

    def hand_out(self, item: dict[str, Any]) -> None:
        """The result event, to the consumer: the last event it gets."""
        self._queue(item)

    def fail(self, exc: BaseException) -> None:
        """The tool crashed: end the events, re-raising its exception to the consumer."""
        with self._lock:
            self._closed = True
        self._queue({"type": "failed", "toolCallId": self._call.tool_call_id, "exc": exc})

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """Yield the events in seq order, up to the result (or the tool's exception)."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            while True:
                with self._lock:
                    if not self._items:
                        break
                    item = self._items.popleft()
                if item["type"] == "failed":
                    raise item["exc"]
                yield item
                if item["type"] == "result":
                    return


class ToolHost:
    """Runs Read, Glob, Grep and Bash for one session, within the limits.

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

    ``profile`` is the result profile (CONTRACT section 8): ``"exact"``, the
    seed's table, or ``"economy"``. ``context_window`` is the model's context
    in tokens and ``context_used(tokens)`` reports how much of it is in use;
    the economy profile's budgets shrink as it fills.

    ``warm`` imports every tool's module as the host starts, so no call pays
    an import; False leaves each to its tool's first call (``toolbound call``,
    whose host serves one call).
    """

    def __init__(
        self,
        workspace: str | Path = ".",
        data_dir: str | Path | None = None,
        session_id: str | None = None,
        allow_external: Iterable[str | Path] = (),
        *,
        limits: Limits = DEFAULT_LIMITS,
        sandbox: str = "off",
        network: bool = True,
        store: str | Path | None = None,
        listeners: Iterable[CallListener] = (),
        profile: str = "exact",
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
        # Where calls are recorded: ``store`` (a data dir or a postgresql:// URL),
        # else $TOOLBOUND_STORE, else the data dir.
        self.store = store_location(store, self.data_dir)
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
        self.session_id = check_session_id(session_id or f"s-{uuid.uuid4().hex[:16]}")
        self.scratch = Scratch(self.data_dir, self.session_id)
        self.roots = Roots.create(self.workspace, self.scratch.dir, allow_external)
        # What this session has Read and written: Edit and Write check it (CONTRACT section 10).
        self.read_record = ReadRecord()
        # The records of the readers that share this session (``stream(reader=...)``),
        # least recently used first.
        self._readers: collections.OrderedDict[str, ReadRecord] = collections.OrderedDict()
        self._saved_record = 0
        self._live = LiveLock(self.data_dir, self.session_id)
        self._calls: dict[str, ToolContext] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._store: SessionStore | None = None
        self._recorder: CallRecorder | None = None
        self.listeners: list[CallListener] = list(listeners)
        # Background jobs (CONTRACT section 9): they see the listeners of the moment they start.
        self.jobs = JobTable(
            session_id=self.session_id,
            limits=self.limits,
            scratch=self.scratch,
            workspace=self.workspace,
            sandbox=self.sandbox,
            listeners=self._call_listeners,
            profile=self.profile,
        )

    def _hidden(self) -> tuple[Path, ...]:
        """What no confined command sees: the data dir, the store's folder, and the
        folder of a PostgreSQL store's socket."""
        if is_url(self.store):
            return (self.data_dir, *store_socket_dirs(self.store))
        return (self.data_dir, Path(self.store).absolute())

    async def __aenter__(self) -> ToolHost:
        self._live.acquire()
        if self._warm:
            await asyncio.to_thread(import_runners)
        self._store, self._recorder = await asyncio.to_thread(self._open_store)
        if self._store is not None:
            await asyncio.to_thread(self._load_read_record, self._store)
        is_ended = self._store.is_ended if self._store is not None else (lambda _sid: False)
        await asyncio.to_thread(
            sweep,
            self.data_dir,
            stale_s=self.limits.scratch_stale_s,
            is_ended=is_ended,
            keep=frozenset({self.session_id}),
        )
        return self

    def _load_read_record(self, store: SessionStore) -> None:
        """What this session Read in an earlier host (``toolbound call`` is one per call)."""
        try:
            saved = store.read_record(self.session_id)
            if saved is not None:
                self.read_record = ReadRecord.from_json(saved)
        except (StoreUnavailable, ValueError) as err:
            log.warning(
                "toolbound: session %s starts with no read record: %s", self.session_id, err
            )
        self._saved_record = self.read_record.version
        self._follow_checkpoints(self.read_record)

    def _follow_checkpoints(self, record: ReadRecord) -> None:
        """``record`` asks this host for the session's checkpoints."""
        record.checkpoint_count = self._checkpoint_count
        record.counts_on_loop = self._recorder is not None and self._recorder.counts_on_loop

    def _checkpoint_count(self) -> int | None:
        """The session's checkpoints as the store counts them now (economy re-reads ask);
        on the event loop, through the recorder's connection that never waits."""
        store = self._store
        if store is None:
            return None
        if self._recorder is not None and self._recorder.counts_on_loop and _on_loop():
            return self._recorder.checkpoint_count(self.session_id)
        try:
            return store.checkpoint_count(self.session_id)
        except StoreUnavailable as err:
            log.warning("toolbound: the checkpoints of %s are unknown: %s", self.session_id, err)
            return None

    async def _save_read_record(self) -> None:
        """Keep the read record in the store once a call changed it."""
        store, version = self._store, self.read_record.version
        if store is None or version == self._saved_record:
            return
        try:
            await asyncio.to_thread(
                store.save_read_record, self.session_id, self.read_record.to_json()
            )
            self._saved_record = version
        except StoreUnavailable as err:
            log.warning("toolbound: the read record of %s is not kept: %s", self.session_id, err)

    def _open_store(self) -> tuple[SessionStore | None, CallRecorder | None]:
        """The session store and this session's recorder; (None, None) if unusable."""
        try:
            store = SessionStore(self.store, limits=self.limits, scratch_dir=self.data_dir)
        except StoreUnavailable as err:
            log.warning("toolbound: tool calls are not recorded (%s): %s", self.data_dir, err)
            return None, None
        try:
            # Where this session runs, for the web view's list of a fleet's sessions.
            store.note_origin(self.session_id, workspace=str(self.workspace), host=machine_name())
            return store, store.recorder(self.session_id)
        except StoreUnavailable as err:
            log.warning("toolbound: tool calls are not recorded (%s): %s", self.data_dir, err)
            store.close()
            return None, None

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
        recorder, store = self._recorder, self._store
        self._recorder = self._store = None
        if recorder is not None:
            await asyncio.to_thread(recorder.close)
        if end:
            await asyncio.to_thread(self._end_session, store)
        if store is not None:
            store.close()
        self._live.release()

    def _end_session(self, store: SessionStore | None) -> None:
        """Mark the session ended in the store (a store that fails costs the record only),
        then remove its scratch dir in any case."""
        if store is not None:
            failures: tuple[type[BaseException], ...] = (OSError, SessionError)
            try:
                store.end(self.session_id)
            except failures + store.backend.errors as err:
                log.warning("toolbound: session %s not marked ended: %s", self.session_id, err)
        self.scratch.remove()

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
        recorder = (self._recorder,) if self._recorder is not None else ()
        return (*recorder, *self.listeners)

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

    def record_of(self, reader: str | None) -> ReadRecord:
        """The read record of ``reader``: the session's own when None, else one of its
        own, so what one reader saw is never taken as seen by another (not kept in
        the store; the ``MAX_READERS`` most recent are kept)."""
        if reader is None:
            return self.read_record
        record = self._readers.get(reader)
        if record is None:
            record = ReadRecord()
            self._follow_checkpoints(record)
            self._readers[reader] = record
            while len(self._readers) > MAX_READERS:
                self._readers.popitem(last=False)
        else:
            self._readers.move_to_end(reader)
        return record

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
            profile=self.profile,
            fit=fit,
        )
        store = self._store
        if self.profile == "economy" and self.gauge.window and not self.gauge.reported and store:
            # The economy budgets follow the session's own context until the caller reports.
            await asyncio.to_thread(estimate_context, self.gauge, store, self.session_id)
        listeners = self._call_listeners()
        sink = _EventSink(asyncio.get_running_loop(), call, listeners)
        ctx = ToolContext(
            limits=self.limits,
            roots=self.roots,
            scratch=self.scratch,
            tool_call_id=call.tool_call_id,
            emit=sink.chunk,
            abort=Abort(),
            sandbox=self.sandbox,
            record=self.record_of(reader),
            profile=self.profile,
            gauge=self.gauge,
            fit=fit,
            jobs=self.jobs,
        )
        for listener in listeners:
            tell(listener, "call_started", call)
        task = asyncio.create_task(self._run(call, ctx, sink, listeners))
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

    async def _run(
        self,
        call: CallStart,
        ctx: ToolContext,
        sink: _EventSink,
        listeners: tuple[CallListener, ...],
    ) -> None:
        self._calls[ctx.tool_call_id] = ctx
        busy.begin()
        try:
            result = await self._dispatch(call.tool, call.args, ctx)
            # Kept before the result is out, so the session's next host knows this Read.
            await self._save_read_record()
            event = sink.result(result.to_wire())
        except BaseException as exc:
            # A bug, not a tool error: the consumer of the events gets the exception.
            sink.fail(exc)
            for listener in listeners:
                tell(listener, "call_ended", call, exc)
            if not isinstance(exc, Exception):
                raise
            return
        finally:
            busy.end()
            self._calls.pop(ctx.tool_call_id, None)
        try:
            await all_settled(listeners, call)
        finally:
            if event is not None:
                sink.hand_out(event)
            for listener in listeners:
                tell(listener, "call_ended", call, None)

    async def _dispatch(self, name: str, raw: object, ctx: ToolContext) -> WireModel:
        return await run_tool(name, raw, ctx)


def _on_loop() -> bool:
    """Whether the calling thread runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def estimate_context(gauge: ContextGauge, store: SessionStore, session_id: str) -> None:
    """Estimate what the context holds from the session's transcript in
    ``store``, counting on from the gauge's last estimate (blocking: run it in
    a thread). A store that cannot be read leaves no estimate."""
    failures: tuple[type[BaseException], ...] = (OSError, SessionError)
    try:
        session = store.get(session_id)
        tally = None if session is None else session.context_tally(estimate_tokens, gauge.tally)
    except failures + store.backend.errors:
        tally = None
    gauge.take_estimate(tally)


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
