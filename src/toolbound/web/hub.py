"""The event hub: every tool call of the attached hosts, live, for the page.

A ``Hub`` is a call listener (``toolbound.listeners``) of one or more
``ToolHost``s (``attach``, or ``ToolHost(listeners=[hub])``). It keeps each
call's record and its events in ``seq`` order, and hands them to any number
of subscribers: a subscriber first gets the events it has not seen (``after``
a seq), then each new one as the host emits it, and its feed ends with the
call's result, or with ``{"type": "failed", "toolCallId", "seq", "message"}``
when the tool crashed. Events emitted on other threads are handed to the
event loop that runs the hosts' calls, in seq order; everything here runs on
that loop and nothing blocks.

Memory stays bounded: a running call holds its events (the host's capture
ceiling bounds them); a finished call keeps them until ``retain_bytes`` of
finished events are held, oldest dropped first, after which its replay comes
from the store. Only the newest ``retain_calls`` records are kept.

Pieces:
    Hub        attach/detach hosts, the listener, records, subscribe
    event_size the bytes an event holds, for the retention budget
    kept_result the result a record keeps (an image's data is the store's)
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from toolbound.listeners import CallListener, CallStart
from toolbound.web.calls import CallRecord

if TYPE_CHECKING:
    from toolbound.host import ToolHost

CallKey = tuple[str, str]

# Finished calls' events kept in memory for replay without the store.
DEFAULT_RETAIN_BYTES = 64 * 1024 * 1024
# Finished calls' records (arguments, result) kept in memory.
DEFAULT_RETAIN_CALLS = 2000


def event_size(event: dict[str, Any]) -> int:
    """Roughly the bytes an event holds: its data (a chunk's, a job's input), or its
    result's text fields and the base64 data of an image Read."""
    if event["type"] in ("chunk", "input"):
        return len(event["data"])
    result = event.get("result") or {}
    size = sum(len(v) for v in result.values() if isinstance(v, str))
    image = result.get("image")
    if isinstance(image, dict) and isinstance(image.get("data"), str):
        size += len(image["data"])
    return size


def kept_result(result: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The result a record keeps, and whether something was left out of it.

    An image Read's base64 data (up to 5 MB of it) is left out: the newest
    ``retain_calls`` records are held whatever their size, so each must stay as
    small as the tools' budgets make a text result. The page then reads the
    call's result from the store, which keeps it whole.
    """
    image = result.get("image")
    if isinstance(image, dict) and image.get("data"):
        return {**result, "image": {**image, "data": None}}, True
    return result, False


@dataclass
class _Call:
    record: CallRecord
    events: list[dict[str, Any]] | None = field(default_factory=list)
    queues: set[asyncio.Queue[dict[str, Any]]] = field(default_factory=set)
    size: int = 0
    # The record's result leaves out what ``kept_result`` leaves out.
    partial: bool = False

    @property
    def finished(self) -> bool:
        return self.record.result is not None or self.record.failed is not None


class Hub(CallListener):
    """Sees every call of the attached hosts and feeds them to subscribers."""

    def __init__(
        self,
        *,
        retain_bytes: int = DEFAULT_RETAIN_BYTES,
        retain_calls: int = DEFAULT_RETAIN_CALLS,
    ) -> None:
        self.retain_bytes = retain_bytes
        self.retain_calls = retain_calls
        # Calls by (session id, tool call id): a call id is unique within its session.
        self._calls: dict[CallKey, _Call] = {}
        self._hosts: dict[str, ToolHost] = {}
        # The loop the hosts' calls run on (their start tells it).
        self._loop: asyncio.AbstractEventLoop | None = None
        # Finished calls, oldest first; those whose events are still held.
        self._finished: collections.deque[CallKey] = collections.deque()
        self._held: collections.deque[CallKey] = collections.deque()
        self._held_bytes = 0

    # --- hosts ----------------------------------------------------------------

    def attach(self, host: ToolHost) -> None:
        """Listen to every call ``host`` starts from now on."""
        if self not in host.listeners:
            host.listeners.append(self)
        self._hosts[host.session_id] = host

    def detach(self, host: ToolHost) -> None:
        """Stop listening to the calls ``host`` starts; its calls' records stay."""
        if self in host.listeners:
            host.listeners.remove(self)
        if self._hosts.get(host.session_id) is host:
            del self._hosts[host.session_id]

    def host_for(self, session_id: str) -> ToolHost | None:
        """The attached host serving ``session_id``, if any."""
        return self._hosts.get(session_id)

    def live_sessions(self) -> list[str]:
        return list(self._hosts)

    # --- events ---------------------------------------------------------------

    def call_started(self, call: CallStart) -> None:
        self._loop = asyncio.get_running_loop()
        record = CallRecord(
            tool_call_id=call.tool_call_id,
            session_id=call.session_id,
            tool=call.tool,
            args=call.args,
            started_at=time.time(),
            fit=call.fit,
        )
        self._calls[(record.session_id, record.tool_call_id)] = _Call(record)

    def call_event(self, call: CallStart, event: dict[str, Any]) -> None:
        # Always through the loop, even from the loop: calls made from threads
        # and from the loop then keep the one order they were made in.
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._take, call, event)

    def call_ended(self, call: CallStart, failure: BaseException | None) -> None:
        if failure is not None:
            event = {"type": "failed", "toolCallId": call.tool_call_id, "message": repr(failure)}
            self.call_event(call, event)

    def _take(self, call_start: CallStart, event: dict[str, Any]) -> None:
        """One event of a call, on the loop, in seq order."""
        call = self._calls.get((call_start.session_id, call_start.tool_call_id))
        if call is None or call.finished:
            return
        if event["type"] == "failed":
            event = {**event, "seq": call.record.last_seq + 1}
            call.record = replace(
                call.record, failed=event["message"], ended_at=time.time(), last_seq=event["seq"]
            )
        elif event["type"] == "result":
            result, call.partial = kept_result(event["result"])
            call.record = replace(
                call.record,
                result=result,
                text=event.get("text"),
                ended_at=time.time(),
                last_seq=event["seq"],
            )
        else:
            call.record = replace(call.record, last_seq=event["seq"])
        if call.events is not None:
            call.events.append(event)
            call.size += event_size(event)
        for queue in call.queues:
            queue.put_nowait(event)
        if call.finished:
            call.queues.clear()
            self._retire(call)

    def _retire(self, call: _Call) -> None:
        """A finished call joins the retention queues; the oldest are trimmed."""
        key = (call.record.session_id, call.record.tool_call_id)
        self._finished.append(key)
        self._held.append(key)
        self._held_bytes += call.size
        while self._held_bytes > self.retain_bytes and self._held:
            self._drop_events(self._held.popleft())
        while len(self._finished) > self.retain_calls:
            oldest = self._finished.popleft()
            if oldest in self._held:
                self._held.remove(oldest)
                self._drop_events(oldest)
            self._calls.pop(oldest, None)

    def _drop_events(self, key: CallKey) -> None:
        call = self._calls[key]
        self._held_bytes -= call.size
        call.events = None
        call.size = 0

    # --- reading --------------------------------------------------------------

    def records(self, session_id: str | None = None) -> list[CallRecord]:
        """The calls seen, oldest first; only ``session_id``'s when given."""
        return [
            c.record
            for c in self._calls.values()
            if session_id is None or c.record.session_id == session_id
        ]

    def record(self, session_id: str, tool_call_id: str) -> CallRecord | None:
        call = self._calls.get((session_id, tool_call_id))
        return call.record if call is not None else None

    def partial(self, session_id: str, tool_call_id: str) -> bool:
        """Whether the call's record leaves part of its result to the store."""
        call = self._calls.get((session_id, tool_call_id))
        return call is not None and call.partial

    def events(self, session_id: str, tool_call_id: str) -> list[dict[str, Any]] | None:
        """A call's events so far, or None when they are not held here."""
        call = self._calls.get((session_id, tool_call_id))
        if call is None or call.events is None:
            return None
        return list(call.events)

    def subscribe(
        self, session_id: str, tool_call_id: str, *, after: int = -1
    ) -> AsyncIterator[dict[str, Any]]:
        """The call's events with seq > ``after``, then live ones, ending with its result.

        Raises KeyError when the hub does not hold the call's events. The
        backlog is taken and the subscription registered in one step (no
        await between), so no event is missed or repeated.
        """
        call = self._calls.get((session_id, tool_call_id))
        if call is None or call.events is None:
            raise KeyError(tool_call_id)
        backlog = [e for e in call.events if e["seq"] > after]
        queue: asyncio.Queue[dict[str, Any]] | None = None
        if not call.finished:
            queue = asyncio.Queue()
            call.queues.add(queue)
        return self._feed(call, backlog, queue)

    async def _feed(
        self,
        call: _Call,
        backlog: list[dict[str, Any]],
        queue: asyncio.Queue[dict[str, Any]] | None,
    ) -> AsyncIterator[dict[str, Any]]:
        try:
            for event in backlog:
                yield event
            if queue is None:
                return
            while True:
                event = await queue.get()
                yield event
                if event["type"] in ("result", "failed"):
                    return
        finally:
            if queue is not None:
                call.queues.discard(queue)
