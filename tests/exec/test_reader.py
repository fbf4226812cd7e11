"""The stream reader over a real pipe: live chunks, the capture, past the ceiling."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from toolbound.exec.capture import HeadCapture, capture_for
from toolbound.exec.reader import StopSignal, StreamReader
from toolbound.limits import Keep

CEILING = 64 * 1024


def stream_text(size: int) -> bytes:
    line = b"a line of build output, 40 bytes long..\n"
    return (line * (size // len(line) + 1))[:size]


async def read_pipe(data: bytes, keep: Keep) -> tuple[StreamReader, HeadCapture, list[str]]:
    """``data`` through a pipe into a reader on this loop; the live gate it was given
    and the chunks it emitted."""
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    chunks: list[str] = []
    done = asyncio.Event()
    stop = StopSignal()
    live = HeadCapture(max_bytes=CEILING, max_lines=100_000)
    reader = StreamReader(
        read_fd,
        "stdout" if keep == "head" else "stderr",
        capture=capture_for(keep, max_bytes=CEILING, max_lines=100_000),
        live=live,
        emit=lambda _stream, text: chunks.append(text),
        interval_s=0.05,
        chunk_max_bytes=16 * 1024,
        stop=stop,
        on_done=lambda: loop.call_soon_threadsafe(done.set),
    )

    def write() -> None:
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(data)

    writer = threading.Thread(target=write)
    reader.start(loop)
    writer.start()
    await asyncio.wait_for(done.wait(), 30)
    writer.join(30)
    stop.close()
    return reader, live, chunks


@pytest.mark.parametrize("size", [1000, CEILING - 1, CEILING, 20 * CEILING + 17])
async def test_stdout_gates_its_live_chunks_with_its_own_capture(size: int) -> None:
    """The capture keeps the same head the live chunks show: counted and held once."""
    data = stream_text(size)
    reader, live, chunks = await read_pipe(data, "head")
    held = reader.captured()
    assert held.data == data[:CEILING]
    assert (held.total_bytes, held.total_lines) == (size, data.count(b"\n") + (size % 40 != 0))
    assert "".join(chunks).encode() == data[:CEILING]
    assert live.counter.bytes == 0  # the gate it was given was never fed


@pytest.mark.parametrize("size", [1000, 20 * CEILING + 17])
async def test_stderr_live_chunks_show_its_start_while_it_keeps_its_end(size: int) -> None:
    data = stream_text(size)
    reader, live, chunks = await read_pipe(data, "tail")
    held = reader.captured()
    assert (held.data, held.total_bytes) == (data[-CEILING:], size)
    assert "".join(chunks).encode() == data[:CEILING]
    assert live.counter.bytes > 0  # a tail cannot gate the start: the live gate did
