"""One call's events to its listeners (and its consumer): numbered, in order, from any thread.

The protocol is in ``toolbound.listeners``. A call's events are its chunks,
a job's input (``input``: what the agent wrote to a background job's stdin)
and one result event, numbered by ``seq`` from 0 in the order they were
emitted, under a lock (chunks come from both streams' readers at once).
Nothing is emitted after the result. A foreground call also has a consumer
(the host's ``stream``): each chunk is queued for it as it is emitted, and the
result handed to it once the listeners settled. A background job's events go
to the listeners only, the job being a call of its own (its ``jobId``).

Pieces:
    CallEvents  started(), chunk(), input(), result(), settle(), finish(); events()
"""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from toolbound.listeners import CallListener, CallStart, all_settled, tell
from toolbound.results import ChunkEvent, ResultEvent, Stream


class CallEvents:
    """One call's events: seq assigned at emission, under a lock, from any thread.

    Each event goes to the call's listeners as it is emitted (under the lock, so
    in seq order). With a consumer ``loop``, chunks are also queued for the
    consumer of ``events``, and the result event is handed to it separately
    (``hand_out``), once the listeners settled.
    """

    def __init__(
        self,
        call: CallStart,
        listeners: tuple[CallListener, ...],
        *,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self._call = call
        self._listeners = listeners
        self._loop = loop
        self._lock = threading.Lock()
        self._seq = 0
        self._items: collections.deque[dict[str, Any]] = collections.deque()
        self._wake = asyncio.Event()
        self._closed = False

    @property
    def call(self) -> CallStart:
        return self._call

    def started(self) -> None:
        """The call started (on the event loop, before any of its events)."""
        for listener in self._listeners:
            tell(listener, "call_started", self._call)

    def _emit(
        self, make: Callable[[int], dict[str, Any]], *, queue: bool, last: bool = False
    ) -> dict[str, Any] | None:
        """Number the event, tell the listeners, queue it for the consumer if ``queue``.

        None once the call's result is out; ``last`` (the result) closes the events.
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
        loop = self._loop
        if loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._wake.set()
        else:
            loop.call_soon_threadsafe(self._wake.set)

    def chunk(self, stream: Stream, data: str) -> None:
        """One chunk of output, from any thread; nothing once the result is out."""
        if not data or (self._loop is None and not self._listeners):
            return
        tool_call_id = self._call.tool_call_id
        self._emit(
            lambda seq: ChunkEvent(
                tool_call_id=tool_call_id, stream=stream, seq=seq, data=data
            ).to_wire(),
            queue=self._loop is not None,
        )

    def input(self, data: str, *, close: bool = False) -> None:
        """What was written to a job's stdin (``close``: its stdin closed after it):
        ``{"type": "input", "toolCallId", "seq", "data", "close"}``, to the listeners."""
        tool_call_id = self._call.tool_call_id
        self._emit(
            lambda seq: {
                "type": "input",
                "toolCallId": tool_call_id,
                "seq": seq,
                "data": data,
                "close": close,
            },
            queue=False,
        )

    def result(self, result: dict[str, Any]) -> dict[str, Any] | None:
        """Emit the result event (to the listeners, not yet the consumer); no event follows.

        ``result`` is the tool's result model's ``to_wire()`` dict.
        """
        call = self._call
        return self._emit(
            lambda seq: ResultEvent.of(
                call.tool,
                call.tool_call_id,
                seq,
                result,
                fit=call.fit,
                wire=True,
            ),
            queue=False,
            last=True,
        )

    async def finish(self, result: dict[str, Any]) -> None:
        """The result event, then ``settle``."""
        await self.settle(self.result(result))

    async def settle(self, event: dict[str, Any] | None) -> None:
        """After the result ``event``: each listener settled, the consumer handed the
        result, and each listener told the call ended."""
        try:
            await all_settled(self._listeners, self._call)
        finally:
            if event is not None and self._loop is not None:
                self.hand_out(event)
            for listener in self._listeners:
                tell(listener, "call_ended", self._call, None)

    def hand_out(self, item: dict[str, Any]) -> None:
        """The result event, to the consumer: the last event it gets."""
        self._queue(item)

    def fail(self, exc: BaseException) -> None:
        """The tool crashed: end the events, re-raising its exception to the consumer."""
        with self._lock:
            self._closed = True
        self._queue({"type": "failed", "toolCallId": self._call.tool_call_id, "exc": exc})
        for listener in self._listeners:
            tell(listener, "call_ended", self._call, exc)

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
