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
stay, and its session's next request starts a host for it again. When no host
can make room the new session is refused (``TOOL_INVALID_ARGUMENT``), with the
counts that say why.

Named sessions (``named=True``: sessions a sessionless request names, all of
one namespace, so of one token) hold at most ``max_named`` of the hosts, so a
token holder naming session after session can never lock MCP sessions out;
and a named session idle for ``named_idle_end_s`` is ended (its scratch dir
removed), checked as the pool is next used.

Pieces:
    HostFactory  session id -> an unstarted ToolHost
    HostPool     host(), end(), aclose(); told of each host as it starts and ends
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import anyio

from toolbound.host import ToolHost
from toolbound.results import ErrorCode, ToolError

# The most hosts a server runs at once, and how long a host handed out stays
# unrested (the caller is about to start its call).
MAX_HOSTS = 64
REST_AFTER_S = 5.0
# The share of them named sessions may hold, and how long a named session may
# stay idle (no call, no job running) before it is ended.
MAX_NAMED_HOSTS = 32
NAMED_IDLE_END_S = 1800.0
# How often the pool looks for idle named sessions to end.
IDLE_CHECK_S = 30.0

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
    max_named: int = MAX_NAMED_HOSTS
    named_idle_end_s: float = NAMED_IDLE_END_S
    idle_check_s: float = IDLE_CHECK_S
    # The namespace of the sessions that requests name (mcp_server.named_session_id).
    namespace: str = field(default_factory=lambda: secrets.token_hex(6))
    _hosts: dict[str, ToolHost] = field(default_factory=dict)
    # The running hosts of named sessions, and when idle ones were last looked for.
    _named: set[str] = field(default_factory=set)
    _idle_checked: float = 0.0
    # When host() last handed out each session's host (monotonic seconds).
    _used: dict[str, float] = field(default_factory=dict)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def host(
        self,
        session_id: str,
        *,
        end_with: contextlib.AsyncExitStack | None = None,
        named: bool = False,
    ) -> ToolHost:
        """The started host of ``session_id``, started now if it is not running.

        A host started here is ended when ``end_with`` (the stack a connection's
        teardown unwinds) unwinds, else when the pool closes. ``named``: a session
        a sessionless request names (bounded to ``max_named``, ended when idle).
        """
        now = time.monotonic()
        if self._named and now - self._idle_checked >= self.idle_check_s:
            self._idle_checked = now
            await self._end_idle_named(keep=session_id)
        host = self._hosts.get(session_id)
        if host is None:
            async with self._lock:
                host = self._hosts.get(session_id)
                if host is None:
                    if named:
                        await self._make_room(self._named, self.max_named, "named sessions")
                    await self._make_room(self._hosts, self.max_hosts, "sessions")
                    host = await self._start(session_id)
                    if named:
                        self._named.add(session_id)
                    if end_with is not None:
                        end_with.push_async_callback(self.end, session_id)
        self._used[session_id] = time.monotonic()
        return host

    async def _end_idle_named(self, *, keep: str) -> None:
        """End the named sessions idle (no call, no job) for ``named_idle_end_s``."""
        now = time.monotonic()
        for sid in list(self._named):
            host = self._hosts.get(sid)
            if sid == keep or host is None or host.busy:
                continue
            if now - self._used.get(sid, now) >= self.named_idle_end_s:
                await self.end(sid)

    async def _make_room(self, among: Collection[str], bound: int, what: str) -> None:
        """Below ``bound`` hosts ``among`` before a host starts: rest the least recently
        used idle one of them; refuse, saying why, when none is idle."""
        while len(among) >= bound:
            now = time.monotonic()
            hosts = [(sid, self._hosts[sid]) for sid in among]
            busy = sum(1 for _sid, host in hosts if host.busy)
            idle = [
                sid
                for sid, host in hosts
                if not host.busy and now - self._used.get(sid, 0.0) >= self.rest_after_s
            ]
            if not idle:
                raise ToolError(ErrorCode.INVALID_ARGUMENT, self._full(what, bound, busy))
            await self._rest(min(idle, key=lambda sid: self._used.get(sid, 0.0)))

    def _full(self, what: str, bound: int, busy: int) -> str:
        """The refusal of a new session: which bound, and why no host could make room."""
        share = (
            f" (named sessions may hold {self.max_named} of the server's {self.max_hosts} "
            "hosts, so MCP sessions always find room)"
            if what == "named sessions"
            else ""
        )
        recent = bound - busy
        return (
            f"This server already runs {bound} {what}, the most it runs at once{share}; "
            f"{busy} of them have a call or a background job running and {recent} were "
            f"used in the last {self.rest_after_s:g} s, so none could make room. Try again "
            "in a few seconds, stop background jobs (JobStop), or reuse a session you "
            "already named."
        )

    async def _rest(self, session_id: str) -> None:
        """Close an idle host without ending its session (scratch dir and records kept)."""
        host = self._hosts.pop(session_id)
        self._used.pop(session_id, None)
        self._named.discard(session_id)
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
        self._named.discard(session_id)
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
