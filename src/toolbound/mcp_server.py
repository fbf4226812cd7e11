"""The MCP translation of the tools (CONTRACT section 6), on the official ``mcp`` SDK.

A thin adapter over :class:`ToolHost` on the SDK's low-level ``Server`` (the
tools' schemas come from the registry, not from typed functions). It only
translates: the tool definitions into MCP tools, a result dict into its
model text (``model_text``) as the result's content, Bash chunk events
into progress notifications, an MCP cancellation into an abort, and a request
into the toolbound session it belongs to. Nothing here decides what the model
sees; ``bounds/``, the tools and ``model_text`` did that already. Wiring it to
a transport and the web view is ``toolbound.serve``'s; the hosts are a
:class:`~toolbound.pool.HostPool`'s.

Importing this module imports ``mcp`` (about 2 s), so only ``toolbound
serve`` imports it; ``toolbound call`` never does.

Sessions: each MCP session is one toolbound session, whose id is derived from
the MCP session id (``mcp-<id>``) and which ends when the MCP session does
(client DELETE, idle timeout, server shutdown). A request without an MCP
session id (stdio, where the process is the session; the sessionless
2026-07-28 HTTP exchange) names its toolbound session with
``_meta["toolbound/session"]``: each name is a session of its own, ended when
the server stops or after it idled (``pool.NAMED_IDLE_END_S``). Requests
naming none share the server's own session.

Named sessions live in a namespace of their own (``toolbound.namespaces``:
``n-<namespace>-<name>``, the namespace drawn from the bearer token, or at
random per server over stdio), so a name can never reach a session an MCP
session id created (``mcp-…``), the server's own, or another token's.

Results are text only (CONTRACT section 6): harnesses such as Claude Code and
Codex CLI hand their model the ``structuredContent`` JSON instead of the text
when both are there, so by default a result is its model text and nothing
else. ``ResultShape`` "structured" (``serve --structured``) restores the 0.2
shape for programmatic clients: the result dict as ``structuredContent`` beside
the text and an ``outputSchema`` per tool that admits the error shape too.

Results fit the client (CONTRACT section 14): each call's fit is the cap of
the client its connection's ``initialize`` named (``clientInfo``, matched in
``toolbound.fit.KNOWN_CLIENTS``) under the server's ``--fit`` mode, handed to
the host, which shrinks the call's budgets to it and keeps its text within it.

Pieces:
    ResultShape        "text" (the default) or "structured" (the 0.2 shape)
    client_fit         the fit of a request's client under the server's fit mode
    fit_of             the fit of the client an initialize named
    mcp_tools          the tool definitions as MCP tools (output schemas when structured)
    call_result        result dict -> CallToolResult (a tool error or timeout: isError)
    content_blocks     result dict -> its content blocks (an image Read: the image first)
    named_session      the name a sessionless request gives its session
    server_session_id  a fresh id for the server's own session
    connection_reader  who gets a result of the shared session: the HTTP connection
    Caller, caller_of  where a call comes from: its MCP session, its shared-session reader
    run_call           one call: chunks relayed, cancellation -> abort
    answer_call        one tools/call's CallToolResult (the SDK's handler and the stdio wire's)
    progress_notification  a chunk event as a progress notification
    build_server       the low-level Server with its list/call handlers over a HostPool
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params

from toolbound import __version__, views
from toolbound.exec.shield import wait_stopped
from toolbound.fit import NO_FIT, Fit, FitMode, fit_for
from toolbound.greeting import SERVER_NAME
from toolbound.host import ToolHost
from toolbound.limits import EXACT, Limits, Profile
from toolbound.model_text import model_text
from toolbound.namespaces import named_session_id
from toolbound.pool import HostPool
from toolbound.results import ErrorCode, ToolError, is_error
from toolbound.scratch import SessionIdError, check_session_id, derived_session_id
from toolbound.tooldefs import tool_defs

log = logging.getLogger(__name__)

# The progress notification `_meta` key that carries a chunk's stream and seq.
CHUNK_META_KEY = "toolbound/chunk"
# The request `_meta` key by which a sessionless request names its toolbound session.
SESSION_META_KEY = "toolbound/session"
# Toolbound session ids of MCP sessions (and of the server's own) start so.
SESSION_PREFIX = "mcp-"


# --- tools and results --------------------------------------------------------

# What a result carries: its model text only ("text"), or the 0.2 shape with the
# result dict as structuredContent beside it ("structured", ``serve --structured``).
ResultShape = Literal["text", "structured"]


def mcp_tools(
    limits: Limits, profile: Profile = EXACT, *, shape: ResultShape = "text"
) -> list[types.Tool]:
    """The definitions (schema, description for ``profile``, annotations); with the
    structured ``shape`` their output schemas too (which admit the error shape)."""
    return [
        types.Tool.model_validate(
            {**d.render("mcp"), "outputSchema": d.output_schema}
            if shape == "structured"
            else d.render("mcp"),
            by_name=False,
        )
        for d in tool_defs(limits, profile)
    ]


def call_result(
    name: str,
    result: dict[str, Any],
    *,
    shape: ResultShape = "text",
    fit: Fit = NO_FIT,
    text: str | None = None,
) -> types.CallToolResult:
    """The result's model text within the client's ``fit`` as
    its one text block (and with the structured ``shape`` the result dict as
    ``structuredContent``); a tool error or a timeout sets ``isError``, its text
    ``CODE: message`` or the Bash text. ``text``: that text, rendered already (the
    result event's)."""
    if text is None:
        text = model_text(name, result, fit=fit)
    return types.CallToolResult(
        content=content_blocks(name, result, text),
        structured_content=result if shape == "structured" else None,
        is_error=is_error(name, result),
    )


def content_blocks(name: str, result: dict[str, Any], text: str) -> list[types.ContentBlock]:
    """The content blocks of a result: its model ``text``, after an image Read's image."""
    blocks: list[types.ContentBlock] = []
    image = views.image(name, result)
    if image is not None:
        blocks.append(
            types.ImageContent(type="image", data=image["data"], mimeType=image["mimeType"])
        )
    blocks.append(types.TextContent(type="text", text=text))
    return blocks


def client_fit(ctx: ServerRequestContext[Any], mode: FitMode) -> Fit:
    """The fit of the request's client: its ``initialize``'s ``clientInfo`` (the
    connection's, or the 2026-07-28 request envelope's) under ``mode``."""
    return fit_of(ctx.session.client_params, mode)


def fit_of(params: types.InitializeRequestParams | None, mode: FitMode) -> Fit:
    """The fit of the client an ``initialize`` (``params``; None: none) named, under ``mode``."""
    info = params.client_info if params is not None else None
    if info is None:
        return fit_for(mode, None, None)
    return fit_for(mode, info.name, info.version)


# --- sessions -----------------------------------------------------------------


def server_session_id() -> str:
    """A fresh id for the session of requests that name none."""
    return f"{SESSION_PREFIX}{uuid.uuid4().hex[:16]}"


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

    The one use of SDK internals: SDK 2.3's low-level request context does not
    expose the connection yet (its own TODO); the session proxy holds it as
    ``_connection``. Without one (stdio, sessionless HTTP), (None, None).
    """
    connection = getattr(ctx.session, "_connection", None)
    session_id = getattr(connection, "session_id", None)
    stack = getattr(connection, "exit_stack", None)
    if isinstance(session_id, str) and isinstance(stack, contextlib.AsyncExitStack):
        return session_id, stack
    return None, None


def connection_reader(ctx: ServerRequestContext[Any]) -> str | None:
    """Who receives the result of a request to the server's shared session: its HTTP
    connection (the client's address and port), None over stdio (one client).

    Sessionless HTTP requests carry no identity of their own; a client keeps its
    connection open between calls, so its Reads and Edits usually share one. A
    call on another connection is a reader that saw nothing yet: its Read gets
    the content, its Edit asks for a Read first.
    """
    client = getattr(ctx.request, "client", None)
    host, port = getattr(client, "host", None), getattr(client, "port", None)
    if host is None or port is None:
        return None
    return f"connection {host}:{port}"


@dataclass(frozen=True, slots=True)
class Caller:
    """Where a call comes from, as far as its session and its result's reader go.

    ``mcp_session``: the MCP session id of the request's connection and the stack
    its teardown unwinds (None: stdio, sessionless HTTP); ``reader``: who gets the
    result when the call lands in the server's shared session (``connection_reader``).
    """

    mcp_session: tuple[str, contextlib.AsyncExitStack] | None = None
    reader: str | None = None


def caller_of(ctx: ServerRequestContext[Any]) -> Caller:
    """The caller of an SDK request."""
    session_id, stack = _mcp_session(ctx)
    mcp_session = (session_id, stack) if session_id is not None and stack is not None else None
    return Caller(mcp_session, connection_reader(ctx))


async def _host_for(
    pool: HostPool, caller: Caller, named: str | None
) -> tuple[ToolHost, str | None]:
    """The host of the request's session: its MCP session's (ended with it), else the one it
    ``named`` (sessionless requests only), else the server's; and the reader who gets the
    result when that session is shared (``connection_reader``)."""
    if caller.mcp_session is not None:
        mcp_session_id, stack = caller.mcp_session
        sid = derived_session_id(SESSION_PREFIX, mcp_session_id)
        return await pool.host(sid, end_with=stack), None
    if named is not None:
        return await pool.host(named_session_id(pool.namespace, named), named=True), None
    return await pool.host(pool.default_session_id), caller.reader


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
            result = event
    return result


async def run_call(
    host: ToolHost,
    name: str,
    args: object,
    on_chunk: ChunkSink,
    *,
    reader: str | None = None,
    fit: Fit = NO_FIT,
) -> dict[str, Any]:
    """Run one call within the client's ``fit``, relaying its chunks; its result event
    (``result`` and its model ``text``). A cancelled caller aborts it and waits for it
    to stop.

    The events are consumed in a task of their own, outside the SDK's cancel
    scope, so a cancellation cannot interrupt the host's wait for the
    process tree to be gone.
    """
    call_id = f"mcp_{_RUN_ID}_{next(_call_numbers)}"
    events = host.stream(name, args, tool_call_id=call_id, reader=reader, fit=fit)
    relay = asyncio.ensure_future(_relay(events, on_chunk))
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


async def answer_call(
    pool: HostPool,
    params: types.CallToolRequestParams,
    caller: Caller,
    on_chunk: ChunkSink,
    *,
    shape: ResultShape,
    fit: Fit,
) -> types.CallToolResult:
    """One ``tools/call``'s result: the call run in its session's host (``_host_for``:
    the caller's MCP session, the one ``_meta`` names, else the server's), its chunks
    to ``on_chunk``, its result in ``shape`` within the client's ``fit``.

    What the SDK's handler and the stdio wire's own (``toolbound.stdio_calls``) both
    answer with.
    """
    try:
        host, reader = await _host_for(pool, caller, named_session(params))
    except ToolError as err:
        return call_result(params.name, err.to_result().to_wire(), shape=shape, fit=fit)
    args = params.arguments if params.arguments is not None else {}
    event = await run_call(host, params.name, args, on_chunk, reader=reader, fit=fit)
    return call_result(params.name, event["result"], shape=shape, fit=fit, text=event["text"])


def progress_notification(
    token: types.ProgressToken, event: dict[str, Any]
) -> types.ProgressNotification:
    """A chunk event as the progress notification of the request that gave ``token``."""
    params = types.ProgressNotificationParams(
        progress_token=token,
        progress=event["seq"] + 1,
        message=event["data"],
        _meta={CHUNK_META_KEY: {"stream": event["stream"], "seq": event["seq"]}},
    )
    return types.ProgressNotification(params=params)


def _progress_sender(ctx: ServerRequestContext[Any]) -> ChunkSink:
    """Chunk events -> progress notifications on the request's stream, if it asked for them."""
    token = progress_token_from_params(ctx.params)

    async def send(event: dict[str, Any]) -> None:
        if token is None:
            return
        try:
            await ctx.session.send_notification(
                progress_notification(token, event), related_request_id=ctx.request_id
            )
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            # Progress is advisory: a client that left loses it, not the call its result.
            log.debug("dropped a progress notification: the client's stream is closed")

    return send


# --- the server ---------------------------------------------------------------


def build_server(
    pool: HostPool,
    limits: Limits,
    profile: Profile = EXACT,
    *,
    shape: ResultShape = "text",
    fit: FitMode = "auto",
    instructions: str | None = None,
) -> Server[HostPool]:
    """The low-level MCP server: tools/list and tools/call over the hosts of ``pool``,
    results in ``shape``, each fitted to its client under the ``fit`` mode;
    ``instructions`` (``greeting.instructions``) go in the ``initialize`` result.

    The sessions end with the server's lifespan (stdin closed, HTTP shutdown).
    """
    tools = mcp_tools(limits, profile, shape=shape)

    @contextlib.asynccontextmanager
    async def lifespan(_server: Server[HostPool]) -> AsyncIterator[HostPool]:
        try:
            yield pool
        finally:
            with anyio.CancelScope(shield=True):
                await pool.aclose()

    async def list_tools(
        ctx: ServerRequestContext[HostPool], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[HostPool], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await answer_call(
            ctx.lifespan_context,
            params,
            caller_of(ctx),
            _progress_sender(ctx),
            shape=shape,
            fit=client_fit(ctx, fit),
        )

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=instructions,
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
