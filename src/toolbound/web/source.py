"""Where the page reads calls that the hub does not hold: the session store.

``CallSource`` is what the web view needs of a store; its methods block (SQLite,
PostgreSQL) and are called in a thread, except ``follow``. The hub covers
what is live on this host, a source covers what was recorded (by any host of
a fleet sharing a PostgreSQL store), and ``merged_records`` joins the two,
the hub's view winning for a call both know (it is the fresher one while the
call runs). A call another host is running is followed live through the
store's notifications (``StoreFollower``).

Pieces:
    CallSource      the store side: sessions, a session's calls and ledger, a call's events
    StoreSource     a CallSource over ``SessionStore`` (summaries, tool_calls, ledger, events)
    merged_records  hub records + stored records -> one list, oldest first
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Iterable
from typing import Any, Protocol

from toolbound.fit import NO_FIT, Fit
from toolbound.limits import ProfileName
from toolbound.store.transcript import SessionError
from toolbound.web.calls import CallRecord
from toolbound.web.follow import StoreFollower


class CallSource(Protocol):
    """Recorded calls, read back (blocking; the app calls it in a thread)."""

    def session_rows(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """Sessions (or only ``session_id``), newest first: ``{"id", "createdAt", "endedAt",
        "workspace", "host", "toolCalls", "lastActivity", "tokens"}``."""
        ...

    def call_records(self, session_id: str) -> list[CallRecord]:
        """A session's calls, oldest first, each with the profile it was sent under."""
        ...

    def ledger(self, session_id: str) -> dict[str, Any] | None:
        """The session's context ledger (``Session.ledger``), or None if it is unknown."""
        ...

    def call_events(
        self, session_id: str, tool_call_id: str, after: int = -1
    ) -> list[dict[str, Any]] | None:
        """A call's stored events with seq > ``after`` in seq order (wire shape), or
        None if it has none (an unknown call)."""
        ...

    async def follow(
        self, session_id: str, tool_call_id: str, after: int
    ) -> AsyncIterator[dict[str, Any]] | None:
        """The call's events with seq > ``after``, live until its result where the
        store announces new ones; None if the store does not know the call."""
        ...


class _Session(Protocol):
    def ledger(self) -> dict[str, Any]: ...


class _Store(Protocol):
    """The part of ``toolbound.store.SessionStore`` the web view reads."""

    def summaries(self, *, session_id: str | None = None) -> builtins.list[Any]: ...

    def tool_calls(self, session_id: str) -> builtins.list[dict[str, Any]]: ...

    def call_profiles(self, session_id: str) -> dict[str, ProfileName]: ...

    def call_fits(self, session_id: str) -> dict[str, Fit]: ...

    def get(self, session_id: str) -> _Session | None: ...

    def events(
        self, tool_call_id: str, *, session_id: str | None = None
    ) -> builtins.list[dict[str, Any]]: ...

    def events_after(
        self, tool_call_id: str, after: int, *, session_id: str | None = None
    ) -> builtins.list[dict[str, Any]]: ...


class StoreSource:
    """Recorded sessions and calls, read back from the session store.

    With a ``follower`` (a PostgreSQL store), a call that has no result yet
    is followed live: its feed wakes on each notification of the call and
    reads the events committed after the last one it sent.
    """

    def __init__(self, store: _Store, follower: StoreFollower | None = None) -> None:
        self.store = store
        self.follower = follower

    def session_rows(self, session_id: str | None = None) -> list[dict[str, Any]]:
        return [s.to_wire() for s in self.store.summaries(session_id=session_id)]

    def call_records(self, session_id: str) -> list[CallRecord]:
        # Read after the calls, so each call read has its profile (rows are only added).
        calls = self.store.tool_calls(session_id)
        profiles = self.store.call_profiles(session_id)
        fits = self.store.call_fits(session_id)
        return [
            CallRecord(
                tool_call_id=row["toolCallId"],
                session_id=session_id,
                tool=row["tool"],
                args=row["args"],
                started_at=row["startedAt"],
                result=row["result"],
                profile=profiles.get(row["toolCallId"], "exact"),
                fit=fits.get(row["toolCallId"], NO_FIT),
            )
            for row in calls
        ]

    def ledger(self, session_id: str) -> dict[str, Any] | None:
        try:
            session = self.store.get(session_id)
        except SessionError:  # not a session id at all
            return None
        return None if session is None else session.ledger()

    def call_events(
        self, session_id: str, tool_call_id: str, after: int = -1
    ) -> list[dict[str, Any]] | None:
        if after < 0:
            return self.store.events(tool_call_id, session_id=session_id) or None
        return self.store.events_after(tool_call_id, after, session_id=session_id) or None

    async def follow(
        self, session_id: str, tool_call_id: str, after: int
    ) -> AsyncIterator[dict[str, Any]] | None:
        calls = await asyncio.to_thread(self.store.tool_calls, session_id)
        call = next((c for c in reversed(calls) if c["toolCallId"] == tool_call_id), None)
        if call is None:
            return None
        if self.follower is None or call["result"] is not None:
            stored = await asyncio.to_thread(
                self.store.events_after, tool_call_id, after, session_id=session_id
            )
            return _replay(stored)
        return self._follow(self.follower, session_id, tool_call_id, after)

    async def _follow(
        self, follower: StoreFollower, session_id: str, tool_call_id: str, after: int
    ) -> AsyncIterator[dict[str, Any]]:
        # Watch first, then read: a commit after the read wakes the watch.
        with follower.watch(session_id, tool_call_id) as watch:
            while True:
                events = await asyncio.to_thread(
                    self.store.events_after, tool_call_id, after, session_id=session_id
                )
                for event in events:
                    yield event
                    after = event["seq"]
                    if event["type"] == "result":
                        return
                await watch.changed()


async def _replay(events: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    for event in events:
        yield event


def merged_records(live: Iterable[CallRecord], stored: Iterable[CallRecord]) -> list[CallRecord]:
    """One list of calls, oldest first; a call known to both appears once, as ``live``."""
    by_id = {r.tool_call_id: r for r in stored}
    by_id.update({r.tool_call_id: r for r in live})
    return sorted(by_id.values(), key=lambda r: (r.started_at, r.tool_call_id))
