"""``serve --stdio``'s transport on the event loop: JSON-RPC lines over stdin/stdout pipes.

The SDK's ``stdio_server`` reads and writes through anyio's file wrappers, a
worker thread hop for every line read, every write and every flush: three
hops per call, each a queue put, a thread wake-up and a self-pipe write back
to the loop. When stdin and stdout are pipes or sockets (every MCP client
spawns its servers so), :func:`pipe_streams` reads and writes them
non-blocking on the event loop instead: a line read is one ``read`` (a wait
for readability only when nothing is there), a message written one ``write``
(``bench/mcp.py``, real-time priority on a shared 2-core machine: a small
Read's round trip 3.54 -> 2.34 ms p50; the SDK's own server answering a
constant text 1.57 -> 0.97 ms). Anything else (a terminal, a file) keeps the
SDK's transport (:func:`stdio_streams`).

What the SDK's transport does, this one does too: the same messages (the
SDK's ``jsonrpc_message_adapter`` on each line decoded as UTF-8 with
replacement, a line that is not a message passed on as its error, a blank
line skipped; each message written as the SDK writes it), and fd 0 and 1
diverted while serving (fd 0 to the null device, fd 1 to stderr), so a child
that inherits them reads EOF and cannot write into the protocol; both are
restored on the way out. A client that stops reading loses what is written
after (a broken pipe ends the writing, not the server: the server ends when
stdin does).

A :class:`Lane` may answer some messages itself (``toolbound.stdio_calls``:
``tools/call``): the reader offers it each message first, and what it takes
never reaches the SDK; it writes its answers through the same :class:`Wire`
as the SDK's messages, each message whole, in the order written. At EOF the
lane is closed (its calls ended and answered) before the SDK sees the end.

Pieces:
    is_pipe        whether a descriptor is a pipe or a socket
    claimed        a descriptor's private duplicate while it points elsewhere
    wire_line      a message as the SDK's transport writes it: one JSON line
    Wire           the write side: whole messages, in order, written on the loop
    Lane           what may take messages before the SDK (take, close)
    pipe_streams   the read and write streams over the loop, stdin/stdout claimed
    stdio_streams  pipe_streams where both are pipes, else the SDK's stdio_server
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import fcntl
import logging
import os
import stat
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Protocol

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.shared._stream_protocols import ReadStream, WriteStream

log = logging.getLogger(__name__)

# One read takes this much at most; a longer line takes several.
READ_BYTES = 64 * 1024

Streams = tuple["ReadStream[SessionMessage | Exception]", "WriteStream[SessionMessage]"]


def is_pipe(fd: int) -> bool:
    """Whether ``fd`` is a pipe or a socket (the loop can wait on it)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class Lane(Protocol):
    """What answers some messages before the SDK sees them (``stdio_calls.StdioCalls``)."""

    def take(self, message: types.JSONRPCMessage, wire: Wire) -> bool:
        """Whether ``message`` is this lane's (answered through ``wire``), at once: the
        reader waits for nothing. False: the SDK gets it."""
        ...

    async def close(self) -> None:
        """stdin ended: end what the lane runs, its answers written, before the SDK hears."""
        ...


@contextlib.asynccontextmanager
async def stdio_streams(*, lane: Lane | None = None) -> AsyncIterator[Streams]:
    """The server's streams over stdin and stdout: :func:`pipe_streams` (with ``lane``)
    when both are pipes or sockets, else the SDK's ``stdio_server`` (every message
    the SDK's)."""
    if is_pipe(0) and is_pipe(1):
        async with pipe_streams(lane=lane) as streams:
            yield streams
    else:
        async with stdio_server() as streams:
            yield streams


@contextlib.contextmanager
def claimed(fd: int, stand_in: int) -> Iterator[int]:
    """A private, non-blocking duplicate of ``fd`` while ``fd`` itself points where
    ``stand_in`` does; on the way out ``fd`` is the wire again, blocking as before."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        os.dup2(stand_in, fd)
        try:
            os.set_blocking(private, False)
            yield private
        finally:
            with contextlib.suppress(OSError):
                os.set_blocking(private, True)
            os.dup2(private, fd)
    finally:
        os.close(private)


def wire_line(message: types.JSONRPCMessage) -> bytes:
    """``message`` as the SDK's stdio transport writes it: its JSON and a newline."""
    return (message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode()


class Wire:
    """The write side of the protocol: whole messages, in the order put, on the loop.

    ``put`` writes at once what the pipe takes and queues the rest for the
    flusher, so a message is never interleaved with another nor cut by a
    cancellation of its writer. After a broken pipe everything is dropped
    (the client left; stdin's end ends the server).
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._queued: collections.deque[memoryview] = collections.deque()
        self._more = asyncio.Event()  # the flusher has something to write
        self._empty = asyncio.Event()  # nothing queued
        self._empty.set()
        self._closed = False
        self.broken = False

    def put(self, data: bytes) -> None:
        """Write ``data`` (one whole message) after everything put before it."""
        if self.broken:
            return
        view = memoryview(data)
        if not self._queued:
            try:
                view = view[os.write(self._fd, view) :]
            except BlockingIOError:
                pass
            except (BrokenPipeError, ConnectionResetError):
                self._break()
                return
            if not view:
                return
        self._queued.append(view)
        self._empty.clear()
        self._more.set()

    async def send(self, data: bytes) -> None:
        """``put``, then wait until the pipe took it (a client that stops reading
        holds its writers back, not the server's memory)."""
        self.put(data)
        if not self._empty.is_set():
            await self._empty.wait()

    def close(self) -> None:
        """No more messages: the flusher ends once the queued ones are written."""
        self._closed = True
        self._more.set()

    async def flush(self) -> None:
        """Write what ``put`` queued, as the pipe takes it, until closed and empty."""
        while True:
            await self._more.wait()
            self._more.clear()
            while self._queued:
                try:
                    written = os.write(self._fd, self._queued[0])
                except BlockingIOError:
                    await anyio.wait_writable(self._fd)
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    self._break()
                    break
                rest = self._queued[0][written:]
                if rest:
                    self._queued[0] = rest
                else:
                    self._queued.popleft()
            self._empty.set()
            if self._closed:
                return

    def _break(self) -> None:
        self.broken = True
        self._queued.clear()
        self._empty.set()
        log.debug("stdout is closed: the client stopped reading")


@contextlib.asynccontextmanager
async def pipe_streams(
    stdin: int = 0, stdout: int = 1, *, lane: Lane | None = None
) -> AsyncIterator[Streams]:
    """The read and write streams of a server on the ``stdin``/``stdout`` pipes, read
    and written on the event loop; the two descriptors are diverted meanwhile.
    ``lane`` is offered each message before the SDK's stream."""
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    try:
        with claimed(stdin, null) as wire_in, claimed(stdout, 2) as wire_out:
            inbound_send, inbound = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            outbound, outbound_receive = anyio.create_memory_object_stream[SessionMessage](0)
            wire = Wire(wire_out)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_read_messages, wire_in, inbound_send, lane, wire)
                tg.start_soon(_write_messages, wire, outbound_receive)
                tg.start_soon(wire.flush)
                yield inbound, outbound
    finally:
        os.close(null)


def _message(line: bytes) -> SessionMessage | Exception:
    """One line as the SDK's stdio transport takes it: a message, or why it is none."""
    try:
        text = line.decode("utf-8", "replace")
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(text, by_name=False))
    except Exception as err:  # as the SDK's reader: the error goes to the server
        return err


async def _read_messages(
    fd: int,
    send: MemoryObjectSendStream[SessionMessage | Exception],
    lane: Lane | None,
    wire: Wire,
) -> None:
    """Each line of ``fd`` to ``lane`` or else ``send`` until EOF (a last line without
    newline too); then the lane closes, and ``send``."""
    buffer = bytearray(READ_BYTES)  # read into, never allocated per read
    pending = b""
    async with send:
        while True:
            try:
                size = os.readv(fd, [buffer])
            except BlockingIOError:
                await anyio.wait_readable(fd)
                continue
            if not size:
                break
            *lines, pending = (pending + buffer[:size]).split(b"\n")
            for line in lines:
                if line.strip():
                    await _pass_on(_message(line), lane, wire, send)
        if pending.strip():
            await _pass_on(_message(bytes(pending)), lane, wire, send)
        if lane is not None:
            await lane.close()


async def _pass_on(
    item: SessionMessage | Exception,
    lane: Lane | None,
    wire: Wire,
    send: MemoryObjectSendStream[SessionMessage | Exception],
) -> None:
    if lane is not None and isinstance(item, SessionMessage) and lane.take(item.message, wire):
        return
    await send.send(item)


async def _write_messages(wire: Wire, receive: MemoryObjectReceiveStream[SessionMessage]) -> None:
    """Each message from ``receive`` to the wire as one JSON line; the wire closes after."""
    try:
        async with receive:
            async for item in receive:
                await wire.send(wire_line(item.message))
    finally:
        wire.close()
