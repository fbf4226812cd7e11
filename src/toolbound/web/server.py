"""Serving an ASGI app on a loopback socket, in the running event loop.

Used where the web view runs on its own (tests, the benchmark); ``toolbound
serve`` runs it inside the MCP server's app instead.

Pieces:
    listen         a bound, listening TCP socket (port 0 picks a free one)
    LocalServer    uvicorn on that socket as a task: start(), base_url, stop()
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass, field
from typing import Any

DEFAULT_HOST = "127.0.0.1"
# How long stop() lets open requests (event streams) finish before closing them.
SHUTDOWN_GRACE_S = 2


def listen(host: str = DEFAULT_HOST, port: int = 0) -> socket.socket:
    """A listening socket on ``host:port``; OSError naming the address otherwise."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen()
    except OSError as err:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {err.strerror or err}") from err
    return sock


@dataclass
class LocalServer:
    """An ASGI app served by uvicorn from a task of the running loop."""

    app: Any
    host: str = DEFAULT_HOST
    port: int = 0
    _server: Any = None
    _task: asyncio.Task[None] | None = None
    _sock: socket.socket | None = field(default=None, repr=False)

    async def start(self) -> LocalServer:
        """Bind, then serve; returns once the server accepts connections."""
        import uvicorn

        self._sock = listen(self.host, self.port)
        self.port = self._sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            lifespan="off",
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        )
        self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[self._sock]))
        while not self._server.started:
            if self._task.done():
                self._task.result()
            await asyncio.sleep(0.01)
        return self

    @property
    def base_url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}"

    async def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._task is not None:
            await self._task
        if self._sock is not None:
            self._sock.close()
