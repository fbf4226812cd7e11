"""The web view as ``toolbound serve`` runs it: one hub, the store, the routes, the URL.

``toolbound serve`` (HTTP) opens one ``WebService``, passes ``routes()`` to
the MCP SDK's ``streamable_http_app(custom_starlette_routes=...)`` so the
page shares the port of ``/mcp``, calls ``attach``/``detach`` as each MCP
session's ``ToolHost`` starts and ends, prints ``url(host, port)`` and
``close()``s it when the server stops. The session store it reads is opened
here; a store that cannot be opened leaves the live calls only (logged).

Pieces:
    WebService  hub + view + store for one server: routes(), attach(), detach(), url(), close()
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.routing import Route

from toolbound.limits import DEFAULT_LIMITS, Limits
from toolbound.paths import default_data_dir
from toolbound.store import SessionStore, StoreUnavailable, store_location
from toolbound.web.app import WebView, host_reader, new_token, page_url
from toolbound.web.follow import StoreFollower
from toolbound.web.hub import Hub
from toolbound.web.source import StoreSource

if TYPE_CHECKING:
    from toolbound.host import ToolHost

log = logging.getLogger(__name__)


@dataclass
class WebService:
    """The web view of one server: every session's calls, live and recorded."""

    hub: Hub
    view: WebView
    store: SessionStore | None = None
    follower: StoreFollower | None = None

    @classmethod
    def open(
        cls,
        *,
        workspace: Path,
        data_dir: Path | None,
        allow_external: Iterable[Path] = (),
        limits: Limits = DEFAULT_LIMITS,
        token: str | None = None,
        store_url: str | None = None,
    ) -> WebService:
        """The web view of the hosts serving ``workspace``, and of every session in the store.

        The store is ``store_url``, else ``$TOOLBOUND_STORE``, else the one in
        ``data_dir``. A PostgreSQL store is followed live (LISTEN), so the
        running calls of other hosts sharing it stream like this host's.
        ``token`` guards it (None: a new random one).
        """
        hub = Hub()
        reader = host_reader(
            workspace=workspace, data_dir=data_dir, allow_external=allow_external, limits=limits
        )
        store: SessionStore | None = None
        scratch_dir = data_dir if data_dir is not None else default_data_dir()
        location = store_location(store_url, scratch_dir)
        try:
            store = SessionStore(location, limits=limits, scratch_dir=scratch_dir)
        except StoreUnavailable as err:
            log.warning("toolbound: the web view shows live calls only (store: %s)", err)
        follower: StoreFollower | None = None
        if store is not None and store.backend.kind == "postgresql":
            follower = StoreFollower(str(location))
            try:
                follower.start()
            except OSError as err:
                log.warning("toolbound: the web view replays other hosts' calls only: %s", err)
                follower = None
        source = StoreSource(store, follower) if store is not None else None
        return cls(
            hub=hub,
            view=WebView(hub, reader, source, token=token or new_token()),
            store=store,
            follower=follower,
        )

    def close(self) -> None:
        if self.follower is not None:
            self.follower.close()
        if self.store is not None:
            self.store.close()

    def routes(self) -> list[Route]:
        return self.view.routes()

    def attach(self, host: ToolHost) -> None:
        self.hub.attach(host)

    def detach(self, host: ToolHost) -> None:
        self.hub.detach(host)

    @property
    def token(self) -> str:
        """The one token of the server: the web view's, and the bearer token of ``/mcp``."""
        return self.view.token

    def url(self, host: str, port: int) -> str:
        """The page's URL with the token: print it once, when the server starts."""
        return page_url(host, port, self.view.token)
