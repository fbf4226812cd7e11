"""Fixtures for the web view: a real host, hub, store and server, and a real Chromium.

The server is uvicorn on a free loopback port, in the test's event loop, so
a test can run tool calls on the host while the browser watches. Chromium is
Debian's (``make browser`` installs it), driven by Playwright.

One Chromium serves a whole test module (launching it costs a second or two
on a loaded machine); each test gets a fresh browser context of its own
(cookies, storage), so no test sees another's token cookie. The web tests
therefore run in one event loop per module (``pytestmark`` in each module,
``loop_scope="module"`` here): Playwright's objects belong to the loop that
made them.

Screenshots are test artifacts, written to ``build/screenshots/`` (gitignored).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest_asyncio

from toolbound.host import ToolHost
from toolbound.store import SessionStore
from toolbound.web import Hub, StoreSource, WebView, build_app, host_reader
from toolbound.web.server import LocalServer

CHROMIUM = os.environ.get("TOOLBOUND_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Every wait in a browser test is bounded by this.
WAIT_MS = 15_000
SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"
TOKEN = "test-token-0123456789"
WIDE = {"width": 1100, "height": 800}

Screenshot = Callable[[Any, str], Awaitable[Path]]


@dataclass
class Served:
    host: ToolHost
    hub: Hub
    view: WebView
    server: LocalServer
    workspace: Path

    @property
    def url(self) -> str:
        return self.server.base_url

    @property
    def page_url(self) -> str:
        return f"{self.url}/?token={self.view.token}"

    def call_url(self, call_id: str) -> str:
        return f"{self.url}/#s={self.host.session_id}&c={call_id}"


@pytest_asyncio.fixture(loop_scope="module")
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    data = tmp_path / "data"
    hub = Hub()
    async with ToolHost(workspace=workspace, data_dir=data, session_id="web-s1") as host:
        hub.attach(host)
        with SessionStore(data) as store:
            reader = host_reader(workspace=workspace, data_dir=data)
            view = WebView(hub, reader, StoreSource(store), token=TOKEN)
            server = await LocalServer(build_app(view)).start()
            try:
                yield Served(host, hub, view, server, workspace)
            finally:
                await server.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chromium() -> AsyncIterator[Any]:
    """One headless Chromium for the module's tests."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        launched = await pw.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield launched
        finally:
            await launched.close()


@pytest_asyncio.fixture(loop_scope="module")
async def browser(chromium: Any) -> AsyncIterator[Any]:
    """A fresh browser context (no cookies yet) in the module's Chromium."""
    context = await chromium.new_context(viewport=WIDE)
    context.set_default_timeout(WAIT_MS)
    try:
        yield context
    finally:
        await context.close()


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Any, served: Served) -> AsyncIterator[Any]:
    """A page that has visited the printed URL (so it holds the token cookie)."""
    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    response = await page.goto(served.page_url)
    assert response is not None
    assert response.status == 200
    yield page
    assert errors == []


@pytest_asyncio.fixture(loop_scope="module")
async def screenshot() -> Screenshot:
    """``await screenshot(page, "name")`` writes ``build/screenshots/name.png``."""

    async def take(page: Any, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        await page.screenshot(path=str(path), full_page=True)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        return path

    return take
