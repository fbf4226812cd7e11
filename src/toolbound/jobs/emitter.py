"""A job's events to the host's call listeners: a call of its own, its own ``seq``.

The protocol is in ``toolbound.listeners`` (the part on background jobs): the
job's start is ``call_started`` for a ``CallStart`` whose ``tool_call_id`` is
the ``jobId``; its chunks are ``call_event``s numbered from 0 across both
streams; its end is one result event (the job's final output), ``settle`` and
``call_ended``. Chunks may come from both streams' reader threads at once:
``seq`` is assigned under a lock, and nothing is emitted after the result.

Pieces:
    JobEmitter  started(), chunk(), finish()
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from toolbound.listeners import CallListener, CallStart, settled, tell
from toolbound.results import ChunkEvent, ResultEvent, Stream


class JobEmitter:
    """One job's listener events, numbered and in order."""

    def __init__(self, call: CallStart, listeners: tuple[CallListener, ...]) -> None:
        self.call = call
        self._listeners = listeners
        self._lock = threading.Lock()
        self._seq = 0
        self._closed = False

    def started(self) -> None:
        """The job started (on the event loop, before any of its chunks)."""
        for listener in self._listeners:
            tell(listener, "call_started", self.call)

    def chunk(self, stream: Stream, data: str) -> None:
        """One chunk of output, from any thread; nothing once the job's result is out."""
        if not data or not self._listeners:
            return
        with self._lock:
            if self._closed:
                return
            event = ChunkEvent(
                tool_call_id=self.call.tool_call_id, stream=stream, seq=self._seq, data=data
            ).to_wire()
            self._seq += 1
            for listener in self._listeners:
                tell(listener, "call_event", self.call, event)

    async def finish(self, result: dict[str, Any]) -> None:
        """The job's result event, then each listener settled and told the call ended."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            event = ResultEvent.of(
                self.call.tool,
                self.call.tool_call_id,
                self._seq,
                result,
            )
            self._seq += 1
            for listener in self._listeners:
                tell(listener, "call_event", self.call, event)
        await asyncio.gather(*(settled(listener, self.call) for listener in self._listeners))
        for listener in self._listeners:
            tell(listener, "call_ended", self.call, None)
