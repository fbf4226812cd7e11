"""``tools/call`` answered on the stdio wire, beside the SDK's server: the per-call fast path.

Over ``serve --stdio`` each call crossed the SDK's whole dispatch (the
message relayed through three memory streams, a task spawned under a cancel
scope, the request validated twice, the tracing middleware, the result
validated and dumped twice): about 1 ms of CPU a call, more than the tool's
own work (``bench/mcp.py``). :class:`StdioCalls` is the transport's
:class:`~toolbound.stdio_pipes.Lane`: once the SDK's connection is initialized
(its ``initialize`` committed, with the client's ``clientInfo`` for the fit,
and ``notifications/initialized`` seen), each ``tools/call`` the reader
parses is answered here, through the same :func:`mcp_server.answer_call` the
SDK's handler runs, and written as the SDK writes it. On a 2026-07-28
connection (the SDK's first request carried the envelope; the official
Python client's default) there is no handshake: once the SDK served one
request of that era, each ``tools/call`` whose envelope passes the SDK's
ladder (``classify_inbound_request``) is answered here with the client its
envelope names.

- the request passes the SDK's own checks first (``validate_client_request``
  for the version, ``CallToolRequestParams``); anything it would refuse, and
  anything unusual (the other era's envelope, a task, an id already running
  here) goes to the SDK, which answers it as always;
- the result is shaped as the SDK's runner shapes it (dumped, sieved by the
  version's surface; on 2026-07-28 its ``resultType`` and the ``serverInfo``
  stamp) and written with the SDK transport's ``wire_line``; a handler
  exception becomes the SDK's error for the era (``handler_exception_to_error_data``,
  else code 0 and its text, on 2026-07-28 ``modern_error_data``);
- a request with a ``progressToken`` gets each chunk as the SDK's progress
  notification;
- ``notifications/cancelled`` for a request running here aborts its call and
  waits for it to stop, and the request is never answered (as the SDK's
  dispatcher: a cancelled request gets no response); the notification still
  reaches the SDK, which finds nothing of its own to cancel;
- when stdin ends, the calls running here are aborted as the SDK aborts its
  own, each answered "Connection closed";
- the answer goes out before the call's recording commits
  (``listeners.answer_first``): the recorder writes it within its chunk
  interval (50 ms), with the calls answered meanwhile, in one transaction.

Everything else (``initialize``, ``tools/list``, ``ping``, ``server/discover``,
anything before the connection is initialized or its era decided, responses
to the server's requests) is the SDK's, unchanged. A second ``initialize``
turns the fast path off for the rest of the connection. The SDK's state is
read by :meth:`StdioCalls.observe`, a server middleware that sees each request
the SDK serves with its connection (the session's ``_connection``, the same
SDK internal ``mcp_server._mcp_session`` reads): the handshake's, or one of
the 2026-07-28 era's.

Pieces:
    StdioCalls  the lane: observe (SDK middleware), take, close
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
import pydantic_core
from mcp.server import Server
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.runner import modern_error_data
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import (
    InboundLadderRejection,
    InboundModernRoute,
    classify_inbound_request,
)
from mcp.shared.jsonrpc_dispatcher import (
    cancelled_request_id_from_params,
    handler_exception_to_error_data,
    progress_token_from_params,
)
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from toolbound.fit import FitMode
from toolbound.listeners import answer_first
from toolbound.mcp_server import (
    Caller,
    ChunkSink,
    ResultShape,
    answer_call,
    fit_of,
    progress_notification,
)
from toolbound.pool import HostPool
from toolbound.stdio_pipes import Wire, wire_line

log = logging.getLogger(__name__)

# The ``_meta`` key a 2026-07-28 result carries the server's identity under.
SERVER_INFO_META_KEY = types.SERVER_INFO_META_KEY

CALL = "tools/call"
CANCELLED = "notifications/cancelled"
# The ``_meta`` keys of the 2026-07-28 envelope start so; the SDK refuses them on a
# handshake connection, so a request carrying one is the SDK's to answer.
RESERVED_META_PREFIX = "io.modelcontextprotocol/"
# How many distinct 2026-07-28 envelopes' clients are kept (one client: one, mostly).
ENVELOPES_KEPT = 16
# Over stdio there is no MCP session and one client: no shared-session reader.
STDIO_CALLER = Caller()


@dataclass(frozen=True, slots=True)
class _Route:
    """How a call answered here is answered: the protocol version and the client."""

    version: str
    client: types.InitializeRequestParams | None

    @property
    def modern(self) -> bool:
        return self.version in MODERN_PROTOCOL_VERSIONS


@dataclass(eq=False)
class _Call:
    """One request answered here."""

    task: asyncio.Task[None] | None = None
    # The client cancelled it: it is never answered.
    cancelled: bool = False
    # Its answer is being written: too late to cancel (as the SDK's "write started").
    answering: bool = False


@dataclass(eq=False)
class StdioCalls:
    """The stdio wire's own answers to ``tools/call`` over ``pool``'s hosts, beside
    ``server`` (the SDK's, whose identity a 2026-07-28 result is stamped with),
    results in ``shape`` within each client's fit under the ``fit`` mode."""

    pool: HostPool
    server: Server[Any]
    shape: ResultShape = "text"
    fit: FitMode = "auto"
    # The handshake's connection (its initialize seen), else None.
    _connection: Connection | None = None
    # The SDK serves the 2026-07-28 era (it served one request of it).
    _modern: bool = False
    _off: bool = False
    _initializes: int = 0
    _running: dict[types.RequestId, _Call] = field(default_factory=dict)
    # The client of each 2026-07-28 envelope seen, by the envelope's JSON.
    _clients: dict[bytes, types.InitializeRequestParams | None] = field(default_factory=dict)
    # How many calls were answered here.
    answered: int = 0

    @property
    def ready(self) -> bool:
        """Whether a tools/call arriving now can be answered here (its era permitting)."""
        return not self._off and (self._modern or self._route(None) is not None)

    async def observe(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        """Server middleware: note the era of each request the SDK serves, and the
        connection a handshake's ``initialize`` arrives on."""
        connection = getattr(ctx.session, "_connection", None)
        if isinstance(connection, Connection):
            if connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
                self._modern = True
            elif ctx.method == "initialize" and self._connection is None:
                self._connection = connection
        return await call_next(ctx)

    def take(self, message: types.JSONRPCMessage, wire: Wire) -> bool:
        """Whether ``message`` is answered here (a task started for it); False: the SDK's."""
        if self._off:
            return False
        if isinstance(message, types.JSONRPCNotification):
            if message.method == CANCELLED:
                self._cancel(message.params)
            return False
        if not isinstance(message, types.JSONRPCRequest):
            return False
        if message.method != CALL:
            if message.method == "initialize":
                self._initializes += 1
                # Negotiated again: the connection's state is the SDK's alone from now on.
                self._off = self._initializes > 1
            return False
        route = self._route(message.params)
        params = self._call_params(message.params, route) if route is not None else None
        key = coerce_request_id(message.id)
        if route is None or params is None or key in self._running:
            return False
        call = self._running[key] = _Call()
        call.task = asyncio.create_task(self._answer(message, params, route, call, wire))
        call.task.add_done_callback(lambda _: self._forget(key, call))
        return True

    async def close(self) -> None:
        """stdin ended: abort the calls running here (each answered "Connection closed",
        as the SDK answers its own) and wait until they stopped."""
        self._off = True
        tasks = [call.task for call in self._running.values() if call.task is not None]
        for call in self._running.values():
            if call.task is not None and not call.answering:
                call.task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def _route(self, params: dict[str, Any] | None) -> _Route | None:
        """The version and client a call with ``params`` is answered for here, if it is
        (None: the SDK's): its envelope's on a 2026-07-28 connection, else the
        handshake's once initialized, for a request without the other era's envelope."""
        if self._modern:
            if self.server.cache_hints.get(CALL) is not None:
                return None
            route = classify_inbound_request({"method": CALL, "params": params})
            if isinstance(route, InboundLadderRejection):
                return None
            return _Route(route.protocol_version, self._client(route))
        connection = self._connection
        if (
            connection is None
            or connection.client_params is None
            or not connection.initialized.is_set()
            or connection.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS
            or self.server.cache_hints.get(CALL) is not None
        ):
            return None
        meta = (params or {}).get("_meta")
        if isinstance(meta, Mapping) and any(
            isinstance(k, str) and k.startswith(RESERVED_META_PREFIX) for k in meta
        ):
            return None
        return _Route(connection.protocol_version, connection.client_params)

    @staticmethod
    def _call_params(
        params: dict[str, Any] | None, route: _Route
    ) -> types.CallToolRequestParams | None:
        """The request's params as the SDK's runner takes them; None for any it would
        refuse or treat otherwise (then it is the SDK's to answer)."""
        if params is None:
            return None
        try:
            methods.validate_client_request(CALL, route.version, params)
            typed = types.CallToolRequestParams.model_validate(params, by_name=False)
        except (ValidationError, KeyError, ValueError):
            return None
        return typed if typed.task is None else None

    def _client(self, route: InboundModernRoute) -> types.InitializeRequestParams | None:
        """The client a 2026-07-28 envelope names, as the SDK's connection for it takes
        it (``Connection.from_envelope``), made once per distinct envelope."""
        key = pydantic_core.to_json(
            (route.protocol_version, route.client_info, route.client_capabilities)
        )
        if key not in self._clients:
            if len(self._clients) >= ENVELOPES_KEPT:
                self._clients.clear()
            enveloped = Connection.from_envelope(
                route.protocol_version, route.client_info, route.client_capabilities
            )
            self._clients[key] = enveloped.client_params
        return self._clients[key]

    def _cancel(self, params: dict[str, Any] | None) -> None:
        request_id = cancelled_request_id_from_params(params)
        call = self._running.get(coerce_request_id(request_id)) if request_id is not None else None
        if call is not None and call.task is not None and not call.answering:
            call.cancelled = True
            call.task.cancel()

    def _forget(self, key: types.RequestId, call: _Call) -> None:
        if self._running.get(key) is call:
            del self._running[key]

    async def _answer(
        self,
        request: types.JSONRPCRequest,
        params: types.CallToolRequestParams,
        route: _Route,
        call: _Call,
        wire: Wire,
    ) -> None:
        """Run the call and write its answer (none when the client cancelled it)."""
        with answer_first():  # the answer goes out first, its recording soon after
            await self._answer_now(request, params, route, call, wire)

    async def _answer_now(
        self,
        request: types.JSONRPCRequest,
        params: types.CallToolRequestParams,
        route: _Route,
        call: _Call,
        wire: Wire,
    ) -> None:
        answer: types.JSONRPCMessage
        try:
            result = await answer_call(
                self.pool,
                params,
                STDIO_CALLER,
                self._progress(progress_token_from_params(request.params), wire),
                shape=self.shape,
                fit=fit_of(route.client, self.fit),
            )
            answer = types.JSONRPCResponse(
                jsonrpc="2.0", id=request.id, result=self._wire_result(result, route)
            )
        except asyncio.CancelledError:
            if call.cancelled:
                return
            error = types.ErrorData(code=types.CONNECTION_CLOSED, message="Connection closed")
            answer = types.JSONRPCError(jsonrpc="2.0", id=request.id, error=error)
        except Exception as err:
            if call.cancelled:
                return
            error = _error_data(err, route)
            answer = types.JSONRPCError(jsonrpc="2.0", id=request.id, error=error)
        call.answering = True
        self.answered += 1
        wire.put(wire_line(answer))

    @staticmethod
    def _progress(token: types.ProgressToken | None, wire: Wire) -> ChunkSink:
        """Chunk events -> the request's progress notifications, as the SDK writes them."""

        async def send(event: dict[str, Any]) -> None:
            if token is None:
                return
            data = progress_notification(token, event).model_dump(
                by_alias=True, mode="json", exclude_none=True
            )
            note = types.JSONRPCNotification(
                jsonrpc="2.0", method=data["method"], params=dict(data["params"])
            )
            await wire.send(wire_line(note))

        return send

    def _wire_result(self, result: types.CallToolResult, route: _Route) -> dict[str, Any]:
        """The result as the SDK's runner puts it on the wire at the route's version:
        dumped, sieved by the version's surface; on 2026-07-28 with its ``resultType``
        and the server's identity in ``_meta``."""
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        try:
            wire = methods.serialize_server_result(CALL, route.version, dumped)
        except ValidationError:
            log.exception("handler for %r returned an invalid result", CALL)
            raise MCPError(
                code=types.INTERNAL_ERROR, message="Handler returned an invalid result"
            ) from None
        if not route.modern:
            return wire
        if wire.get("resultType") is None:
            wire["resultType"] = "complete"
        meta = wire.get("_meta")
        if meta is None:
            wire["_meta"] = {SERVER_INFO_META_KEY: self.server.server_info_stamp}
        elif isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None:
            wire["_meta"] = {**meta, SERVER_INFO_META_KEY: self.server.server_info_stamp}
        return wire


def _error_data(err: Exception, route: _Route) -> types.ErrorData:
    """A handler's exception as the SDK answers it in the route's era."""
    if route.modern:
        return modern_error_data(err)
    error = handler_exception_to_error_data(err)
    if error is None:
        log.exception("handler for %r raised", CALL, exc_info=err)
        error = types.ErrorData(code=0, message=str(err))
    return error
