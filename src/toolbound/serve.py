"""``toolbound serve``: the MCP server and the web view wired to a transport.

This module builds the pieces and connects them: a :class:`HostPool` making
one ``ToolHost`` per session from the serve options, the MCP server
(``toolbound.mcp_server``) over it, and, over HTTP, the web view
(``toolbound.web``) on the same port, watching the pool's hosts. It runs
them until stopped and ends every session on the way out.

Security over HTTP: ``/mcp`` needs the bearer token (:class:`BearerGuard`),
the same token as the web view's; ``toolbound serve`` refuses non-loopback
binds unless told otherwise (``cli.py``).

Pieces:
    ServeOptions                     what and where to serve
    BearerGuard                      /mcp answers 401 without the token
    serve_stdio, serve_http, serve   run until stopped
    serve_web                        ``toolbound web``: the web view alone, over the store
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import anyio
from mcp.server.stdio import stdio_server
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from toolbound.exec.sandbox import SandboxPolicy, describe
from toolbound.fit import FitMode
from toolbound.host import ToolHost
from toolbound.limits import DEFAULT_LIMITS, Limits
from toolbound.mcp_server import ResultShape, build_server, server_session_id
from toolbound.model_text import Profile
from toolbound.pool import HostPool, HostWatcher
from toolbound.tools.registry import import_runners

if TYPE_CHECKING:
    from toolbound.web import WebService

HTTP_PATH = "/mcp"
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
    profile: Profile = "economy"
    context_window: int | None = None
    # "text": a result is its model text only; "structured" (--structured): the 0.2 shape.
    shape: ResultShape = "text"
    # Each result's whole text within its client's cap ("auto"), none ("off"), or N bytes.
    fit: FitMode = "auto"


def _pool(
    options: ServeOptions, *, on_start: HostWatcher | None = None, on_end: HostWatcher | None = None
) -> HostPool:
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
        )

    return HostPool(
        make_host, default_session_id=server_session_id(), on_start=on_start, on_end=on_end
    )


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
            response = PlainTextResponse(
                "401: toolbound's /mcp needs the header 'Authorization: Bearer TOKEN', with "
                "the token `toolbound serve` printed at start (or $TOOLBOUND_TOKEN).\n",
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="toolbound"'},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _announce(text: str) -> None:
    sys.stderr.write(f"toolbound: {text}\n")
    sys.stderr.flush()


def _sandbox_line(options: ServeOptions) -> str:
    """The Bash sandbox in force (or why the requested one is not), for stderr."""
    return describe(SandboxPolicy.create(options.sandbox, network=options.network))


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


async def serve_stdio(options: ServeOptions) -> None:
    """Serve over stdin/stdout until stdin closes or SIGTERM/SIGINT arrives."""
    _announce(_sandbox_line(options))
    pool = _pool(options)
    server = build_server(
        pool, options.limits, options.profile, shape=options.shape, fit=options.fit
    )
    async with anyio.create_task_group() as tg:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for signum in signals:
                    await _end_then_die(pool, signum)

        async def run() -> None:
            async with stdio_server() as (read_stream, write_stream):
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
    web = _open_web(options, store=None)
    server = build_server(
        _pool(options, on_start=web.attach, on_end=web.detach),
        options.limits,
        options.profile,
        shape=options.shape,
        fit=options.fit,
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
            _sandbox_line(options),
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

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan=lifespan,
        timeout_graceful_shutdown=HTTP_SHUTDOWN_GRACE_S,
    )
    sock = listen(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    for line in announce(bound_host, bound_port):
        _announce(line)
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        web.close()


def serve(options: ServeOptions) -> int:
    """Run the server until stopped; the exit status of ``toolbound serve``."""
    import_runners()  # before the first request: no session's first call pays an import
    if options.http is None:
        asyncio.run(serve_stdio(options))
    else:
        asyncio.run(serve_http(options, *options.http))
    return 0
