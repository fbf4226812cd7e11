"""The live web view: watch a session's tool calls stream, open their full output.

``toolbound serve`` (HTTP) mounts ``WebView.routes()`` beside ``/mcp`` and
attaches every session's ``ToolHost`` to one ``Hub``. Importing this package
imports Starlette; ``toolbound call`` never does.

Pieces:
    hub      Hub: every call of the attached hosts, live, for subscribers
    calls    what a row of the page shows of a call (pure)
    source   CallSource: the store side, read back
    app      WebView: the page, its JSON API, its event streams, the token
    service  WebService: what ``toolbound serve`` mounts beside /mcp
    server   LocalServer: the web view on its own loopback port (tests, bench)
    static/  the page itself: index.html, app.js, ansi.js, style.css
"""

from toolbound.web.app import WebView, build_app, host_reader, new_token, page_url
from toolbound.web.calls import CallRecord, summary
from toolbound.web.hub import Hub
from toolbound.web.service import WebService
from toolbound.web.source import CallSource, StoreSource

__all__ = [
    "CallRecord",
    "CallSource",
    "Hub",
    "StoreSource",
    "WebService",
    "WebView",
    "build_app",
    "host_reader",
    "new_token",
    "page_url",
    "summary",
]
