"""The web view's HTTP side: the page, its JSON API and its event streams.

Routes (every one needs the token; without it the answer is 403). A session
another token named (``toolbound.namespaces``) is neither listed nor opened:
a route naming it answers 404.

    GET /                                      the page (``?token=`` sets the cookie
                                               and redirects to a URL without it)
    GET /static/{name}                         its scripts and style sheet
    GET /favicon.ico                           204: the page has no icon
    GET /api/sessions                          sessions, newest first: workspace, host,
                                               start, last activity, calls, tokens (the
                                               ledger's total; null when only the hub
                                               knows the session); and the machine this
                                               view runs on (``here``)
    GET /api/sessions/{sid}/ledger             the session's context ledger
                                               (``Session.ledger()``); 404 with the
                                               reason when the store does not know it
    GET /api/sessions/{sid}/jobs               the session's background jobs: command,
                                               state, totals, output so far (each
                                               stream's last lines), whether the
                                               page may stop it (``web.jobs``)
    POST /api/sessions/{sid}/jobs/{id}/stop    stop a job of a host attached here (a
                                               JSON request: another origin's form
                                               cannot send one); 409 when its host
                                               is elsewhere, 404 for an unknown job
    GET /api/sessions/{sid}/calls              a session's calls, oldest first (rows
                                               without the full arguments)
    GET /api/sessions/{sid}/calls/{id}         one call: its row, full arguments,
                                               result, model view, outputs (``gone``
                                               says why one cannot be opened), and
                                               for an "unchanged" Read the call that
                                               sent its window (``unchangedSince``)
    GET /api/sessions/{sid}/calls/{id}/events?after=SEQ
                                               Server-Sent Events: the call's events
                                               with seq > SEQ (or after the
                                               Last-Event-ID header), live from the
                                               hub until its result, else from the
                                               store
    GET /api/sessions/{sid}/calls/{id}/outputs/{name}?offset=&limit=
                                               a window of an output the result names
                                               (a spill file, a Read result's file),
                                               read with the Read tool; 410 with the
                                               reason when it is gone (an ended
                                               session's spill files, another
                                               machine's files, a removed file)

The token is random (``secrets.token_urlsafe``) and is accepted as the
``token`` query parameter, an ``Authorization: Bearer`` header, or the cookie
the page's first visit sets (HttpOnly, SameSite=Strict; an EventSource
cannot send headers). No CORS headers are sent, so another origin can
neither read the API nor open its streams; the page's Content-Security-Policy
allows only its own script, and the script writes output as text only (images
only as ``data:`` URLs, which the page builds from an image Read's stored result).

The viewer's own Reads run the Read tool's function outside any host, so
they are neither listened to nor recorded as the agent's calls.

Pieces:
    WebView      hub + store + reader + token -> the routes
    Reader       how the viewer runs Read for a session (in its workspace, when known)
    host_reader  the default Reader: the Read tool in the session's roots
    build_app    a Starlette app of just the web view (the MCP server mounts routes())
    new_token, cookie_name, page_url   the token, its cookie's name, the URL to print
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import secrets
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from toolbound import views
from toolbound.jobs.table import JobTable
from toolbound.limits import DEFAULT_LIMITS, Limits
from toolbound.namespaces import visible_to
from toolbound.store.summaries import machine_name
from toolbound.web.calls import (
    CallRecord,
    Origin,
    detail,
    gone_reason,
    outputs_of,
    reread_of,
    summary,
)
from toolbound.web.hub import Hub
from toolbound.web.jobs import JobStopRefused, JobTails, job_rows, stop_job
from toolbound.web.source import CallSource, merged_records

# (session id, Read arguments, the session's workspace on this machine or None) -> result
Reader = Callable[[str, dict[str, Any], Path | None], Awaitable[dict[str, Any]]]
Endpoint = Callable[[Request], Awaitable[Response]]

# An idle event stream sends a comment this often, so proxies and the
# browser keep it open and a vanished client is noticed.
KEEPALIVE_S = 15.0

_STATIC = {
    "app.js": "text/javascript; charset=utf-8",
    "ansi.js": "text/javascript; charset=utf-8",
    "ledger.js": "text/javascript; charset=utf-8",
    "jobs.js": "text/javascript; charset=utf-8",
    "dom.js": "text/javascript; charset=utf-8",
    "files.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
_FORBIDDEN = (
    "403: the toolbound web view needs its token. Open the full URL that "
    "`toolbound serve` printed (it ends in ?token=...).\n"
)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def cookie_name(token: str) -> str:
    """Per-token, so two servers on one host (cookies ignore ports) do not collide."""
    return "toolbound_" + hashlib.sha256(token.encode()).hexdigest()[:12]


def host_reader(
    *,
    workspace: Path,
    data_dir: Path | None,
    allow_external: Iterable[Path] = (),
    limits: Limits = DEFAULT_LIMITS,
) -> Reader:
    """Read with the Read tool's function, in the roots of the session's host.

    The Read tool's roots apply: the session's scratch dir (its spill files),
    the session's workspace (the one its host recorded, else ``workspace``),
    the approved folders. No host runs it, so the viewer's reads are neither
    listened to nor recorded as the agent's tool calls.
    """
    from toolbound.host import run_tool
    from toolbound.paths import Roots, default_data_dir
    from toolbound.scratch import Scratch
    from toolbound.tools import ToolContext

    data = (data_dir if data_dir is not None else default_data_dir()).absolute()
    external = tuple(allow_external)

    async def read(
        session_id: str, args: dict[str, Any], session_workspace: Path | None
    ) -> dict[str, Any]:
        scratch = Scratch(data, session_id)
        root = session_workspace if session_workspace is not None else workspace
        ctx = ToolContext(
            limits=limits,
            roots=Roots.create(root, scratch.dir, external),
            scratch=scratch,
            tool_call_id=f"web_{uuid.uuid4().hex[:16]}",
            emit=lambda _stream, _data: None,
            abort=asyncio.Event(),
        )
        return (await run_tool("Read", args, ctx)).to_wire()

    return read


@functools.cache
def _static_bytes(name: str) -> bytes:
    """A file of the page (package data), read once: a few kilobytes each."""
    return (resources.files("toolbound.web") / "static" / name).read_bytes()


def _sse(event: dict[str, Any]) -> str:
    # JSON escapes newlines, so one data line holds the whole event.
    data = json.dumps(event, ensure_ascii=False)
    return f"id: {event['seq']}\nevent: {event['type']}\ndata: {data}\n\n"


def _int_param(request: Request, name: str, default: int | None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer (got {raw!r})") from None


@dataclass
class WebView:
    """The web view of a hub (live calls) and a store (recorded ones)."""

    hub: Hub
    reader: Reader
    source: CallSource | None = None
    token: str = field(default_factory=new_token)
    # The machine this web view runs on: outputs of other machines' sessions are there.
    here: str = field(default_factory=machine_name)
    # The output so far of running jobs of hosts elsewhere, read on poll by poll.
    _tails: JobTails = field(default_factory=JobTails, init=False, repr=False)

    # --- the guard ------------------------------------------------------------

    def authorized(self, request: Request) -> bool:
        """The token came as query parameter, bearer header, or cookie."""
        offered = [
            request.query_params.get("token"),
            request.cookies.get(cookie_name(self.token)),
        ]
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            offered.append(auth[len("bearer ") :].strip())
        return any(
            o is not None and secrets.compare_digest(o.encode(), self.token.encode())
            for o in offered
        )

    def _guard(self, endpoint: Endpoint) -> Endpoint:
        async def guarded(request: Request) -> Response:
            if not self.authorized(request):
                return PlainTextResponse(_FORBIDDEN, status_code=403, headers=_HEADERS)
            sid = request.path_params.get("sid")
            if sid is not None and not visible_to(self.token, sid):
                # Another token's named session: as if there were none.
                return PlainTextResponse("no such session\n", status_code=404, headers=_HEADERS)
            response = await endpoint(request)
            for key, value in _HEADERS.items():
                response.headers.setdefault(key, value)
            return response

        return guarded

    def routes(self) -> list[Route]:
        """The routes, each behind the token; mount them beside ``/mcp``."""
        table: list[tuple[str, Endpoint]] = [
            ("/", self.page),
            ("/static/{name}", self.static),
            ("/favicon.ico", self.no_icon),
            ("/api/sessions", self.sessions),
            ("/api/sessions/{sid}/ledger", self.ledger),
            ("/api/sessions/{sid}/calls", self.calls),
            ("/api/sessions/{sid}/calls/{cid}", self.call),
            ("/api/sessions/{sid}/calls/{cid}/events", self.events),
            ("/api/sessions/{sid}/calls/{cid}/outputs/{name}", self.output),
            ("/api/sessions/{sid}/jobs", self.jobs),
        ]
        posts: list[tuple[str, Endpoint]] = [
            ("/api/sessions/{sid}/jobs/{jid}/stop", self.stop),
        ]
        return [Route(path, self._guard(fn), methods=["GET"]) for path, fn in table] + [
            Route(path, self._guard(fn), methods=["POST"]) for path, fn in posts
        ]

    # --- the page -------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        if "token" in request.query_params:
            # Trade the token in the URL for the cookie, and drop it from the address bar.
            response: Response = RedirectResponse("/", status_code=303)
            response.set_cookie(
                cookie_name(self.token), self.token, httponly=True, samesite="strict", path="/"
            )
            return response
        return Response(
            _static_bytes("index.html"),
            media_type="text/html; charset=utf-8",
            headers={"Content-Security-Policy": _CSP},
        )

    async def no_icon(self, request: Request) -> Response:
        return Response(status_code=204)

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return PlainTextResponse("not found\n", status_code=404)
        return Response(_static_bytes(name), media_type=_STATIC[name])

    # --- the API --------------------------------------------------------------

    async def sessions(self, request: Request) -> Response:
        """Newest first: the hub's sessions the store does not know (yet), then the stored.

        ``tokens`` is the session's context total (the ledger's), from the
        store: None for a session only the hub knows.
        """
        stored = await asyncio.to_thread(self.source.session_rows) if self.source else []
        live = self.hub.live_sessions()
        known = {row["id"] for row in stored}
        seen = {r.session_id for r in self.hub.records()}
        unstored = [sid for sid in [*live, *sorted(seen - set(live))] if sid not in known]
        rows = [self._hub_row(sid) for sid in unstored] + stored
        rows = [row for row in rows if visible_to(self.token, row["id"])]
        return JSONResponse(
            {
                "here": self.here,
                "sessions": [{"tokens": None, **row, "live": row["id"] in live} for row in rows],
            }
        )

    def _hub_row(self, session_id: str) -> dict[str, Any]:
        """A session only the hub knows (its store is unusable): what its host tells."""
        host = self.hub.host_for(session_id)
        records = self.hub.records(session_id)
        return {
            "id": session_id,
            "createdAt": None,
            "endedAt": None,
            "workspace": str(host.workspace) if host is not None else None,
            "host": self.here if host is not None else None,
            "toolCalls": len(records),
            "lastActivity": max((r.ended_at or r.started_at for r in records), default=None),
        }

    async def _session_row(self, session_id: str) -> dict[str, Any] | None:
        if self.source is None:
            return None
        rows = await asyncio.to_thread(self.source.session_rows, session_id)
        return rows[0] if rows else None

    async def _origin(self, session_id: str) -> tuple[Origin, Path | None]:
        """Where the session runs, and its workspace when that is on this machine."""
        row = await self._session_row(session_id)
        host = self.hub.host_for(session_id)
        if row is None:
            here = self.here if host is not None else None
            return Origin(ended=False, host=here), host.workspace if host else None
        workspace = row["workspace"] if row["host"] == self.here else None
        origin = Origin(ended=row["endedAt"] is not None, host=row["host"])
        return origin, Path(workspace) if workspace else None

    async def _records(self, session_id: str) -> list[CallRecord]:
        stored: list[CallRecord] = []
        if self.source is not None:
            stored = await asyncio.to_thread(self.source.call_records, session_id)
        return merged_records(self.hub.records(session_id), stored)

    async def _record(self, request: Request) -> CallRecord | None:
        sid, cid = request.path_params["sid"], request.path_params["cid"]
        record = self.hub.record(sid, cid)
        if (record is None or self.hub.partial(sid, cid)) and self.source is not None:
            # A record that left part of its result out (an image's data) reads it whole
            # from the store, while the store has it.
            stored = await asyncio.to_thread(self.source.call_records, sid)
            whole = next((r for r in reversed(stored) if r.tool_call_id == cid), None)
            record = whole or record
        return record

    async def ledger(self, request: Request) -> Response:
        """The session's context ledger, as the store measured its calls."""
        sid = request.path_params["sid"]
        if self.source is None:
            reason = "This web view has no session store: the ledger is kept there."
            return JSONResponse({"error": reason}, status_code=404)
        ledger = await asyncio.to_thread(self.source.ledger, sid)
        if ledger is None:
            reason = f"The store holds no session {sid!r}: it records no ledger for it."
            return JSONResponse({"error": reason}, status_code=404)
        return JSONResponse(ledger)

    def _jobs_of(self, session_id: str) -> JobTable | None:
        host = self.hub.host_for(session_id)
        return host.jobs if host is not None else None

    async def jobs(self, request: Request) -> Response:
        sid = request.path_params["sid"]
        records = await self._records(sid)
        rows = job_rows(records, self._jobs_of(sid))
        waiting = [row["jobId"] for row in rows if row["output"] is None]
        self._tails.keep_only(sid, waiting)
        for jid in waiting:  # running on a host elsewhere: the chunks it streamed
            events = await self._events_after(sid, jid, self._tails.after(sid, jid))
            next(r for r in rows if r["jobId"] == jid)["output"] = self._tails.take(
                sid, jid, events
            )
        return JSONResponse({"jobs": rows})

    async def _events_after(self, sid: str, cid: str, after: int) -> list[dict[str, Any]] | None:
        events = self.hub.events(sid, cid)
        if events is not None:
            return [e for e in events if e["seq"] > after]
        if self.source is None:
            return None
        return await asyncio.to_thread(self.source.call_events, sid, cid, after)

    async def stop(self, request: Request) -> Response:
        """Stop a job (the page asked for confirmation first)."""
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return JSONResponse({"error": "a stop is a JSON request"}, status_code=415)
        sid, jid = request.path_params["sid"], request.path_params["jid"]
        try:
            entry = await stop_job(self._jobs_of(sid), jid)
        except JobStopRefused as refused:
            return JSONResponse({"error": refused.reason}, status_code=refused.status)
        return JSONResponse(entry)

    async def calls(self, request: Request) -> Response:
        records = await self._records(request.path_params["sid"])
        rows = [summary(r) for r in records]
        return JSONResponse({"calls": rows})

    async def call(self, request: Request) -> Response:
        record = await self._record(request)
        if record is None:
            return JSONResponse({"error": "no such call"}, status_code=404)
        origin, _ = await self._origin(record.session_id)
        since = None
        if record.result and views.reread_avoided(record.tool, record.result):
            since = reread_of(record, await self._records(record.session_id))
        return JSONResponse(detail(record, origin, self.here, unchanged_since=since))

    async def events(self, request: Request) -> Response:
        sid, cid = request.path_params["sid"], request.path_params["cid"]
        try:
            after = _int_param(request, "after", None)
        except ValueError as err:
            return JSONResponse({"error": str(err)}, status_code=400)
        if after is None:
            # An EventSource reconnecting says where it stopped.
            last = request.headers.get("last-event-id", "")
            after = int(last) if last.lstrip("-").isdigit() else -1
        feed = await self._feed(sid, cid, after)
        if feed is None:
            return JSONResponse({"error": "no such call"}, status_code=404)
        return StreamingResponse(
            self._stream(feed),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def _feed(self, sid: str, cid: str, after: int) -> AsyncIterator[dict[str, Any]] | None:
        """Live from the hub while it holds the call; from the store otherwise (replayed,
        or followed live while another host of a shared store runs it)."""
        with contextlib.suppress(KeyError):
            return self.hub.subscribe(sid, cid, after=after)
        if self.source is None:
            return None
        return await self.source.follow(sid, cid, after)

    async def _stream(self, feed: AsyncIterator[dict[str, Any]]) -> AsyncIterator[str]:
        """SSE text of the feed's events, a comment when idle, ``end`` when it is over.

        The next event is awaited in a task of its own, so a keep-alive
        timeout never cancels the feed itself.
        """
        yield ": toolbound\n\n"
        pending: asyncio.Task[dict[str, Any]] | None = None
        try:
            while True:
                if pending is None:
                    pending = asyncio.ensure_future(anext(feed))
                done, _ = await asyncio.wait({pending}, timeout=KEEPALIVE_S)
                if not done:
                    yield ": keepalive\n\n"
                    continue
                task, pending = pending, None
                try:
                    event = task.result()
                except StopAsyncIteration:
                    break
                yield _sse(event)
            yield "event: end\ndata: {}\n\n"
        finally:
            if pending is not None:
                pending.cancel()
                await asyncio.wait({pending})
            aclose = getattr(feed, "aclose", None)
            if aclose is not None:
                await aclose()

    async def output(self, request: Request) -> Response:
        """A window of a call's output file, read with the Read tool (never whole)."""
        record = await self._record(request)
        if record is None:
            return JSONResponse({"error": "no such call"}, status_code=404)
        named = {o["name"]: o for o in outputs_of(record.tool, record.result)}
        output = named.get(request.path_params["name"])
        if output is None:
            return JSONResponse({"error": "this call has no such output"}, status_code=404)
        try:
            offset = _int_param(request, "offset", output["offset"])
            limit = _int_param(request, "limit", None)
        except ValueError as err:
            return JSONResponse({"error": str(err)}, status_code=400)
        origin, workspace = await self._origin(record.session_id)
        gone = gone_reason(output, origin, self.here)
        if gone is not None:
            return JSONResponse({"error": gone, "gone": True}, status_code=410)
        args: dict[str, Any] = {"path": output["path"], "offset": offset}
        if limit is not None:
            args["limit"] = limit
        result = await self.reader(record.session_id, args, workspace)
        if "error" in result:
            # The Read tool's message is for the model; the page says what happened.
            return JSONResponse(_unreadable(output["path"], result["error"]), status_code=410)
        return JSONResponse(result)


def _unreadable(path: str, error: dict[str, Any]) -> dict[str, Any]:
    if error.get("code") == "TOOL_NOT_FOUND":
        reason = f"The file {path} is gone: it was removed or moved after the call."
    else:
        reason = f"The web view cannot read {path} now ({error.get('code')})."
    return {"error": reason, "gone": True, "code": error.get("code")}


def build_app(view: WebView) -> Starlette:
    """A Starlette app serving only the web view (the MCP server mounts ``view.routes()``)."""
    return Starlette(routes=view.routes())


def page_url(host: str, port: int, token: str) -> str:
    """The URL to print at start-up: the page, with the token."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"
