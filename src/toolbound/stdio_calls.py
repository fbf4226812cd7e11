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
SDK's handler runs, and written as the SDK writes it:

- the request passes the SDK's own checks first (``validate_client_request``
  for the connection's version, ``CallToolRequestParams``); anything it would
  refuse, and anything unusual (a 2026-07-28 envelope, a task, an id already
  running here) goes to the SDK, which answers it as always;
- the result is shaped as the SDK's runner shapes it (dumped, then sieved by
  the version's surface) and written with the SDK transport's ``wire_line``;
  a handler exception becomes the SDK's error (``handler_exception_to_error_data``,
  else code 0 and its text);
- a request with a ``progressToken`` gets each chunk as the SDK's progress
  notification;
- ``notifications/cancelled`` for a request running here aborts its call and
  waits for it to stop, and the request is never answered (as the SDK's
  dispatcher: a cancelled request gets no response); the notification still
  reaches the SDK, which finds nothing of its own to cancel;
- when stdin ends, the calls running here are aborted as the SDK aborts its
  own, each answered "Connection closed".

Everything else (``initialize``, ``tools/list``, ``ping``, anything before
the connection is initialized, responses to the server's requests, the
2026-07-28 era) is the SDK's, unchanged. A second ``initialize`` turns the
fast path off for the rest of the connection. The SDK's connection is found
by :meth:`StdioCalls.observe`, a server middleware that sees the
``initialize`` request (the session's ``_connection``, the same SDK internal
``mcp_server._mcp_session`` reads).

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
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import (
    cancelled_request_id_from_params,
    handler_exception_to_error_data,
    progress_token_from_params,
)
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError

from toolbound.fit import FitMode
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

CALL = "tools/call"
CANCELLED = "notifications/cancelled"
# The ``_meta`` keys of the 2026-07-28 envelope start so; the SDK refuses them on a
# handshake connection, so a request carrying one is the SDK's to answer.
RESERVED_META_PREFIX = "io.modelcontextprotocol/"
# Over stdio there is no MCP session and one client: no shared-session reader.
STDIO_CALLER = Caller()


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
    """The stdio wire's own answers to ``tools/call`` over ``pool``'s hosts, results
    in ``shape`` within each client's fit under the ``fit`` mode."""

    pool: HostPool
    shape: ResultShape = "text"
    fit: FitMode = "auto"
    _connection: Connection | None = None
    _off: bool = False
    _initializes: int = 0
    _running: dict[types.RequestId, _Call] = field(default_factory=dict)

    async def observe(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        """Server middleware: remember the connection an ``initialize`` arrives on."""
        if ctx.method == "initialize" and self._connection is None:
            connection = getattr(ctx.session, "_connection", None)
            if isinstance(connection, Connection):
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
        version = self._ready_version()
        params = self._call_params(message.params, version) if version is not None else None
        key = coerce_request_id(message.id)
        if version is None or params is None or key in self._running:
            return False
        call = self._running[key] = _Call()
        call.task = asyncio.create_task(self._answer(message, params, version, call, wire))
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

    def _ready_version(self) -> str | None:
        """The connection's protocol version once it is initialized (a handshake era)."""
        connection = self._connection
        if (
            connection is None
            or connection.client_params is None
            or not connection.initialized.is_set()
            or connection.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS
        ):
            return None
        return connection.protocol_version

    @staticmethod
    def _call_params(
        params: dict[str, Any] | None, version: str
    ) -> types.CallToolRequestParams | None:
        """The request's params as the SDK's runner takes them; None for any it would
        refuse or treat otherwise (then it is the SDK's to answer)."""
        if params is None:
            return None
        meta = params.get("_meta")
        if isinstance(meta, Mapping) and any(
            isinstance(k, str) and k.startswith(RESERVED_META_PREFIX) for k in meta
        ):
            return None
        try:
            methods.validate_client_request(CALL, version, params)
            typed = types.CallToolRequestParams.model_validate(params, by_name=False)
        except (ValidationError, KeyError, ValueError):
            return None
        return typed if typed.task is None else None

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
        version: str,
        call: _Call,
        wire: Wire,
    ) -> None:
        """Run the call and write its answer (none when the client cancelled it)."""
        assert self._connection is not None
        answer: types.JSONRPCMessage
        try:
            result = await answer_call(
                self.pool,
                params,
                STDIO_CALLER,
                self._progress(progress_token_from_params(request.params), wire),
                shape=self.shape,
                fit=fit_of(self._connection.client_params, self.fit),
            )
            answer = types.JSONRPCResponse(
                jsonrpc="2.0", id=request.id, result=_wire_result(result, version)
            )
        except asyncio.CancelledError:
            if call.cancelled:
                return
            error = types.ErrorData(code=types.CONNECTION_CLOSED, message="Connection closed")
            answer = types.JSONRPCError(jsonrpc="2.0", id=request.id, error=error)
        except Exception as err:
            if call.cancelled:
                return
            answer = types.JSONRPCError(jsonrpc="2.0", id=request.id, error=_error_data(err))
        call.answering = True
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


def _wire_result(result: types.CallToolResult, version: str) -> dict[str, Any]:
    """The result as the SDK's runner puts it on the wire at ``version`` (a handshake
    one): dumped, then sieved by the version's surface."""
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    try:
        return methods.serialize_server_result(CALL, version, dumped)
    except ValidationError:
        log.exception("a tools/call result does not fit the %s surface", version)
        raise MCPError(
            code=types.INTERNAL_ERROR, message="Handler returned an invalid result"
        ) from None


def _error_data(err: Exception) -> types.ErrorData:
    """A handler's exception as the SDK's dispatcher answers it."""
    error = handler_exception_to_error_data(err)
    if error is None:
        log.exception("handler for %r raised", CALL, exc_info=err)
        error = types.ErrorData(code=0, message=str(err))
    return error
