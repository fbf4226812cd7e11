"""``HostPool``: one started ``ToolHost`` per session, for a server of many sessions.

A server (the MCP server, over stdio or HTTP) keeps one host per toolbound
session: started on the session's first call, ended with the session
(``ToolHost.end``: its calls stopped, the session marked ended in the host's
own store, its scratch dir removed) or when the server stops. Which session a
request belongs to is the protocol's business; the pool only keys hosts by
session id.

Pieces:
    HostFactory  session id -> an unstarted ToolHost
    HostPool     host(), end(), aclose(); told of each host as it starts and ends
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

from toolbound.host import ToolHost

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
    _hosts: dict[str, ToolHost] = field(default_factory=dict)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def host(
        self, session_id: str, *, end_with: contextlib.AsyncExitStack | None = None
    ) -> ToolHost:
        """The started host of ``session_id``, started now if it is not running.

        A host started here is ended when ``end_with`` (the stack a connection's
        teardown unwinds) unwinds, else when the pool closes.
        """
        host = self._hosts.get(session_id)
        if host is not None:
            return host
        async with self._lock:
            host = self._hosts.get(session_id)
            if host is None:
                host = await self._start(session_id)
                if end_with is not None:
                    end_with.push_async_callback(self.end, session_id)
        return host

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
