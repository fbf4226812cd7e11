"""``ToolHost``: dispatch a tool call, stream its events, bound its lifetime.

A call is a chain of stages: parse the arguments against the limits in force
(``TOOL_INVALID_ARGUMENT`` / ``TOOL_UNKNOWN`` on failure), run the tool as a
task, relay its chunk events in ``seq`` order, then the one result event. No
event follows the result. Cancelling the caller aborts the call and waits for
the tool to finish stopping before the cancellation goes on. Every call and its
events are recorded in the session store (the same path for every tool); a
store that cannot be opened or written costs the recording only.

Observers (``host.observers``) see every call as it happens, for live views:
a ``{"type": "call", "toolCallId", "sessionId", "tool", "args"}`` event when
a call starts, then each of its events as ``stream`` relays it (in ``seq``
order, on the event loop), including the ones a consumer that stopped early
never took. A tool that crashed ends with ``{"type": "failed", "toolCallId",
"message"}`` instead of a result event.

Pieces:
    ToolHost      the async host: call(), stream(), abort(), end(), observers
    CallObserver  the signature of an observer
    _EventSink    thread-safe, seq-numbering queue of one call's events
"""

from __future__ import annotations

import asyncio
import collections
import logging
import sqlite3
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from toolbound.bounds import newlines
from toolbound.context import ToolContext
from toolbound.exec.sandbox import SandboxPolicy
from toolbound.limits import DEFAULT_LIMITS, Limits
from toolbound.paths import Roots, default_data_dir, path_error
from toolbound.results import ChunkEvent, ResultEvent, Stream, ToolError, WireModel
from toolbound.scratch import LiveLock, Scratch, check_session_id, sweep
from toolbound.store import (
    CallRecorder,
    SchemaError,
    SessionError,
    SessionStore,
    store_location,
)
from toolbound.tools.registry import spec_for

CallObserver = Callable[[dict[str, Any]], None]

log = logging.getLogger(__name__)


class _EventSink:
    """One call's events: seq assigned at emission, under a lock, from any thread."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        tool_call_id: str,
        record: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self._loop = loop
        self._id = tool_call_id
        # Called under the lock with each chunk/result event, so records keep seq order.
        self._record = record
        self._lock = threading.Lock()
        self._seq = 0
        self._items: collections.deque[dict[str, Any]] = collections.deque()
        self._wake = asyncio.Event()
        self._closed = False

    def _push(self, make: Any) -> bool:
        with self._lock:
            if self._closed:
                return False
            item = make(self._seq)
            self._items.append(item)
            self._seq += 1
            if self._record is not None and item["type"] != "failed":
                self._record(item)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._wake.set()
        else:
            self._loop.call_soon_threadsafe(self._wake.set)
        return True

    def chunk(self, stream: Stream, data: str) -> None:
        if data:
            self._push(
                lambda seq: ChunkEvent(
                    tool_call_id=self._id, stream=stream, seq=seq, data=data
                ).to_wire()
            )

    def close(self, tool: str, result: dict[str, Any]) -> None:
        self._push(lambda seq: ResultEvent.of(tool, self._id, seq, result))
        with self._lock:
            self._closed = True

    def fail(self, exc: BaseException) -> None:
        """The tool crashed: end the events, re-raising its exception to the consumer."""
        self._push(lambda _seq: {"type": "failed", "toolCallId": self._id, "exc": exc})
        with self._lock:
            self._closed = True

    def leftovers(self) -> list[dict[str, Any]]:
        """The events no consumer took (the consumer stopped early), emptied."""
        with self._lock:
            items = list(self._items)
            self._items.clear()
        return items

    async def events(self, observe: CallObserver) -> AsyncIterator[dict[str, Any]]:
        """Yield the events in seq order, each handed to ``observe`` first."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            while True:
                with self._lock:
                    if not self._items:
                        break
                    item = self._items.popleft()
                observe(item)
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
    ) -> None:
        self.limits = limits
        # Resolved once: bwrap found (or not) now, so a call never probes PATH.
        self.sandbox = SandboxPolicy.create(sandbox, network=network)
        self.workspace = Path(workspace).resolve()
        if not self.workspace.is_dir():
            raise ValueError(f"workspace {workspace} is not a directory")
        self.data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
        self.data_dir = self.data_dir.absolute()
        # Where calls are recorded: ``store`` (a data dir or a postgresql:// URL),
        # else $TOOLBOUND_STORE, else the data dir.
        self.store = store_location(store, self.data_dir)
        self.session_id = check_session_id(session_id or f"s-{uuid.uuid4().hex[:16]}")
        self.scratch = Scratch(self.data_dir, self.session_id)
        self.roots = Roots.create(self.workspace, self.scratch.dir, allow_external)
        self._live = LiveLock(self.data_dir, self.session_id)
        self._calls: dict[str, ToolContext] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._store: SessionStore | None = None
        self._recorder: CallRecorder | None = None
        self.observers: list[CallObserver] = []

    async def __aenter__(self) -> ToolHost:
        newlines.preload()  # numpy's import, off every call's path
        self._live.acquire()
        self._store, self._recorder = await asyncio.to_thread(self._open_store)
        is_ended = self._store.is_ended if self._store is not None else (lambda _sid: False)
        await asyncio.to_thread(
            sweep,
            self.data_dir,
            stale_s=self.limits.scratch_stale_s,
            is_ended=is_ended,
            keep=frozenset({self.session_id}),
        )
        return self

    def _open_store(self) -> tuple[SessionStore | None, CallRecorder | None]:
        """The session store and this session's recorder; (None, None) if unusable."""
        try:
            store = SessionStore(self.store, limits=self.limits, scratch_dir=self.data_dir)
        except (sqlite3.Error, OSError, SchemaError) as err:
            log.warning("toolbound: tool calls are not recorded (%s): %s", self.data_dir, err)
            return None, None
        try:
            return store, store.recorder(self.session_id)
        except (sqlite3.Error, OSError, SchemaError) as err:
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
        """Abort running calls, wait for them to stop, release the session."""
        await self._close(end=False)

    async def end(self) -> None:
        """Close, and end the session: marked ended in this host's store, scratch dir removed.

        A store that cannot be written costs the record only (as for the
        recording), never the removal.
        """
        await self._close(end=True)

    async def _close(self, *, end: bool) -> None:
        for ctx in list(self._calls.values()):
            ctx.abort.set()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
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
        try:
            if store is not None:
                store.end(self.session_id)
        except (sqlite3.Error, OSError, SchemaError, SessionError) as err:
            log.warning("toolbound: session %s not marked ended: %s", self.session_id, err)
        self.scratch.remove()

    def abort(self, tool_call_id: str) -> bool:
        """Abort a running call; False if no such call is running."""
        ctx = self._calls.get(tool_call_id)
        if ctx is None:
            return False
        ctx.abort.set()
        return True

    async def call(
        self, name: str, args: object, *, tool_call_id: str | None = None
    ) -> dict[str, Any]:
        """Run a tool to completion and return its result dict."""
        result: dict[str, Any] = {}
        async for event in self.stream(name, args, tool_call_id=tool_call_id):
            if event["type"] == "result":
                result = event["result"]
        return result

    async def stream(
        self, name: str, args: object, *, tool_call_id: str | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """Yield a call's chunk events in ``seq`` order, then its result event."""
        call_id = tool_call_id or f"call_{uuid.uuid4().hex[:16]}"
        handle = self._recorder.start(call_id, name, args) if self._recorder else None
        sink = _EventSink(
            asyncio.get_running_loop(), call_id, handle.event if handle is not None else None
        )
        ctx = ToolContext(
            limits=self.limits,
            roots=self.roots,
            scratch=self.scratch,
            tool_call_id=call_id,
            emit=sink.chunk,
            abort=asyncio.Event(),
            sandbox=self.sandbox,
        )
        self._notify(
            {
                "type": "call",
                "toolCallId": call_id,
                "sessionId": self.session_id,
                "tool": name,
                "args": args,
            }
        )
        task = asyncio.create_task(self._run(name, args, ctx, sink))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            async for event in sink.events(self._notify):
                if handle is not None and event["type"] == "result":
                    # Recorded before it is returned, so a finished call replays at once.
                    await handle.settled()
                yield event
        finally:
            if not task.done():
                ctx.abort.set()
                # Always wait for the tool to finish stopping (its process tree
                # included) before a cancellation goes on.
                await asyncio.shield(asyncio.wait({task}))
            for event in sink.leftovers():
                self._notify(event)

    def _notify(self, event: dict[str, Any]) -> None:
        """Hand one event to every observer; an observer's bug never breaks the call."""
        if event["type"] == "failed":
            event = {
                "type": "failed",
                "toolCallId": event["toolCallId"],
                "message": repr(event["exc"]),
            }
        for observer in list(self.observers):
            try:
                observer(event)
            except Exception:
                log.exception("observer %r failed on a %s event", observer, event["type"])

    async def _run(self, name: str, raw: object, ctx: ToolContext, sink: _EventSink) -> None:
        self._calls[ctx.tool_call_id] = ctx
        try:
            result = await self._dispatch(name, raw, ctx)
            sink.close(name, result.to_wire())
        except Exception as exc:
            # A bug, not a tool error: the consumer of the events gets the exception.
            sink.fail(exc)
        except BaseException as exc:
            sink.fail(exc)
            raise
        finally:
            self._calls.pop(ctx.tool_call_id, None)

    async def _dispatch(self, name: str, raw: object, ctx: ToolContext) -> WireModel:
        try:
            spec = spec_for(name)
            return await spec.runner()(spec.parse(raw, self.limits), ctx)
        except ToolError as err:
            return err.to_result()
        except OSError as err:
            # The one backstop for the file system changing under a call (a race
            # another process can cause at any time): a result, never an exception.
            return path_error(err).to_result()
