"""Where the page reads calls that the hub no longer holds: the session store.

``CallSource`` is what the web view needs of a store; its methods block (SQLite)
and are called in a thread. The hub covers what is live, a source covers
what was recorded, and ``merged_records`` joins the two, the hub's view
winning for a call both know (it is the fresher one while the call runs).

Pieces:
    CallSource      the store side: sessions, a session's calls, a call's events
    StoreSource     a CallSource over ``SessionStore`` (list, tool_calls, events)
    merged_records  hub records + stored records -> one list, oldest first
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import Any, Protocol

from toolbound.web.calls import CallRecord


class CallSource(Protocol):
    """Recorded calls, read back (blocking; the app calls it in a thread)."""

    def session_rows(self) -> list[dict[str, Any]]:
        """Sessions, newest first: ``{"id", "createdAt", "endedAt"}``."""
        ...

    def call_records(self, session_id: str) -> list[CallRecord]:
        """A session's calls, oldest first."""
        ...

    def call_events(self, session_id: str, tool_call_id: str) -> list[dict[str, Any]] | None:
        """A call's stored events in seq order (wire shape), or None if unknown."""
        ...


class _Store(Protocol):
    """The part of ``toolbound.store.SessionStore`` the web view reads."""

    def list(self) -> builtins.list[Any]: ...

    def tool_calls(self, session_id: str) -> builtins.list[dict[str, Any]]: ...

    def events(
        self, tool_call_id: str, *, session_id: str | None = None
    ) -> builtins.list[dict[str, Any]]: ...


class StoreSource:
    """Recorded sessions and calls, read back from the session store."""

    def __init__(self, store: _Store) -> None:
        self.store = store

    def session_rows(self) -> list[dict[str, Any]]:
        return [
            {"id": info.id, "createdAt": info.created_at, "endedAt": info.ended_at}
            for info in reversed(self.store.list())
        ]

    def call_records(self, session_id: str) -> list[CallRecord]:
        return [
            CallRecord(
                tool_call_id=row["toolCallId"],
                session_id=session_id,
                tool=row["tool"],
                args=row["args"],
                started_at=row["startedAt"],
                result=row["result"],
            )
            for row in self.store.tool_calls(session_id)
        ]

    def call_events(self, session_id: str, tool_call_id: str) -> list[dict[str, Any]] | None:
        return self.store.events(tool_call_id, session_id=session_id) or None


def merged_records(live: Iterable[CallRecord], stored: Iterable[CallRecord]) -> list[CallRecord]:
    """One list of calls, oldest first; a call known to both appears once, as ``live``."""
    by_id = {r.tool_call_id: r for r in stored}
    by_id.update({r.tool_call_id: r for r in live})
    return sorted(by_id.values(), key=lambda r: (r.started_at, r.tool_call_id))
