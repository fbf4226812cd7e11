"""The web view as ``toolbound serve`` runs it: one hub, the store, the routes, the URL.

``toolbound serve`` (HTTP) makes one ``WebService``, passes ``routes()`` to
the MCP SDK's ``streamable_http_app(custom_starlette_routes=...)`` so the
page shares the port of ``/mcp``, calls ``attach``/``detach`` as each MCP
session's ``ToolHost`` starts and ends, and prints ``url(host, port)``.

Pieces:
    WebService  hub + view + store for one server: routes(), attach(), detach(), url()
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.routing import Route

from toolbound.limits import DEFAULT_LIMITS, Limits
from toolbound.web.app import WebView, host_reader, page_url
from toolbound.web.hub import Hub
from toolbound.web.source import StoreSource

if TYPE_CHECKING:
    from toolbound.host import ToolHost


@dataclass
class WebService:
    """The web view of one server: every session's calls, live and recorded."""

    hub: Hub
    view: WebView
    store: Any = None

    @classmethod
    def open(
        cls,
        *,
        workspace: Path,
        data_dir: Path | None,
        allow_external: Iterable[Path] = (),
        limits: Limits = DEFAULT_LIMITS,
        store: Any = None,
    ) -> WebService:
        """A service over ``store`` (a ``SessionStore``; None: live calls only)."""
        hub = Hub()
        reader = host_reader(
            workspace=workspace, data_dir=data_dir, allow_external=allow_external, limits=limits
        )
        source = StoreSource(store) if store is not None else None
        return cls(hub=hub, view=WebView(hub, reader, source), store=store)

    def routes(self) -> list[Route]:
        return self.view.routes()

    def attach(self, host: ToolHost) -> None:
        self.hub.attach(host)

    def detach(self, host: ToolHost) -> None:
        self.hub.detach(host)

    def url(self, host: str, port: int) -> str:
        """The page's URL with the token: print it once, when the server starts."""
        return page_url(host, port, self.view.token)
