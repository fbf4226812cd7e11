"""A background job's input: its stdin pipe, or its pseudo-terminal with ``tty``.

Every job gets a stdin of its own (a foreground command's stays /dev/null):
the read end of a pipe whose write end the host keeps, or with ``tty: true``
a pseudo-terminal whose slave is the job's stdin, stdout and stderr and whose
master the host reads (the job's one stream, stdout) and writes. The terminal
has a fixed size (``job_tty_columns`` x ``job_tty_rows``, 120 x 40) and
writes ``\\n`` as is (no ``\\r\\n``), so its log reads like a pipe's; its
other settings are a terminal's defaults (echo, line editing, Ctrl-C).

JobInput writes here without blocking the loop: what the job does not take
within ``job_input_wait_s`` (a full pipe or terminal it does not read) is
not written, and the call says how much was.

Pieces:
    JobStdin  open(), stdio() for the spawn, write(), close()
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import struct
import termios

from toolbound.exec.tree import Stdio
from toolbound.limits import Limits

# The pipe's size asked for: a 64 KB input then fits whole, whoever reads it.
_PIPE_BYTES = 1024 * 1024


class JobStdin:
    """The host's end of a job's stdin (see the module docstring)."""

    def __init__(self, *, write_fd: int, child_fd: int, tty: bool) -> None:
        self._fd: int | None = write_fd
        # The job's end (a pipe's read end, a terminal's slave) until it is started.
        self._child_fd: int | None = child_fd
        self.tty = tty

    @classmethod
    def open(cls, *, tty: bool, limits: Limits) -> JobStdin:
        """A pipe, or with ``tty`` a pseudo-terminal of the limits' size."""
        if not tty:
            read_fd, write_fd = os.pipe()
            with contextlib.suppress(OSError):
                fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
            os.set_blocking(write_fd, False)
            return cls(write_fd=write_fd, child_fd=read_fd, tty=False)
        master, slave = os.openpty()
        try:
            size = struct.pack("HHHH", limits.job_tty_rows, limits.job_tty_columns, 0, 0)
            fcntl.ioctl(slave, termios.TIOCSWINSZ, size)
            attrs = termios.tcgetattr(slave)
            attrs[1] &= ~termios.ONLCR
            termios.tcsetattr(slave, termios.TCSANOW, attrs)
        except BaseException:
            os.close(master)
            os.close(slave)
            raise
        return cls(write_fd=master, child_fd=slave, tty=True)

    def stdio(self, env: dict[bytes, bytes]) -> Stdio:
        """What the job's shell is started with (``exec.tree.Stdio``)."""
        assert self._fd is not None
        assert self._child_fd is not None
        if self.tty:
            term = {} if os.environ.get("TERM") else {b"TERM": b"xterm-256color"}
            return Stdio(terminal=(self._fd, self._child_fd), env={**env, **term})
        return Stdio(stdin=self._child_fd, env=env)

    def started(self) -> None:
        """The job has its end: the host closes its copy. (A terminal's master is
        made non-blocking only now: the tree's reader holds a copy of it.)"""
        if self._child_fd is not None:
            os.close(self._child_fd)
            self._child_fd = None
        if self._fd is not None:
            os.set_blocking(self._fd, False)

    def abandon(self) -> None:
        """The job did not start: close both ends."""
        if self._child_fd is not None:
            os.close(self._child_fd)
            self._child_fd = None
        self.close()

    @property
    def closed(self) -> bool:
        return self._fd is None

    def close(self) -> None:
        """Close the job's stdin (it reads end of file; a terminal's job gets a hangup
        only when it ends)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    async def write(self, data: bytes, *, timeout_s: float) -> int:
        """Write ``data`` without blocking the loop, waiting up to ``timeout_s`` for
        room; the bytes written (fewer when the job does not read, or is gone)."""
        fd = self._fd
        if fd is None:
            return 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        view = memoryview(data)
        written = 0
        while written < len(data):
            try:
                written += os.write(fd, view[written:])
                continue
            except BlockingIOError:
                pass
            except OSError as err:
                if err.errno in (errno.EPIPE, errno.EIO):
                    return written  # nobody reads it any more
                raise
            remaining = deadline - loop.time()
            if remaining <= 0 or not await _writable(loop, fd, remaining):
                return written
        return written


async def _writable(loop: asyncio.AbstractEventLoop, fd: int, timeout_s: float) -> bool:
    """Whether ``fd`` took room for a write within ``timeout_s``."""
    ready: asyncio.Future[None] = loop.create_future()

    def on_writable() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_writer(fd, on_writable)
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ready, timeout_s)
    finally:
        loop.remove_writer(fd)
    return ready.done()
