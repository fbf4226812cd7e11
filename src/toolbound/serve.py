"""``toolbound serve``: the MCP server and the web view wired to a transport.

This module builds the pieces and connects them: a :class:`HostPool` making
one ``ToolHost`` per session from the serve options, the MCP server
(``toolbound.mcp_server``) over it, and, over HTTP, the web view
(``toolbound.web``) on the same port, watching the pool's hosts. It runs
them until stopped and ends every session on the way out.

Security over HTTP: ``/mcp`` needs the bearer token (:class:`BearerGuard`),
the same token as the web view's; ``toolbound serve`` refuses non-loopback
binds unless told otherwise (``cli.py``); every request, to ``/mcp`` and to
the web view, must name this server in its ``Host`` header, and in its
``Origin`` when it sends one (:class:`HostGuard`: DNS rebinding).

Over stdio the client's opening ``initialize`` may have been answered already,
before the SDK was imported (``toolbound.greeting``): the opening line is
replayed into the SDK's server and its own answer to it dropped
(:func:`spliced`); a ``server/discover`` before the first other request is
answered there too and never reaches the SDK, whose first request decides the
connection's protocol (an ``initialize`` after a discover: the older one).

Pieces:
    ServeOptions                     what and where to serve
    spliced                          the stdio streams with the opening replayed
    BearerGuard                      /mcp answers 401 without the token
    HostGuard                        403 for a Host or Origin that is not this server
    stdio_parts                      the pool, the SDK's server and the wire's own calls
    serve_stdio, serve_http, serve   run until stopped
    serve_web                        ``toolbound web``: the web view alone, over the store
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import os
import secrets
import signal
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.message import SessionMessage

from toolbound import __version__, heap
from toolbound.exec.sandbox import SandboxPolicy, describe
from toolbound.fit import FitMode
from toolbound.greeting import Opening, answers_discover, discover_result, instructions
from toolbound.host import ToolHost
from toolbound.limits import DEFAULT_LIMITS, ECONOMY, Limits, Profile
from toolbound.mcp_server import ResultShape, build_server, server_session_id
from toolbound.namespaces import token_namespace
from toolbound.pool import HostPool, HostWatcher
from toolbound.stdio_calls import StdioCalls
from toolbound.stdio_pipes import stdio_streams
from toolbound.tools.registry import import_runners

if TYPE_CHECKING:
    # Over HTTP only: stdio never imports starlette (nor uvicorn, nor the web view).
    from mcp.server import Server
    from mcp.shared._stream_protocols import ReadStream, WriteStream
    from starlette.types import ASGIApp, Receive, Scope, Send

    from toolbound.web import WebService

HTTP_PATH = "/mcp"
# Who answers tools/call over stdio (ServeOptions.stdio_calls), read once by ``serve``.
STDIO_CALLS_ENV = "TOOLBOUND_STDIO_CALLS"
StdioCallsMode = Literal["wire", "sdk"]
# How long an HTTP shutdown waits for open requests before their calls are aborted.
HTTP_SHUTDOWN_GRACE_S = 5


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """What ``toolbound serve`` serves: the places of CONTRACT section 2 and a transport.

    ``http`` is ``(host, port)``; None means stdio.
    """

    workspace: Path
    http: tuple[str, int] | None
    data_dir: Path | None = None
    allow_external: tuple[Path, ...] = ()
    limits: Limits = DEFAULT_LIMITS
    # The bearer token of /mcp and the web view (HTTP only); None draws a random one.
    token: str | None = None
    sandbox: str = "off"
    network: bool = True
    # Economy: the seed's per-result budgets exceed what harnesses take in one result.
    profile: Profile = ECONOMY
    context_window: int | None = None
    # Where the hosts record (read once from --store / $TOOLBOUND_STORE: no
    # command sees it); None: each host's data dir.
    store: str | None = None
    keep_env_back: tuple[str, ...] = ()
    allow_write: tuple[Path, ...] = ()
    protect_git: bool = False
    # Why the default workspace-write sandbox could not be built (``off`` stands in).
    sandbox_fallback: str | None = None
    # "text": a result is its model text only; "structured" (--structured): the 0.2 shape.
    shape: ResultShape = "text"
    # Each result's whole text within its client's cap ("auto"), none ("off"), or N bytes.
    fit: FitMode = "auto"
    # Over stdio, "wire": tools/call answered on the wire once initialized
    # (``toolbound.stdio_calls``); "sdk": every message through the SDK's server
    # (``$TOOLBOUND_STDIO_CALLS=sdk``, for the tests and bench/mcp.py that compare the two).
    stdio_calls: StdioCallsMode = "wire"


def _pool(
    options: ServeOptions,
    *,
    on_start: HostWatcher | None = None,
    on_end: HostWatcher | None = None,
    token: str | None = None,
) -> HostPool:
    """The hosts of the server; named sessions in ``token``'s namespace (a random
    one without a token: stdio)."""

    def make_host(session_id: str) -> ToolHost:
        return ToolHost(
            workspace=options.workspace,
            data_dir=options.data_dir,
            session_id=session_id,
            allow_external=options.allow_external,
            limits=options.limits,
            sandbox=options.sandbox,
            network=options.network,
            profile=options.profile,
            context_window=options.context_window,
            store=options.store,
            keep_env_back=options.keep_env_back,
            allow_write=options.allow_write,
            protect_git=options.protect_git,
        )

    pool = HostPool(
        make_host, default_session_id=server_session_id(), on_start=on_start, on_end=on_end
    )
    if token is not None:
        pool.namespace = token_namespace(token)
    return pool


class BearerGuard:
    """ASGI middleware: a request to ``path`` needs ``Authorization: Bearer TOKEN`` (401).

    Every other route (the web view, with its own guard) and the lifespan pass through.
    """

    def __init__(self, app: ASGIApp, *, token: str, path: str) -> None:
        self.app = app
        self.token = token.encode()
        self.path = path

    def _guarded(self, path: str) -> bool:
        return path == self.path or path.startswith(self.path + "/")

    def _authorized(self, scope: Scope) -> bool:
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, offered = value.partition(b" ")
                if scheme.lower() == b"bearer" and secrets.compare_digest(
                    offered.strip(), self.token
                ):
                    return True
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self._guarded(scope["path"]) and not self._authorized(scope):
            from starlette.responses import PlainTextResponse

            response = PlainTextResponse(
                "401: toolbound's /mcp needs the header 'Authorization: Bearer TOKEN', with "
                "the token `toolbound serve` printed at start (or $TOOLBOUND_TOKEN).\n",
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="toolbound"'},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


# The names a loopback server answers to, whatever loopback address it is bound to.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


class HostGuard:
    """ASGI middleware: an HTTP request whose ``Host`` (or ``Origin``, when sent)
    does not name this server is refused with 403, before any route sees it.

    A page on another site can make a browser send requests to a loopback port
    by rebinding its own name to 127.0.0.1; such a request carries that name in
    ``Host`` and the page's site in ``Origin``. The names a server answers to
    are the address it is bound to and, bound to loopback, ``localhost``,
    ``127.0.0.1`` and ``::1``, each at the bound port. Bound elsewhere
    (``--allow-remote``) the machine's names are not known, so ``Host`` is not
    checked, but an ``Origin`` must still name the ``Host`` it was sent to.
    """

    def __init__(self, app: ASGIApp, *, host: str, port: int, loopback: bool) -> None:
        self.app = app
        self.port = port
        self.names = (LOOPBACK_NAMES | {host}) if loopback else None

    def _ours(self, authority: str) -> bool:
        """Whether ``host[:port]`` names this server."""
        name, port = _split_authority(authority)
        if port is not None and port != self.port:
            return False
        return self.names is None or name in self.names

    def refusal(self, scope: Scope) -> str | None:
        """Why the request is refused, or None."""
        headers = dict(scope.get("headers", ()))
        host = headers.get(b"host", b"").decode("latin-1")
        if not host or not self._ours(host):
            return f"the Host header {host!r} does not name this server"
        origin = headers.get(b"origin")
        if origin is not None:
            text = origin.decode("latin-1")
            authority = text.partition("://")[2]
            if not authority or authority.lower() != host.lower() or not self._ours(authority):
                return f"the Origin {text!r} is not this server's"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            why = self.refusal(scope)
            if why is not None:
                from starlette.responses import PlainTextResponse

                response = PlainTextResponse(
                    f"403: {why}. toolbound answers only requests addressed to it (DNS "
                    "rebinding protection): use the address `toolbound serve` printed.\n",
                    status_code=403,
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _split_authority(authority: str) -> tuple[str, int | None]:
    """``host:port`` / ``[v6]:port`` / ``host`` -> (lowercase host, port or None)."""
    text = authority.strip().lower()
    if text.startswith("["):
        name, _, rest = text[1:].partition("]")
        port_text = rest.removeprefix(":")
    else:
        name, _, port_text = text.partition(":")
    if not port_text:
        return name, None
    return name, int(port_text) if port_text.isdigit() else -1


def _announce(text: str) -> None:
    sys.stderr.write(f"toolbound: {text}\n")
    sys.stderr.flush()


def _sandbox_line(options: ServeOptions) -> str:
    """The Bash sandbox in force (or why the requested one is not), for stderr."""
    policy = SandboxPolicy.create(options.sandbox, network=options.network)
    return describe(policy, fallback=options.sandbox_fallback)


async def _end_then_die(pool: HostPool, signum: int) -> None:
    """On SIGTERM/SIGINT: stop every running process tree and remove the scratch dirs,
    then die of the signal.

    Stopping the stdio loop cleanly is not possible while its reader thread
    blocks on stdin, and Bash trees live in sessions of their own, so they
    would outlive a server that just exited.
    """
    with anyio.CancelScope(shield=True):
        await pool.aclose()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def server_instructions(options: ServeOptions, sandbox_line: str) -> str:
    """The ``initialize`` result's instructions for these options."""
    return instructions(profile=options.profile.name, fit=str(options.fit), sandbox=sandbox_line)


def spliced(
    opening: Opening,
    read_stream: ReadStream[SessionMessage | Exception],
    write_stream: WriteStream[SessionMessage],
    tg: anyio.abc.TaskGroup,
    *,
    discovered: dict[str, object],
) -> tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]:
    """The streams the SDK's server runs on: ``opening`` replayed before what stdin
    brings, the early answer's duplicate dropped, and every ``server/discover`` the
    greeting would answer that comes before the SDK's first request answered with
    ``discovered`` (the greeting's result) instead of reaching the SDK."""
    inbound_send, inbound = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outbound, outbound_receive = anyio.create_memory_object_stream[SessionMessage](0)
    dropped = [opening.answered is None]

    def discover(message: object) -> types.JSONRPCResponse | None:
        if not isinstance(message, types.JSONRPCRequest):
            return None
        wire = message.model_dump(by_alias=True, mode="json", exclude_none=True)
        if not answers_discover(wire):
            return None
        return types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=discovered)

    async def replay_then_relay() -> None:
        async with inbound_send:
            try:
                first: SessionMessage | Exception = SessionMessage(
                    types.jsonrpc_message_adapter.validate_json(opening.line, by_name=False)
                )
            except ValueError as err:  # as the SDK's stdio reader passes a bad line on
                first = err
            decided = False  # the SDK has had its first request: discovers are its own
            async for item in _chain(first, read_stream):
                message = item.message if isinstance(item, SessionMessage) else None
                if not decided and (response := discover(message)) is not None:
                    await write_stream.send(SessionMessage(response))
                    continue
                decided = decided or isinstance(message, types.JSONRPCRequest)
                await inbound_send.send(item)

    async def relay_answers() -> None:
        # Ends when the server closes its side; then the transport's, so its writer ends.
        async with write_stream, outbound_receive:
            async for item in outbound_receive:
                message = item.message
                if (
                    not dropped[0]
                    and isinstance(message, types.JSONRPCResponse)
                    and message.id == opening.answered
                ):
                    dropped[0] = True  # answered early, before the SDK was there
                    continue
                await write_stream.send(item)

    tg.start_soon(replay_then_relay)
    tg.start_soon(relay_answers)
    return inbound, outbound


async def _chain(
    first: SessionMessage | Exception, rest: ReadStream[SessionMessage | Exception]
) -> AsyncIterator[SessionMessage | Exception]:
    yield first
    async with rest:
        async for item in rest:
            yield item


def stdio_parts(
    options: ServeOptions, *, instructions: str
) -> tuple[HostPool, Server[HostPool], StdioCalls | None]:
    """What ``serve --stdio`` runs: the hosts, the SDK's server over them (saying
    ``instructions``), and the wire's own answers to tools/call beside it (None when
    ``options.stdio_calls`` is "sdk")."""
    pool = _pool(options)
    server = build_server(
        pool,
        options.limits,
        options.profile,
        shape=options.shape,
        fit=options.fit,
        instructions=instructions,
    )
    if options.stdio_calls == "sdk":
        return pool, server, None
    lane = StdioCalls(pool, server, shape=options.shape, fit=options.fit)
    server.middleware.append(lane.observe)
    return pool, server, lane


async def serve_stdio(
    options: ServeOptions, *, opening: Opening | None = None, sandbox_line: str | None = None
) -> None:
    """Serve over stdin/stdout until stdin closes or SIGTERM/SIGINT arrives.

    ``opening`` is the client's first line when ``greeting.open_stdio`` read it
    (and maybe answered it); ``sandbox_line`` the sandbox's description when
    already made for that answer.
    """
    sandbox_line = sandbox_line or _sandbox_line(options)
    _announce(sandbox_line)
    said = server_instructions(options, sandbox_line)
    pool, server, lane = stdio_parts(options, instructions=said)
    async with anyio.create_task_group() as tg:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for signum in signals:
                    await _end_then_die(pool, signum)

        async def run() -> None:
            async with (
                stdio_streams(lane=lane) as (read_stream, write_stream),
                anyio.create_task_group() as relays,
            ):
                if opening is not None:
                    discovered = discover_result(version=__version__, instructions=said)
                    read_stream, write_stream = spliced(
                        opening, read_stream, write_stream, relays, discovered=discovered
                    )
                heap.freeze_startup()  # full collections then skip start-up's objects
                await server.run(read_stream, write_stream, server.create_initialization_options())
            tg.cancel_scope.cancel()

        tg.start_soon(stop_on_signal)
        tg.start_soon(run)


async def serve_http(options: ServeOptions, host: str, port: int) -> None:
    """Serve streamable HTTP on ``host:port`` at ``/mcp``; announce the URL on stderr.

    The socket is bound before the URL is announced, so a client may connect
    as soon as it reads it (port 0 picks a free port). The web view
    (``toolbound.web``) shares the port; its URL, with its token, is announced
    on the next line, then the header MCP clients send: ``/mcp`` answers 401
    without that same token (:class:`BearerGuard`).
    """
    web = _open_web(options, store=options.store)
    sandbox_line = _sandbox_line(options)
    server = build_server(
        _pool(options, on_start=web.attach, on_end=web.detach, token=web.token),
        options.limits,
        options.profile,
        shape=options.shape,
        fit=options.fit,
        instructions=server_instructions(options, sandbox_line),
    )
    # The web view shares the port: its page, API and event streams beside /mcp.
    app = server.streamable_http_app(
        streamable_http_path=HTTP_PATH, host=host, custom_starlette_routes=web.routes()
    )

    def announce(bound_host: str, bound_port: int) -> list[str]:
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        return [
            f"MCP server on http://{shown}:{bound_port}{HTTP_PATH} (workspace {options.workspace})",
            f"web view on {web.url(bound_host, bound_port)}",
            f"MCP clients send the header 'Authorization: Bearer {web.token}'",
            sandbox_line,
        ]

    guarded = BearerGuard(app, token=web.token, path=HTTP_PATH)
    await _run_http(guarded, host, port, web, lifespan="on", announce=announce)


async def serve_web(options: ServeOptions, host: str, port: int, *, store: str | None) -> None:
    """``toolbound web``: the web view alone, over the store (CONTRACT section 13).

    No MCP server and no host of its own: it lists every session recorded in
    the store (``store``, else ``$TOOLBOUND_STORE``, else the data dir's), replays
    their calls, and follows running calls of a shared PostgreSQL store live.
    "Open full output" reads through the Read tool with the roots of
    ``options``. The token rules are ``serve``'s: printed at start, or
    ``$TOOLBOUND_TOKEN``.
    """
    from starlette.applications import Starlette

    web = _open_web(options, store=store)

    def announce(bound_host: str, bound_port: int) -> list[str]:
        return [f"web view on {web.url(bound_host, bound_port)}"]

    app = Starlette(routes=web.routes())
    await _run_http(app, host, port, web, lifespan="off", announce=announce)


def _open_web(options: ServeOptions, *, store: str | None) -> WebService:
    from toolbound.web import WebService

    return WebService.open(
        workspace=options.workspace,
        data_dir=options.data_dir,
        allow_external=options.allow_external,
        limits=options.limits,
        token=options.token,
        store_url=store,
    )


async def _run_http(
    app: ASGIApp,
    host: str,
    port: int,
    web: WebService,
    *,
    lifespan: Literal["on", "off"],
    announce: Callable[[str, int], list[str]],
) -> None:
    """Bind first, announce the lines for the bound address, serve until stopped."""
    import uvicorn

    from toolbound.web.server import listen

    sock = listen(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    loopback = ipaddress.ip_address(bound_host).is_loopback
    config = uvicorn.Config(
        HostGuard(app, host=bound_host, port=bound_port, loopback=loopback),
        host=host,
        port=port,
        log_level="warning",
        lifespan=lifespan,
        timeout_graceful_shutdown=HTTP_SHUTDOWN_GRACE_S,
    )
    heap.freeze_startup()  # full collections then skip start-up's objects (toolbound.heap)
    for line in announce(bound_host, bound_port):
        _announce(line)
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        web.close()


def serve(
    options: ServeOptions, *, opening: Opening | None = None, sandbox_line: str | None = None
) -> int:
    """Run the server until stopped; the exit status of ``toolbound serve``.

    Over stdio, ``opening`` and ``sandbox_line`` are ``serve_stdio``'s.
    """
    import_runners()  # before the first request: no session's first call pays an import
    if options.http is None:
        if os.environ.pop(STDIO_CALLS_ENV, None) == "sdk":
            options = dataclasses.replace(options, stdio_calls="sdk")
        asyncio.run(serve_stdio(options, opening=opening, sandbox_line=sandbox_line))
    else:
        asyncio.run(serve_http(options, *options.http))
    return 0
