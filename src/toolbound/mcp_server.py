"""``toolbound serve``: the four tools to any MCP client (CONTRACT section 6).

A thin adapter over :class:`ToolHost` on the official ``mcp`` SDK's low-level
``Server`` (the tools have hand-written schemas, not typed functions). It only
translates: tool definitions into MCP tools, a result dict into
``structuredContent`` plus one text block, Bash chunk events into progress
notifications, an MCP cancellation into an abort. Nothing here decides what
the model sees; ``bounds/`` and the tools did that already.

Importing this module imports ``mcp`` (about 2 s), so only ``toolbound
serve`` imports it; ``toolbound call`` never does.

Sessions: each MCP session is one toolbound session with its own
``ToolHost`` (which records its calls in the session store), whose id is
derived from the MCP session id (``mcp-<id>``). When the MCP session ends
(client DELETE, idle timeout, server shutdown) it is ended in the store and
its scratch dir is removed. A request without an MCP session id (stdio, where
the process is the session; the sessionless 2026-07-28 HTTP exchange) names
its toolbound session with ``_meta["toolbound/session"]``: each name is a
host of its own (calls, scratch dir, spill files), ended when the server
stops. Requests naming none share the server's own session.

Security over HTTP: ``/mcp`` needs the bearer token (:class:`BearerGuard`),
the same token as the web view's; ``toolbound serve`` refuses non-loopback
binds unless told otherwise (``cli.py``).

Pieces:
    ServeOptions     what and where to serve
    output_schema    a tool's results (success or error) as JSON schema
    mcp_tools        the tool definitions as MCP tools, with output schemas
    payload_text     result dict -> the model-facing text block
    call_result      result dict -> CallToolResult (a tool error or timeout: isError)
    named_session    the toolbound session a sessionless request names
    Sessions         one ToolHost per MCP session or named session; ended with it
    run_call         one call: chunks relayed, cancellation -> abort
    build_server     the low-level Server with its list/call handlers
    BearerGuard      /mcp answers 401 without the token
    serve_stdio, serve_http, serve   run until stopped
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import re
import secrets
import signal
import sqlite3
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from pydantic import TypeAdapter
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from toolbound import __version__
from toolbound.exec.sandbox import SandboxPolicy, describe
from toolbound.exec.shield import wait_stopped
from toolbound.host import ToolHost
from toolbound.limits import DEFAULT_LIMITS, Limits
from toolbound.results import (
    BashResult,
    ErrorCode,
    ErrorResult,
    GlobResult,
    GrepContentResult,
    GrepCountResult,
    GrepFilesResult,
    ReadResult,
    ToolError,
    is_error,
)
from toolbound.scratch import SessionIdError, check_session_id
from toolbound.store import SchemaError, SessionStore
from toolbound.tooldefs import tool_defs

log = logging.getLogger(__name__)

HTTP_PATH = "/mcp"
# How long an HTTP shutdown waits for open requests before their calls are aborted.
HTTP_SHUTDOWN_GRACE_S = 5

# The progress notification `_meta` key that carries a chunk's stream and seq.
CHUNK_META_KEY = "toolbound/chunk"
# The request `_meta` key by which a sessionless request names its toolbound session.
SESSION_META_KEY = "toolbound/session"


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


# --- tool definitions ---------------------------------------------------------

_RESULT_TYPES: dict[str, Any] = {
    "Read": ReadResult,
    "Glob": GlobResult,
    "Grep": GrepContentResult | GrepFilesResult | GrepCountResult,
    "Bash": BashResult,
}


def output_schema(name: str) -> dict[str, Any]:
    """The JSON schema of a tool's results, as ``to_wire()`` emits them: its success
    model(s) or the error shape ``{"error": {"code", "message"}}``.

    Errors are covered because clients validate ``structuredContent`` whether or
    not ``isError`` is set (the TypeScript SDK 1.x does, and throws otherwise).
    """
    union = _RESULT_TYPES[name] | ErrorResult
    schema = TypeAdapter(union).json_schema(by_alias=True, mode="serialization")
    # MCP before 2026-07-28 wants an object schema at the root, union or not.
    return {"type": "object", **schema}


def mcp_tools(limits: Limits) -> list[types.Tool]:
    """The four definitions (schema, description, annotations) plus output schemas."""
    return [
        types.Tool.model_validate(
            {**d.render("mcp"), "outputSchema": output_schema(d.name)}, by_name=False
        )
        for d in tool_defs(limits)
    ]


# --- results ------------------------------------------------------------------


def _lines_text(lines: list[str], notice: str | None, *, empty: str) -> str:
    body = "\n".join(lines) if lines else empty
    return f"{body}\n[{notice}]" if notice else body


def _joined(*parts: str) -> str:
    """Concatenate texts, each starting on a new line."""
    out = ""
    for part in parts:
        if not part:
            continue
        if out and not out.endswith("\n"):
            out += "\n"
        out += part
    return out


def _bash_status(result: dict[str, Any]) -> str:
    """How the run ended, one bracketed line, then the tool's notice (which says why)."""
    if result["timedOut"]:
        status = "[timed out]"
    elif result["aborted"]:
        status = "[aborted]"
    elif result["exitCode"] is not None:
        status = f"[exit status {result['exitCode']}]"
    else:
        status = f"[killed by signal {result['signal']}]"
    notice = result.get("notice")
    return f"{status}\n[{notice}]" if notice else status


def payload_text(name: str, result: dict[str, Any]) -> str:
    """The model-facing text of a result (markers are already in the strings).

    Read: the file's text, then its notice when the window was bounded. Glob and
    Grep: one entry per line (``path:line:text``, ``path``, ``path:count``),
    then the notice. Bash: stdout, then stderr, then the exit status or
    timeout. An error: ``CODE: message``.
    """
    if "error" in result:
        return f"{result['error']['code']}: {result['error']['message']}"
    notice = result.get("notice")
    if name == "Read":
        # The content stays byte-faithful; the notice (next offset) follows it.
        return _joined(result["content"], f"[{notice}]" if notice else "")
    if name == "Glob":
        return _lines_text(result["matches"], notice, empty="No files matched.")
    if name == "Grep":
        if "matches" in result:
            lines = [
                f"{m['path']}{(s := '-' if m.get('context') else ':')}{m['line']}{s}{m['text']}"
                for m in result["matches"]
            ]
        elif "files" in result:
            lines = list(result["files"])
        else:
            lines = [f"{c['path']}:{c['count']}" for c in result["counts"]]
        return _lines_text(lines, notice, empty="No matches.")
    return _joined(result["stdout"], result["stderr"], _bash_status(result))


def call_result(name: str, result: dict[str, Any]) -> types.CallToolResult:
    """``structuredContent`` is the result dict; a tool error or a timeout sets ``isError``."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=payload_text(name, result))],
        structured_content=result,
        is_error=is_error(result),
    )


# --- sessions -----------------------------------------------------------------

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SESSION_ID_CHARS = 128


def session_id_for(mcp_session_id: str) -> str:
    """A toolbound session id from an MCP session id: ``mcp-`` + its safe characters."""
    return f"mcp-{_UNSAFE.sub('-', mcp_session_id)}"[:_SESSION_ID_CHARS]


def named_session(params: types.CallToolRequestParams) -> str | None:
    """The toolbound session a request names in ``_meta["toolbound/session"]``, if any.

    TOOL_INVALID_ARGUMENT when it is there but not a session id.
    """
    name = (params.meta or {}).get(SESSION_META_KEY)
    if name is None:
        return None
    if not isinstance(name, str):
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f'_meta["{SESSION_META_KEY}"] must be a string naming the session (got {name!r}).',
        )
    try:
        return check_session_id(name)
    except SessionIdError as err:
        raise err.to_tool_error() from None


def _mcp_session(
    ctx: ServerRequestContext[Any],
) -> tuple[str | None, contextlib.AsyncExitStack | None]:
    """The MCP session id of the request's connection and the stack its teardown unwinds.

    SDK 2.3's low-level request context does not expose the connection yet
    (its own TODO); the session proxy holds it. Without one, the request
    uses the server's session.
    """
    connection = getattr(ctx.session, "_connection", None)
    session_id = getattr(connection, "session_id", None)
    stack = getattr(connection, "exit_stack", None)
    if isinstance(session_id, str) and isinstance(stack, contextlib.AsyncExitStack):
        return session_id, stack
    return None, None


def _end_stored_session(host: ToolHost) -> None:
    """Mark the session ended in the store, which removes its scratch dir; remove it anyway.

    A store that cannot be written costs the record only (as for the host's
    recording), never the removal.
    """
    try:
        with SessionStore(host.store, limits=host.limits, scratch_dir=host.data_dir) as store:
            store.session(host.session_id)
            store.end(host.session_id)
    except (sqlite3.Error, OSError, SchemaError) as err:
        log.warning("toolbound: session %s not marked ended: %s", host.session_id, err)
    host.scratch.remove()


@dataclass
class Sessions:
    """One started ToolHost per MCP session; ending a session removes its scratch dir."""

    options: ServeOptions
    server_session_id: str = field(default_factory=lambda: f"mcp-{uuid.uuid4().hex[:16]}")
    # Told of each session's host as it starts and ends (the web view watches them).
    on_start: Callable[[ToolHost], None] | None = None
    on_end: Callable[[ToolHost], None] | None = None
    _hosts: dict[str, ToolHost] = field(default_factory=dict)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def host_for(self, ctx: ServerRequestContext[Any], named: str | None = None) -> ToolHost:
        """The host of the request's session: its MCP session's, else the one it ``named``
        (``_meta["toolbound/session"]``, sessionless requests only), else the server's."""
        mcp_session_id, stack = _mcp_session(ctx)
        if mcp_session_id is not None:
            sid = session_id_for(mcp_session_id)
        else:
            sid = check_session_id(named) if named is not None else self.server_session_id
        host = self._hosts.get(sid)
        if host is not None:
            return host
        async with self._lock:
            host = self._hosts.get(sid)
            if host is None:
                host = await self._start(sid)
                if stack is not None:
                    stack.push_async_callback(self.end, sid)
        return host

    async def _start(self, sid: str) -> ToolHost:
        opts = self.options
        host = ToolHost(
            workspace=opts.workspace,
            data_dir=opts.data_dir,
            session_id=sid,
            allow_external=opts.allow_external,
            limits=opts.limits,
            sandbox=opts.sandbox,
            network=opts.network,
        )
        await host.__aenter__()
        self._hosts[sid] = host
        if self.on_start is not None:
            self.on_start(host)
        return host

    async def end(self, sid: str) -> None:
        """Stop the session's running calls, then end it in the store and remove its scratch dir."""
        host = self._hosts.pop(sid, None)
        if host is None:
            return
        try:
            await host.aclose()
        finally:
            # After aclose: the watchers see the aborted calls' results.
            if self.on_end is not None:
                self.on_end(host)
            # Shielded: the SDK bounds a connection's teardown and may cancel it.
            with anyio.CancelScope(shield=True):
                await asyncio.to_thread(_end_stored_session, host)

    async def aclose(self) -> None:
        """End every session (the server is stopping)."""
        for sid in list(self._hosts):
            await self.end(sid)


# --- calls --------------------------------------------------------------------

ChunkSink = Callable[[dict[str, Any]], Awaitable[None]]

# Tool call ids: unique per server run without a random draw per call (which
# measured a third of a millisecond here).
_RUN_ID = uuid.uuid4().hex[:8]
_call_numbers = itertools.count(1)


async def _relay(events: AsyncIterator[dict[str, Any]], on_chunk: ChunkSink) -> dict[str, Any]:
    result: dict[str, Any] = {}
    async for event in events:
        if event["type"] == "chunk":
            await on_chunk(event)
        else:
            result = event["result"]
    return result


async def run_call(host: ToolHost, name: str, args: object, on_chunk: ChunkSink) -> dict[str, Any]:
    """Run one call, relaying its chunks; a cancelled caller aborts it and waits for it to stop.

    The events are consumed in a task of their own, outside the SDK's cancel
    scope, so a cancellation cannot interrupt the host's wait for the
    process tree to be gone.
    """
    call_id = f"mcp_{_RUN_ID}_{next(_call_numbers)}"
    relay = asyncio.ensure_future(_relay(host.stream(name, args, tool_call_id=call_id), on_chunk))
    try:
        return await asyncio.shield(relay)
    except BaseException:
        host.abort(call_id)
        # A second cancellation while the tree stops changes nothing: the
        # caller's own exception goes on, once the call has stopped.
        with contextlib.suppress(asyncio.CancelledError):
            await wait_stopped(relay)
        if not relay.cancelled():
            relay.exception()  # retrieved: the caller's own exception goes on instead
        raise


def _progress_sender(ctx: ServerRequestContext[Any]) -> ChunkSink:
    """Chunk events -> progress notifications on the request's stream, if it asked for them."""
    token = progress_token_from_params(ctx.params)

    async def send(event: dict[str, Any]) -> None:
        if token is None:
            return
        params = types.ProgressNotificationParams(
            progress_token=token,
            progress=event["seq"] + 1,
            message=event["data"],
            _meta={CHUNK_META_KEY: {"stream": event["stream"], "seq": event["seq"]}},
        )
        try:
            await ctx.session.send_notification(
                types.ProgressNotification(params=params), related_request_id=ctx.request_id
            )
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            # Progress is advisory: a client that left loses it, not the call its result.
            log.debug("dropped a progress notification: the client's stream is closed")

    return send


# --- the server ---------------------------------------------------------------


def build_server(sessions: Sessions) -> Server[Sessions]:
    """The low-level MCP server: tools/list and tools/call over ``sessions``.

    The sessions end with the server's lifespan (stdin closed, HTTP shutdown).
    """
    tools = mcp_tools(sessions.options.limits)

    @contextlib.asynccontextmanager
    async def lifespan(_server: Server[Sessions]) -> AsyncIterator[Sessions]:
        try:
            yield sessions
        finally:
            with anyio.CancelScope(shield=True):
                await sessions.aclose()

    async def list_tools(
        ctx: ServerRequestContext[Sessions], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Sessions], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            host = await ctx.lifespan_context.host_for(ctx, named_session(params))
        except ToolError as err:
            return call_result(params.name, err.to_result().to_wire())
        args = params.arguments if params.arguments is not None else {}
        result = await run_call(host, params.name, args, _progress_sender(ctx))
        return call_result(params.name, result)

    return Server(
        "toolbound",
        version=__version__,
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
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


async def _end_then_die(sessions: Sessions, signum: int) -> None:
    """On SIGTERM/SIGINT: stop every running process tree and remove the scratch dirs,
    then die of the signal.

    Stopping the stdio loop cleanly is not possible while its reader thread
    blocks on stdin, and Bash trees live in sessions of their own, so they
    would outlive a server that just exited.
    """
    with anyio.CancelScope(shield=True):
        await sessions.aclose()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


async def serve_stdio(options: ServeOptions) -> None:
    """Serve over stdin/stdout until stdin closes or SIGTERM/SIGINT arrives."""
    _announce(_sandbox_line(options))
    sessions = Sessions(options)
    server = build_server(sessions)
    async with anyio.create_task_group() as tg:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for signum in signals:
                    await _end_then_die(sessions, signum)

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
    import uvicorn

    from toolbound.web import WebService

    web = WebService.open(
        workspace=options.workspace,
        data_dir=options.data_dir,
        allow_external=options.allow_external,
        limits=options.limits,
        token=options.token,
    )
    server = build_server(Sessions(options, on_start=web.attach, on_end=web.detach))
    # The web view shares the port: its page, API and event streams beside /mcp.
    app = server.streamable_http_app(
        streamable_http_path=HTTP_PATH, host=host, custom_starlette_routes=web.routes()
    )
    config = uvicorn.Config(
        BearerGuard(app, token=web.token, path=HTTP_PATH),
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=HTTP_SHUTDOWN_GRACE_S,
    )
    from toolbound.web.server import listen

    sock = listen(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    _announce(
        f"MCP server on http://{shown}:{bound_port}{HTTP_PATH} (workspace {options.workspace})"
    )
    _announce(f"web view on {web.url(bound_host, bound_port)}")
    _announce(f"MCP clients send the header 'Authorization: Bearer {web.token}'")
    _announce(_sandbox_line(options))
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        web.close()


def serve(options: ServeOptions) -> int:
    """Run the server until stopped; the exit status of ``toolbound serve``."""
    if options.http is None:
        asyncio.run(serve_stdio(options))
    else:
        asyncio.run(serve_http(options, *options.http))
    return 0
