"""``HostPool``: one started ``ToolHost`` per session, for a server of many sessions.

A server (the MCP server, over stdio or HTTP) keeps one host per toolbound
session: started on the session's first call, ended with the session
(``ToolHost.end``: its calls stopped, the session marked ended in the host's
own store, its scratch dir removed) or when the server stops. Which session a
request belongs to is the protocol's business; the pool only keys hosts by
session id.

The pool is bounded: at most ``max_hosts`` hosts run at once. Sessionless
requests may name any number of sessions and never say when one is over, so
a new session past the bound first rests the least recently used host that is
idle (no call or job running, none handed out in the last ``rest_after_s``):
it is closed, not ended, so its scratch dir (spill files) and its read record
stay, and its session's next request starts a host for it again. When every
host is busy the new session is refused (``TOOL_INVALID_ARGUMENT``).

Pieces:
    HostFactory  session id -> an unstarted ToolHost
    HostPool     host(), end(), aclose(); told of each host as it starts and ends
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

from toolbound.host import ToolHost
from toolbound.results import ErrorCode, ToolError

# The most hosts a server runs at once, and how long a host handed out stays
# unrested (the caller is about to start its call).
MAX_HOSTS = 64
REST_AFTER_S = 5.0

HostFactory = Callable[[str], ToolHost]

HostWatcher = Callable[[ToolHost], None]


@dataclass
class HostPool:
    """Started hosts by session id; ``on_start``/``on_end`` watch them (the web view does)."""

    make_host: HostFactory
    # The session of requests that name none (the server's own).
    default_session_id: str
    on_start: HostWatcher | None = None
    on_end: HostWatcher | None = None
    max_hosts: int = MAX_HOSTS
    rest_after_s: float = REST_AFTER_S
    _hosts: dict[str, ToolHost] = field(default_factory=dict)
    # When host() last handed out each session's host (monotonic seconds).
    _used: dict[str, float] = field(default_factory=dict)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def host(
        self, session_id: str, *, end_with: contextlib.AsyncExitStack | None = None
    ) -> ToolHost:
        """The started host of ``session_id``, started now if it is not running.

        A host started here is ended when ``end_with`` (the stack a connection's
        teardown unwinds) unwinds, else when the pool closes.
        """
        host = self._hosts.get(session_id)
        if host is None:
            async with self._lock:
                host = self._hosts.get(session_id)
                if host is None:
                    await self._make_room()
                    host = await self._start(session_id)
                    if end_with is not None:
                        end_with.push_async_callback(self.end, session_id)
        self._used[session_id] = time.monotonic()
        return host

    async def _make_room(self) -> None:
        """Below ``max_hosts`` before a host starts: rest the least recently used idle one."""
        while len(self._hosts) >= self.max_hosts:
            now = time.monotonic()
            idle = [
                sid
                for sid, host in self._hosts.items()
                if not host.busy and now - self._used.get(sid, 0.0) >= self.rest_after_s
            ]
            if not idle:
                raise ToolError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"This server runs {len(self._hosts)} sessions already, each with a call "
                    "or a background job running; wait for one to finish, stop its jobs "
                    "(JobStop), or end a session, then try again.",
                )
            await self._rest(min(idle, key=lambda sid: self._used.get(sid, 0.0)))

    async def _rest(self, session_id: str) -> None:
        """Close an idle host without ending its session (scratch dir and records kept)."""
        host = self._hosts.pop(session_id)
        self._used.pop(session_id, None)
        try:
            with anyio.CancelScope(shield=True):
                await host.aclose()
        finally:
            if self.on_end is not None:
                self.on_end(host)

    async def _start(self, session_id: str) -> ToolHost:
        host = self.make_host(session_id)
        await host.__aenter__()
        self._hosts[session_id] = host
        if self.on_start is not None:
            self.on_start(host)
        return host

    async def end(self, session_id: str) -> None:
        """Stop the session's running calls, end it in the store, remove its scratch dir."""
        host = self._hosts.pop(session_id, None)
        self._used.pop(session_id, None)
        if host is None:
            return
        try:
            # Shielded: the SDK bounds a connection's teardown and may cancel it,
            # and the session must still be ended.
            with anyio.CancelScope(shield=True):
                await host.end()
        finally:
            # After the calls stopped: the watchers see the aborted calls' results.
            if self.on_end is not None:
                self.on_end(host)

    async def aclose(self) -> None:
        """End every session (the server is stopping)."""
        for session_id in list(self._hosts):
            await self.end(session_id)
