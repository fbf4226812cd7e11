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

Pieces:
    is_pipe        whether a descriptor is a pipe or a socket
    claimed        a descriptor's private duplicate while it points elsewhere
    pipe_streams   the read and write streams over the loop, stdin/stdout claimed
    stdio_streams  pipe_streams where both are pipes, else the SDK's stdio_server
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import stat
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

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


@contextlib.asynccontextmanager
async def stdio_streams() -> AsyncIterator[Streams]:
    """The server's streams over stdin and stdout: :func:`pipe_streams` when both are
    pipes or sockets, else the SDK's ``stdio_server``."""
    if is_pipe(0) and is_pipe(1):
        async with pipe_streams() as streams:
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


@contextlib.asynccontextmanager
async def pipe_streams(stdin: int = 0, stdout: int = 1) -> AsyncIterator[Streams]:
    """The read and write streams of a server on the ``stdin``/``stdout`` pipes, read
    and written on the event loop; the two descriptors are diverted meanwhile."""
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    try:
        with claimed(stdin, null) as wire_in, claimed(stdout, 2) as wire_out:
            inbound_send, inbound = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            outbound, outbound_receive = anyio.create_memory_object_stream[SessionMessage](0)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_read_messages, wire_in, inbound_send)
                tg.start_soon(_write_messages, wire_out, outbound_receive)
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


async def _read_messages(fd: int, send: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
    """Each line of ``fd`` to ``send`` until EOF (a last line without newline too)."""
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
                    await send.send(_message(line))
        if pending.strip():
            await send.send(_message(bytes(pending)))


async def _write_messages(fd: int, receive: MemoryObjectReceiveStream[SessionMessage]) -> None:
    """Each message from ``receive`` to ``fd`` as one JSON line; after a broken pipe
    the rest are dropped (the client left; stdin's end ends the server)."""
    broken = False
    async with receive:
        async for item in receive:
            if broken:
                continue
            data = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
            try:
                await _write_all(fd, memoryview(data.encode()))
            except (BrokenPipeError, ConnectionResetError):
                broken = True
                log.debug("stdout is closed: the client stopped reading")


async def _write_all(fd: int, data: memoryview) -> None:
    while data:
        try:
            data = data[os.write(fd, data) :]
        except BlockingIOError:
            await anyio.wait_writable(fd)
