"""Fixtures for the web view: a real host, hub, store and server, and a real Chromium.

The server is uvicorn on a free loopback port, in the test's event loop, so
a test can run tool calls on the host while the browser watches. Chromium is
Debian's (``make browser`` installs it), driven by Playwright.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from toolbound.host import ToolHost
from toolbound.store import SessionStore
from toolbound.web import Hub, StoreSource, WebView, build_app, host_reader
from toolbound.web.server import LocalServer

CHROMIUM = os.environ.get("TOOLBOUND_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
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
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "web"
TOKEN = "test-token-0123456789"


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


@pytest.fixture
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


@pytest.fixture
async def browser(tmp_path: Path) -> AsyncIterator[Any]:
    """A fresh Chromium profile; yields the Playwright browser context."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        context = await pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1100, "height": 800},
        )
        context.set_default_timeout(WAIT_MS)
        try:
            yield context
        finally:
            await context.close()


@pytest.fixture
async def page(browser: Any, served: Served) -> AsyncIterator[Any]:
    """A page that has visited the printed URL (so it holds the token cookie)."""
    page = browser.pages[0] if browser.pages else await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    response = await page.goto(served.page_url)
    assert response is not None
    assert response.status == 200
    yield page
    assert errors == []
