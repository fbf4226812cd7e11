"""Call listeners: whatever must see a host's tool calls as they happen.

A ``CallListener`` is handed to ``ToolHost(listeners=...)`` (the session
store's recorder and the web view's hub are two). For each call it is told,
in this order:

1. ``call_started(call)`` when the call starts, on the event loop;
2. ``call_event(call, event)`` for each chunk event and then the result
   event, producer-side: where the event is emitted (a reader thread or the
   event loop), under the call's lock, so in ``seq`` order, whether or not
   anyone consumes the call's stream;
3. ``settle(call)``, awaited before the result is handed out (a recorder
   waits until the result is stored, so a finished call replays at once);
4. ``call_ended(call, failure)`` when the call ended: ``failure`` is the
   exception of a tool that crashed (no result event came), else None.

Events of a call may follow its result (a background job keeps streaming
after its starting call returned) until ``call_ended``. Every method but
``settle`` must return at once (queue the work, never wait); an exception in
a listener is logged and costs that listener only, never the call.

Pieces:
    CallStart     who a call is: session, call id, tool, arguments, profile
    CallListener  the listener protocol, every method a no-op by default
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolbound.model_text import Profile


@dataclass(frozen=True, slots=True)
class CallStart:
    """One tool call as it started."""

    session_id: str
    tool_call_id: str
    tool: str
    args: object
    # The result profile the call ran under: its result event's text is rendered for it.
    profile: Profile = "exact"


class CallListener:
    """Sees calls start, their events, and their end; override what you need."""

    def call_started(self, call: CallStart) -> None:
        """The call started (on the event loop, before any of its events)."""

    def call_event(self, call: CallStart, event: dict[str, Any]) -> None:
        """One chunk or result wire event, in ``seq`` order, from any thread."""

    async def settle(self, call: CallStart) -> None:
        """Awaited after the result event and before the result is handed out."""

    def call_ended(self, call: CallStart, failure: BaseException | None) -> None:
        """The call ended; ``failure`` is a crashed tool's exception, else None."""
