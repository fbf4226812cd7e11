"""The web view's HTTP API over a real server: the token, the rows, the event streams."""

from __future__ import annotations

import json
from typing import Any

import httpx2 as httpx
import pytest
import pytest_asyncio

# One event loop per module: the module shares one Chromium (conftest.py).
pytestmark = pytest.mark.asyncio(loop_scope="module")

Served = Any  # the fixture's type (conftest.py): host, hub, view, server, workspace

ROUTES = [
    "/",
    "/static/app.js",
    "/api/sessions",
    "/api/sessions/web-s1/ledger",
    "/api/sessions/web-s1/jobs",
    "/api/sessions/web-s1/calls",
    "/api/sessions/web-s1/calls/call_x",
    "/api/sessions/web-s1/calls/call_x/events",
    "/api/sessions/web-s1/calls/call_x/outputs/stdout",
]


def sse_events(body: str) -> list[dict[str, Any]]:
    """The data of each SSE message that has an ``id`` (comments and ``end`` aside)."""
    events = []
    for block in body.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "id" in fields:
            event = json.loads(fields["data"])
            assert fields["id"] == str(event["seq"])
            assert fields["event"] == event["type"]
            events.append(event)
    return events


@pytest_asyncio.fixture(loop_scope="module")
async def client(served: Served) -> Any:
    async with httpx.AsyncClient(base_url=served.url, timeout=15) as c:
        yield c


def bearer(served: Served) -> dict[str, str]:
    return {"Authorization": f"Bearer {served.view.token}"}


@pytest.mark.parametrize("path", ROUTES)
async def test_every_route_refuses_a_request_without_the_token(client: Any, path: str) -> None:
    response = await client.get(path)
    assert response.status_code == 403
    assert response.text.startswith("403: the toolbound web view needs its token.")


async def test_a_stop_without_the_token_is_refused(client: Any) -> None:
    response = await client.post("/api/sessions/web-s1/jobs/job_x/stop", json={})
    assert response.status_code == 403


@pytest.mark.parametrize("path", ROUTES)
async def test_a_wrong_token_is_refused_everywhere(client: Any, path: str) -> None:
    response = await client.get(path, params={"token": "guess"})
    assert response.status_code == 403
    response = await client.get(path, headers={"Authorization": "Bearer guess"})
    assert response.status_code == 403


async def test_the_printed_url_trades_its_token_for_a_strict_cookie(
    client: Any, served: Served
) -> None:
    response = await client.get("/", params={"token": served.view.token})
    assert response.status_code == 303
    assert response.headers["location"] == "/"
    cookie = response.headers["set-cookie"]
    assert served.view.token in cookie
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    page = await client.get("/")  # the client now holds the cookie
    assert page.status_code == 200
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert '<script type="module" src="/static/app.js"></script>' in page.text


async def test_no_cors_headers_are_sent_to_another_origin(client: Any, served: Served) -> None:
    response = await client.get(
        "/api/sessions", headers={**bearer(served), "Origin": "https://evil.example"}
    )
    assert response.status_code == 200
    assert not [h for h in response.headers if h.lower().startswith("access-control-")]


async def test_calls_are_listed_in_order_with_status_duration_and_cut(
    client: Any, served: Served
) -> None:
    host = served.host
    await host.call("Bash", {"command": "echo hi"}, tool_call_id="call_a")
    await host.call("Bash", {"command": "exit 3"}, tool_call_id="call_b")
    await host.call("Bash", {"command": "seq 1 5000"}, tool_call_id="call_c")
    await host.call("Bash", {"command": "sleep 5", "timeout": 1}, tool_call_id="call_d")
    await host.call("Bash", {"command": "true", "timeout": 0}, tool_call_id="call_e")

    sessions = (await client.get("/api/sessions", headers=bearer(served))).json()["sessions"]
    assert [(s["id"], s["endedAt"], s["live"]) for s in sessions] == [("web-s1", None, True)]
    assert isinstance(sessions[0]["createdAt"], float)
    rows = (await client.get("/api/sessions/web-s1/calls", headers=bearer(served))).json()
    got = [
        (r["toolCallId"], r["tool"], r["argsShort"], r["status"], r["cut"]) for r in rows["calls"]
    ]
    assert got == [
        ("call_a", "Bash", "echo hi", "done", False),
        ("call_b", "Bash", "exit 3", "error", False),
        ("call_c", "Bash", "seq 1 5000", "done", True),
        ("call_d", "Bash", "sleep 5", "timedOut", False),
        ("call_e", "Bash", "true", "error", False),
    ]
    assert all(isinstance(r["durationMs"], int) for r in rows["calls"])
    assert rows["calls"][3]["durationMs"] >= 1000
    assert [o["name"] for o in rows["calls"][2]["outputs"]] == ["stdout"]


async def test_a_finished_call_replays_with_the_same_seq_values(
    client: Any, served: Served
) -> None:
    command = "for i in 1 2 3; do echo out $i; echo err $i >&2; done"
    seen = [e async for e in served.host.stream("Bash", {"command": command}, tool_call_id="c1")]
    response = await client.get("/api/sessions/web-s1/calls/c1/events", headers=bearer(served))
    assert response.headers["content-type"].startswith("text/event-stream")
    assert sse_events(response.text) == seen
    assert response.text.endswith("event: end\ndata: {}\n\n")
    later = await client.get("/api/sessions/web-s1/calls/c1/events?after=2", headers=bearer(served))
    assert sse_events(later.text) == [e for e in seen if e["seq"] > 2]


async def test_a_call_the_hub_let_go_of_replays_from_the_store_with_the_same_seqs(
    client: Any, served: Served
) -> None:
    served.hub.retain_bytes = 0  # finished calls' events are dropped at once
    command = "for i in 1 2 3; do echo out $i; echo err $i >&2; done; exit 4"
    seen = [e async for e in served.host.stream("Bash", {"command": command}, tool_call_id="c2")]
    assert served.hub.events("web-s1", "c2") is None
    response = await client.get("/api/sessions/web-s1/calls/c2/events", headers=bearer(served))
    assert sse_events(response.text) == seen
    row = (await client.get("/api/sessions/web-s1/calls/c2", headers=bearer(served))).json()
    assert (row["status"], row["result"]) == ("error", seen[-1]["result"])


async def test_sessions_and_calls_recorded_by_another_host_are_listed(
    client: Any, served: Served
) -> None:
    from toolbound.host import ToolHost

    async with ToolHost(
        workspace=served.workspace, data_dir=served.host.data_dir, session_id="other"
    ) as other:
        await other.call("Bash", {"command": "echo elsewhere"}, tool_call_id="o1")
    sessions = (await client.get("/api/sessions", headers=bearer(served))).json()["sessions"]
    assert [(s["id"], s["live"]) for s in sessions] == [("other", False), ("web-s1", True)]
    rows = (await client.get("/api/sessions/other/calls", headers=bearer(served))).json()
    assert [(r["toolCallId"], r["status"], r["argsShort"]) for r in rows["calls"]] == [
        ("o1", "done", "echo elsewhere")
    ]
    response = await client.get("/api/sessions/other/calls/o1/events", headers=bearer(served))
    assert [e["type"] for e in sse_events(response.text)] == ["chunk", "result"]


async def test_the_viewer_reads_only_outputs_a_result_names(client: Any, served: Served) -> None:
    (served.workspace / "notes.txt").write_text("".join(f"n{i}\n" for i in range(10)))
    await served.host.call("Bash", {"command": "seq 1 5000"}, tool_call_id="cut")
    await served.host.call("Bash", {"command": "echo small"}, tool_call_id="small")

    window = await client.get(
        "/api/sessions/web-s1/calls/cut/outputs/stdout?offset=10&limit=3", headers=bearer(served)
    )
    assert window.json()["content"] == "11\n12\n13\n"
    assert window.json()["offset"] == 10
    for path in [
        "/api/sessions/web-s1/calls/small/outputs/stdout",
        "/api/sessions/web-s1/calls/cut/outputs/stderr",
    ]:
        missing = await client.get(path, headers=bearer(served))
        assert missing.status_code == 404
        assert missing.json() == {"error": "this call has no such output"}
    bad = await client.get(
        "/api/sessions/web-s1/calls/cut/outputs/stdout?offset=x", headers=bearer(served)
    )
    assert bad.status_code == 400
    assert bad.json() == {"error": "offset must be an integer (got 'x')"}
    # The viewer's own reads are not the agent's calls: the session still lists two.
    rows = (await client.get("/api/sessions/web-s1/calls", headers=bearer(served))).json()
    assert [r["toolCallId"] for r in rows["calls"]] == ["cut", "small"]
    # Nor are they recorded: the store holds the agent's two calls only.
    from toolbound.store import SessionStore

    with SessionStore(served.host.data_dir) as store:
        assert [c["toolCallId"] for c in store.tool_calls("web-s1")] == ["cut", "small"]


async def test_a_call_shows_its_whole_arguments_its_model_view_and_why_an_output_is_gone(
    client: Any, served: Served
) -> None:
    from toolbound import estimate_tokens, model_text
    from toolbound.store import SessionStore

    args = {"command": "seq 1 5000", "description": "Count"}
    result = await served.host.call("Bash", args, tool_call_id="counted")
    row = (await client.get("/api/sessions/web-s1/calls/counted", headers=bearer(served))).json()
    text = model_text("Bash", result)
    assert (row["args"], row["description"], row["result"]) == (args, "Count", result)
    assert row["model"] == {
        "text": text,
        "bytes": len(text.encode()),
        "tokens": estimate_tokens(text),
        "client": None,
        "fitBytes": None,
    }
    assert row["outputs"] == [{"name": "stdout", "path": result["spill"]["stdout"], "gone": None}]
    listed = (await client.get("/api/sessions/web-s1/calls", headers=bearer(served))).json()
    assert "args" not in listed["calls"][0]

    # The store says the session now runs on another machine: its files are there.
    with SessionStore(served.host.data_dir) as store:
        store.note_origin("web-s1", workspace="/elsewhere", host="machine-b")
    reason = f"This output is a file on machine-b; this web view runs on {served.view.here}."
    row = (await client.get("/api/sessions/web-s1/calls/counted", headers=bearer(served))).json()
    assert [o["gone"] for o in row["outputs"]] == [reason]
    gone = await client.get(
        "/api/sessions/web-s1/calls/counted/outputs/stdout", headers=bearer(served)
    )
    assert (gone.status_code, gone.json()) == (410, {"error": reason, "gone": True})


async def test_the_ledger_route_is_the_stores_ledger_and_sessions_list_its_tokens(
    client: Any, served: Served
) -> None:
    from toolbound.store import SessionStore

    (served.workspace / "small.txt").write_text("one\ntwo\n")
    await served.host.call("Bash", {"command": "seq 1 5000"}, tool_call_id="l_cut")
    await served.host.call("Read", {"path": "small.txt"}, tool_call_id="l_read")
    response = await client.get("/api/sessions/web-s1/ledger", headers=bearer(served))
    with SessionStore(served.host.data_dir) as store:
        ledger = store.session("web-s1").ledger()
    assert response.json() == ledger
    assert [c["toolCallId"] for c in ledger["calls"]] == ["l_cut", "l_read"]
    assert ledger["total"]["elidedBytes"] > 0
    sessions = (await client.get("/api/sessions", headers=bearer(served))).json()["sessions"]
    assert [(s["id"], s["tokens"]) for s in sessions] == [
        ("web-s1", ledger["total"]["modelTokens"])
    ]

    unknown = await client.get("/api/sessions/nobody/ledger", headers=bearer(served))
    assert unknown.status_code == 404
    assert unknown.json() == {
        "error": "The store holds no session 'nobody': it records no ledger for it."
    }
    bad = await client.get("/api/sessions/..%2Fx/ledger", headers=bearer(served))
    assert bad.status_code == 404


async def test_a_stored_economy_call_shows_the_model_text_it_was_sent_as(
    client: Any, served: Served
) -> None:
    from toolbound.host import ToolHost
    from toolbound.store import SessionStore
    from toolbound.web import StoreSource

    # Styling and a rewritten line: economy sends what a terminal would show.
    command = "printf '\\033[31mred\\033[0m\\n'; printf 'step 1\\rstep 2\\n'"
    async with ToolHost(
        served.workspace, data_dir=served.host.data_dir, session_id="eco", profile="economy"
    ) as eco:
        events = [e async for e in eco.stream("Bash", {"command": command}, tool_call_id="e1")]
    sent = events[-1]["text"]
    assert "<stdout>\nred\nstep 2\n</stdout>" in sent
    # Not the hub's (it does not watch this host): rendered from the store's row.
    assert served.hub.record("eco", "e1") is None
    with SessionStore(served.host.data_dir) as store:
        (record,) = StoreSource(store).call_records("eco")
    assert record.profile == "economy"
    row = (await client.get("/api/sessions/eco/calls/e1", headers=bearer(served))).json()
    assert row["model"]["text"] == sent


async def test_a_job_of_a_host_elsewhere_is_listed_from_the_store_and_not_stopped_here(
    client: Any, served: Served
) -> None:
    from toolbound.host import ToolHost
    from toolbound.web.jobs import NOT_HERE

    args = {"command": "echo begun; sleep 60", "background": True}
    async with ToolHost(served.workspace, data_dir=served.host.data_dir, session_id="far") as far:
        job_id = (await far.call("Bash", args, tool_call_id="bg"))["jobId"]
        await far.call("JobOutput", {"jobId": job_id, "until": "begun", "waitS": 10})
        listed = (await client.get("/api/sessions/far/jobs", headers=bearer(served))).json()
        assert [(j["jobId"], j["command"], j["state"], j["stoppable"]) for j in listed["jobs"]] == [
            (job_id, args["command"], "running", False)
        ]
        assert listed["jobs"][0]["stopNote"] == NOT_HERE
        path = f"/api/sessions/far/jobs/{job_id}/stop"
        refused = await client.post(path, json={}, headers=bearer(served))
        assert (refused.status_code, refused.json()) == (409, {"error": NOT_HERE})
        assert far.jobs.get(job_id).running
    # Its host closed and stopped it: the store has its end.
    ended = (await client.get("/api/sessions/far/jobs", headers=bearer(served))).json()["jobs"]
    assert [(j["state"], j["stopNote"]) for j in ended] == [("killed", None)]
    assert ended[0]["totals"]["stdout"]["bytes"] == len("begun\n")


async def test_a_stop_is_a_json_request_for_a_job_this_session_has(
    client: Any, served: Served
) -> None:
    started = await served.host.call(
        "Bash", {"command": "sleep 60", "background": True}, tool_call_id="bg_here"
    )
    path = f"/api/sessions/web-s1/jobs/{started['jobId']}/stop"
    form = await client.post(path, data={"x": "1"}, headers=bearer(served))
    assert (form.status_code, form.json()) == (415, {"error": "a stop is a JSON request"})
    assert served.host.jobs.get(started["jobId"]).running
    unknown = await client.post(
        "/api/sessions/web-s1/jobs/job_nope/stop", json={}, headers=bearer(served)
    )
    assert unknown.status_code == 404
    assert unknown.json() == {"error": "This session has no job 'job_nope' (now)."}
    stopped = await client.post(path, json={}, headers=bearer(served))
    assert stopped.status_code == 200
    assert (stopped.json()["jobId"], stopped.json()["state"]) == (started["jobId"], "killed")
    assert not served.host.jobs.get(started["jobId"]).running
