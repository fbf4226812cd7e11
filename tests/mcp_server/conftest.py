"""The real server, driven by the official mcp SDK client.

Three ways in, the ``connect`` fixture's params:
    stdio         one ``toolbound serve --stdio`` session per module, with the
                  default client (mode "auto": the 2026-07-28 per-request era)
    http-session  one ``toolbound serve --http 127.0.0.1:0`` per module; a
                  client per test in the handshake era (an ``Mcp-Session-Id``)
    http          the same server; the default client (sessionless 2026-07-28)

A module overrides the ``serve_flags`` fixture (module scope) to serve with
further flags (``--structured``: the 0.2 result shape).

``async with connect() as conn`` gives each test its own folder in the
workspace (``conn.rel``), since workspaces are shared by the module, and
``conn.notifications``, every notification the client received meanwhile.
A module using the shared stdio session runs on a module-scoped event loop
(``pytestmark = pytest.mark.asyncio(loop_scope="module")``). ``clients``
builds further clients.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import pytest_asyncio
from mcp import Client, StdioServerParameters

from mcp_client import bearer, bearer_transport, read_announcement, serve_process

# Every wait on the server is bounded by this.
WAIT_S = 30.0


def serve_args(workspace: Path, data_dir: Path, *transport: str) -> list[str]:
    return [
        "-m",
        "toolbound",
        "serve",
        *transport,
        "--workspace",
        str(workspace),
        "--data-dir",
        str(data_dir),
    ]


@pytest.fixture(scope="module")
def serve_flags() -> tuple[str, ...]:
    """Further ``serve`` flags of the module's servers (a module overrides this)."""
    return ()


@pytest.fixture
def serve_argv() -> Any:
    """``serve_args`` for test modules (``conftest`` itself is not importable by name)."""
    return serve_args


@dataclass
class HttpServer:
    url: str
    workspace: Path
    data_dir: Path
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return bearer(self.token)


@pytest.fixture(scope="module")
def http_server(
    tmp_path_factory: pytest.TempPathFactory, serve_flags: tuple[str, ...]
) -> Iterator[HttpServer]:
    root = tmp_path_factory.mktemp("http")
    workspace, data_dir = root / "ws", root / "data"
    workspace.mkdir()
    argv = serve_args(workspace, data_dir, "--http", "127.0.0.1:0", *serve_flags)
    with serve_process(argv) as lines:
        url, token = read_announcement(lines)
        yield HttpServer(url, workspace, data_dir, token)


@dataclass
class Conn:
    """A connected client, the server's workspace and data dir, and this test's folder."""

    client: Client
    kind: str
    workspace: Path
    data_dir: Path
    rel: str
    notifications: list[types.ServerNotification] = field(default_factory=list)

    @property
    def dir(self) -> Path:
        return self.workspace / self.rel


class Clients:
    """Builds SDK clients for the real server."""

    @staticmethod
    def stdio(workspace: Path, data_dir: Path, *flags: str, **kwargs: Any) -> Client:
        # The SDK hands the server a minimal environment; keep the import path.
        env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else None
        params = StdioServerParameters(
            command=sys.executable,
            args=serve_args(workspace, data_dir, "--stdio", *flags),
            env=env,
        )
        return Client(params, read_timeout_seconds=WAIT_S, **kwargs)

    @staticmethod
    def http(server: HttpServer, *, mode: str, **kwargs: Any) -> Client:
        transport = bearer_transport(server.url, server.token)
        return Client(transport, mode=mode, read_timeout_seconds=WAIT_S, **kwargs)


@pytest.fixture
def clients() -> Clients:
    return Clients()


@dataclass
class Notifications:
    """Where the client's notifications go: the current test's list."""

    current: list[types.ServerNotification] = field(default_factory=list)

    async def __call__(self, message: object) -> None:
        if not isinstance(message, Exception):
            self.current.append(message)  # type: ignore[arg-type]


@dataclass
class StdioSession:
    client: Client
    workspace: Path
    data_dir: Path
    notifications: Notifications


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stdio_session(
    tmp_path_factory: pytest.TempPathFactory, serve_flags: tuple[str, ...]
) -> AsyncIterator[StdioSession]:
    """One stdio server and client for the module, entered and left by one task of its own.

    (The SDK client holds anyio task groups, which must be left in the task
    that entered them; a yield fixture's teardown runs in another.)
    """
    root = tmp_path_factory.mktemp("stdio")
    workspace, data_dir = root / "ws", root / "data"
    workspace.mkdir()
    notifications = Notifications()
    client = Clients.stdio(workspace, data_dir, *serve_flags, message_handler=notifications)
    ready, stop = asyncio.Event(), asyncio.Event()

    async def own() -> None:
        async with client:
            ready.set()
            await stop.wait()

    owner = asyncio.create_task(own())
    started = asyncio.ensure_future(ready.wait())
    await asyncio.wait({owner, started}, timeout=WAIT_S, return_when=asyncio.FIRST_COMPLETED)
    started.cancel()
    assert ready.is_set(), owner.exception() if owner.done() else "the stdio server is slow"
    try:
        yield StdioSession(client, workspace, data_dir, notifications)
    finally:
        stop.set()
        await asyncio.wait_for(owner, WAIT_S)


class Connect:
    """``async with connect() as conn``: a client (HTTP: entered in the test's own task)."""

    def __init__(self, kind: str, server: HttpServer | StdioSession) -> None:
        self.kind = kind
        self.server = server

    @contextlib.asynccontextmanager
    async def __call__(self) -> AsyncIterator[Conn]:
        rel = f"t-{uuid.uuid4().hex[:8]}"
        notifications: list[types.ServerNotification] = []
        (self.server.workspace / rel).mkdir()
        if isinstance(self.server, StdioSession):
            self.server.notifications.current = notifications
            yield Conn(
                self.server.client,
                self.kind,
                self.server.workspace,
                self.server.data_dir,
                rel,
                notifications,
            )
            return
        mode = "legacy" if self.kind == "http-session" else "auto"
        client = Clients.http(self.server, mode=mode, message_handler=Notifications(notifications))
        async with client:
            yield Conn(
                client, self.kind, self.server.workspace, self.server.data_dir, rel, notifications
            )


@pytest.fixture(params=["stdio", "http-session", "http"])
def connect(request: pytest.FixtureRequest) -> Connect:
    kind: str = request.param
    fixture = "stdio_session" if kind == "stdio" else "http_server"
    return Connect(kind, request.getfixturevalue(fixture))
