"""The page's sessions, ended sessions, the viewer's place, a narrow window: in Chromium.

Sessions come from real hosts recording into the served store (and one noted
as running on another machine); every wait is bounded (``WAIT_MS``).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx2 as httpx
import pytest

from toolbound import model_text
from toolbound.host import ToolHost
from toolbound.store import SessionStore

# One event loop per module: the module shares one Chromium (conftest.py).
pytestmark = pytest.mark.asyncio(loop_scope="module")

Served = Any  # the fixture's type (conftest.py): host, hub, view, server, workspace
WAIT_MS = 15_000

SESSION_ROWS = """() => [...document.querySelectorAll('#sessions li[data-id]')].map(li => [
    li.dataset.id,
    li.querySelector('.ws').textContent,
    li.querySelector('.host').textContent,
    li.querySelector('.started').textContent,
    li.querySelector('.last').textContent,
    li.querySelector('.count').textContent,
    li.querySelector('.tokens').textContent,
])"""


def clock(seconds: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(seconds))


def session_url(served: Served, session_id: str, call_id: str | None = None) -> str:
    return f"{served.url}/#s={session_id}" + (f"&c={call_id}" if call_id else "")


async def shown_sessions(page: Any, ids: list[str]) -> list[list[str]]:
    await page.wait_for_function(
        "ids => JSON.stringify([...document.querySelectorAll('#sessions li[data-id]')]"
        ".map(li => li.dataset.id)) === JSON.stringify(ids)",
        arg=ids,
        timeout=WAIT_MS,
    )
    rows: list[list[str]] = await page.evaluate(SESSION_ROWS)
    return rows


async def test_sessions_show_where_they_run_when_and_how_many_calls_newest_first_and_filter(
    served: Served, page: Any, screenshot: Any
) -> None:
    await served.host.call("Bash", {"command": "echo here"}, tool_call_id="here1")
    second_ws = served.workspace.parent / "ws2"
    second_ws.mkdir()
    async with ToolHost(second_ws, data_dir=served.host.data_dir, session_id="second") as other:
        await other.call("Bash", {"command": "true"}, tool_call_id="s1")
        await other.call("Bash", {"command": "true"}, tool_call_id="s2")
    with SessionStore(served.host.data_dir) as store:
        store.note_origin("far", workspace="/srv/far", host="machine-b")
        rows = {s.id: s for s in store.summaries()}
        tokens = {sid: store.session(sid).ledger()["total"]["modelTokens"] for sid in rows}
    assert tokens["second"] > 0

    await page.goto(session_url(served, "second"))
    here = served.view.here
    expected = [
        ["far", "/srv/far", "machine-b", 0],
        ["second", str(second_ws.resolve()), here, 2],
        ["web-s1", str(served.workspace.resolve()), here, 1],
    ]
    assert await shown_sessions(page, ["far", "second", "web-s1"]) == [
        [
            sid,
            ws,
            host,
            f"started {clock(rows[sid].created_at)}",
            f"last {clock(rows[sid].last_activity)}",
            f"{calls} call{'' if calls == 1 else 's'}",
            f"{tokens[sid]:,} tokens",
        ]
        for sid, ws, host, calls in expected
    ]
    assert await page.text_content("#sessions li.current .sid") == "second"
    assert await page.text_content("#here") == f"on {here}"
    await screenshot(page, "sessions")

    await page.fill("#session-filter", "machine-b")
    assert [r[0] for r in await shown_sessions(page, ["far"])] == ["far"]
    await page.fill("#session-filter", "WS2")
    assert [r[0] for r in await shown_sessions(page, ["second"])] == ["second"]
    await page.fill("#session-filter", "nowhere at all")
    await shown_sessions(page, [])
    assert await page.text_content("#sessions .empty") == "No session matches the filter."


async def test_an_ended_session_says_its_spill_files_are_gone_instead_of_offering_them(
    served: Served, page: Any, screenshot: Any
) -> None:
    host = ToolHost(served.workspace, data_dir=served.host.data_dir, session_id="finished")
    async with host:
        result = await host.call("Bash", {"command": "seq 1 5000"}, tool_call_id="cut")
        assert "stdout" in result["spill"]
        await host.end()
    assert not host.scratch.dir.exists()

    await page.goto(session_url(served, "finished", "cut"))
    await page.wait_for_selector("#detail[data-stream=done]")
    assert await page.locator("#outputs button").count() == 0
    reason = (
        "stdout: The session has ended: its spill files were removed with its scratch dir. "
        "What the model read is in the model view."
    )
    assert await page.text_content("#outputs .gone[data-output=stdout]") == reason
    assert await page.text_content("#sessions li[data-id=finished] .badge") == "ended"
    # The stream that stayed empty says so, and leaves its room to the other.
    assert await page.text_content("#stderr-label") == "stderr · 0 lines · 0 bytes"
    assert await page.is_hidden("#out-stderr")
    assert await page.is_visible("#out-stdout")
    # The model view still shows what the model read, marker and all.
    assert await page.text_content("#model-text") == model_text("Bash", result)
    await screenshot(page, "ended-session")

    headers = {"Authorization": f"Bearer {served.view.token}"}
    async with httpx.AsyncClient(base_url=served.url, headers=headers, timeout=15) as client:
        gone = await client.get("/api/sessions/finished/calls/cut/outputs/stdout")
    assert gone.status_code == 410
    assert gone.json() == {"error": reason.removeprefix("stdout: "), "gone": True}


async def test_a_spill_file_removed_under_a_live_session_is_said_gone_not_a_tool_error(
    served: Served, page: Any
) -> None:
    result = await served.host.call("Bash", {"command": "seq 1 5000"}, tool_call_id="swept")
    spill = result["spill"]["stdout"]
    await asyncio.to_thread(
        lambda: (served.host.scratch.dir / "tool-output" / spill.rsplit("/", 1)[1]).unlink()
    )
    await page.goto(served.call_url("swept"))
    await page.click("button[data-output=stdout]")
    await page.wait_for_selector("#viewer-info.gone")
    text = await page.text_content("#viewer-info")
    assert text == f"The file {spill} is gone: it was removed or moved after the call."
    assert "TOOL_NOT_FOUND" not in (text or "")


async def wait_in_view(page: Any, selector: str) -> None:
    """Wait until the element is wholly inside the window (it scrolls into view on a frame)."""
    await page.wait_for_function(
        "sel => { const r = document.querySelector(sel).getBoundingClientRect();"
        " return r.top >= 0 && r.bottom <= window.innerHeight + 1; }",  # + subpixels
        arg=selector,
        timeout=WAIT_MS,
    )


async def test_the_viewer_opens_beside_its_call_in_view(served: Served, page: Any) -> None:
    await page.set_viewport_size({"width": 1100, "height": 700})
    args = {"command": "seq -f 'line %g' 1 9000", "description": "Print many lines"}
    await served.host.call("Bash", args, tool_call_id="many")
    await page.goto(served.call_url("many"))
    await page.wait_for_selector("#detail[data-stream=done]")
    await page.click("button[data-output=stdout]")
    await page.wait_for_selector("#viewer[data-offset='0']")
    # Right after the button that opened it, and scrolled fully into view.
    assert await page.evaluate("() => document.querySelector('#outputs + #viewer') !== null")
    await wait_in_view(page, "#viewer")


async def test_a_narrow_window_stays_usable(served: Served, page: Any, screenshot: Any) -> None:
    await page.set_viewport_size({"width": 420, "height": 860})
    command = "echo out; echo err >&2; seq -f 'a rather long line of output number %g' 1 5000"
    await served.host.call(
        "Bash", {"command": command, "description": "Both streams"}, tool_call_id="narrow"
    )
    await page.goto(served.call_url("narrow"))
    await page.wait_for_selector("#detail[data-stream=done]")
    # Nothing wider than the window: no sideways scrolling of the page.
    width = "() => [document.documentElement.scrollWidth, window.innerWidth]"
    scroll_width, inner = await page.evaluate(width)
    assert scroll_width <= inner == 420
    # The two streams stack, each as wide as the window allows.
    boxes = await page.evaluate(
        "() => ['#out-stdout', '#out-stderr'].map(s => {"
        " const r = document.querySelector(s).getBoundingClientRect();"
        " return [r.left, r.top, r.bottom, r.width]; })"
    )
    (out_left, _, out_bottom, out_width), (err_left, err_top, _, _) = boxes
    assert out_left == err_left
    assert err_top > out_bottom
    assert out_width > 300
    await page.click("button[data-output=stdout]")
    await page.wait_for_selector("#viewer[data-offset='0']")
    await wait_in_view(page, "#viewer")
    assert (await page.evaluate(width))[0] <= 420
    await screenshot(page, "narrow")


async def test_hundreds_of_calls_list_light_and_a_poll_keeps_their_rows(
    served: Served, page: Any
) -> None:
    (served.workspace / "small.txt").write_text("one line\n")
    for i in range(300):
        await served.host.call("Read", {"path": "small.txt"}, tool_call_id=f"r{i:03d}")
    await served.host.call("Read", {"path": "big.txt"}, tool_call_id="read_missing")
    big = "x" * 200_000 + "\n"
    await served.host.call("Write", {"path": "big.txt", "content": big}, tool_call_id="write_big")
    headers = {"Authorization": f"Bearer {served.view.token}"}
    async with httpx.AsyncClient(base_url=served.url, headers=headers, timeout=15) as client:
        listed = await client.get("/api/sessions/web-s1/calls")
        one = await client.get("/api/sessions/web-s1/calls/write_big")
    # The list leaves the full arguments to the call itself.
    assert len(listed.content) < 150_000
    assert one.json()["args"] == {"path": "big.txt", "content": big}

    await page.goto(served.call_url("write_big"))
    await page.wait_for_function("() => document.querySelectorAll('#calls .call').length === 302")
    # Drawn with the chosen call (a row is drawn again when it becomes the current
    # one: the page had a session open before, and the list may be older than the URL).
    await page.wait_for_selector("#calls .call.current[data-id=write_big]")
    await page.evaluate("() => { window.__rows = [...document.querySelectorAll('#calls .call')]; }")
    polls = await page.evaluate("() => window.toolbound.state.polls")
    await page.wait_for_function("n => window.toolbound.state.polls > n + 1", arg=polls)
    kept = "() => [...document.querySelectorAll('#calls .call')].every((r, i) => r === __rows[i])"
    assert await page.evaluate(kept)
    assert await page.text_content("#args-list dd[data-arg=content]") == big


LEDGER_SHOWN = """() => {
    const box = document.querySelector('#ledger');
    return {
        total: box.querySelector('#ledger-total').textContent,
        tools: [...box.querySelectorAll('.tool-row')].map(g => [
            g.dataset.tool, Number(g.dataset.tokens), Number(g.dataset.elided),
            Number(g.dataset.rereads), g.querySelector('text.value').textContent,
            Number(g.querySelector('rect.sent').getAttribute('width')),
        ]),
        cols: [...box.querySelectorAll('.ledger-time a.col')].map(a => [
            a.dataset.call, Number(a.dataset.running), Number(a.dataset.elided),
            a.getAttribute('href'),
        ]),
    };
}"""


async def test_the_context_ledger_is_drawn_per_tool_and_call_by_call_and_follows_new_calls(
    served: Served, page: Any, screenshot: Any
) -> None:
    (served.workspace / "notes.txt").write_text("".join(f"note {i}\n" for i in range(40)))
    host = served.host
    await host.call("Bash", {"command": "seq 1 20000"}, tool_call_id="big")
    await host.call("Read", {"path": "notes.txt"}, tool_call_id="notes")
    await host.call("Grep", {"pattern": "note 1"}, tool_call_id="grep")
    await host.call("Bash", {"command": "echo done"}, tool_call_id="small")
    await page.goto(session_url(served, "web-s1"))
    await page.wait_for_selector("#ledger[data-calls='4']")
    with SessionStore(host.data_dir) as store:
        ledger = store.session("web-s1").ledger()
    shown = await page.evaluate(LEDGER_SHOWN)

    total = ledger["total"]
    assert shown["total"] == (
        f"{total['modelTokens']:,} tokens sent in 4 calls · "
        f"{total['elidedBytes'] / 1024:.1f} KB elided · 0 re-reads avoided · "
        f"{total['spilledBytes'] / 1024:.1f} KB spilled"
    )
    by_tokens = sorted(ledger["tools"].items(), key=lambda kv: -kv[1]["modelTokens"])
    assert [row[:4] for row in shown["tools"]] == [
        [tool, t["modelTokens"], t["elidedBytes"], t["rereadsAvoided"]] for tool, t in by_tokens
    ]
    bash = ledger["tools"]["Bash"]
    assert shown["tools"][0][4] == f"{bash['modelTokens']:,} tok · 2 calls"
    # Bars in proportion to the tokens sent.
    (_, bash_w), *_, (_, last_w) = [(r[0], r[5]) for r in shown["tools"]]
    last_tokens = by_tokens[-1][1]["modelTokens"]
    assert abs(bash_w / last_w - bash["modelTokens"] / last_tokens) < 0.01
    # Call by call: the running total of tokens sent and of bytes elided; each links to its call.
    elided = 0
    expected = []
    for c in ledger["calls"]:
        elided += c["elidedBytes"]
        expected.append(
            [c["toolCallId"], c["runningTokens"], elided, f"#s=web-s1&c={c['toolCallId']}"]
        )
    assert shown["cols"] == expected
    await screenshot(page, "ledger")

    # A call that finishes while the page is open joins the picture without a reload.
    await host.call("Bash", {"command": "seq 1 300"}, tool_call_id="later")
    await page.wait_for_selector("#ledger[data-calls='5']")
    cols = (await page.evaluate(LEDGER_SHOWN))["cols"]
    assert [c[0] for c in cols] == ["big", "notes", "grep", "small", "later"]
    with SessionStore(host.data_dir) as store:
        assert cols[-1][1] == store.session("web-s1").ledger()["total"]["modelTokens"]
    await page.click(".ledger-time a.col[data-call=notes] rect")
    await page.wait_for_function("() => location.hash === '#s=web-s1&c=notes'")
    await page.wait_for_selector("#detail[data-stream=done]")


async def test_a_re_read_avoided_is_marked_in_the_ledger(
    served: Served, page: Any, screenshot: Any
) -> None:
    (served.workspace / "notes.txt").write_text("".join(f"note {i}\n" for i in range(40)))
    data = served.host.data_dir
    async with ToolHost(
        served.workspace, data_dir=data, session_id="eco", profile="economy"
    ) as eco:
        await eco.call("Read", {"path": "notes.txt"}, tool_call_id="first")
        again = await eco.call("Read", {"path": "notes.txt"}, tool_call_id="again")
        await eco.call("Bash", {"command": "seq 1 9000"}, tool_call_id="count")
    assert again["unchanged"] is True
    await page.goto(session_url(served, "eco"))
    await page.wait_for_selector("#ledger[data-calls='3']")
    with SessionStore(data) as store:
        read = store.session("eco").ledger()["tools"]["Read"]
    assert read["rereadsAvoided"] == 1
    shown = await page.evaluate(LEDGER_SHOWN)
    assert "· 1 re-read avoided" in shown["total"]
    read_row = next(r for r in shown["tools"] if r[0] == "Read")
    assert read_row[3:5] == [1, f"{read['modelTokens']} tok · 2 calls · 1 re-read avoided"]
    marked = "() => [...document.querySelectorAll('.ledger-time a.col')]"
    marked += ".map(a => a.querySelector('path.reread') !== null)"
    assert await page.evaluate(marked) == [False, True, False]
    await screenshot(page, "ledger-reread")


async def test_a_background_job_shows_live_and_stops_only_once_confirmed(
    served: Served, page: Any, screenshot: Any
) -> None:
    host = served.host
    command = "i=1; while :; do echo tick $i; i=$((i+1)); sleep 0.05; done"
    args = {"command": command, "background": True, "description": "Tick, then wait"}
    started = await host.call("Bash", args, tool_call_id="start_job")
    job_id = started["jobId"]
    row = f"#jobs li[data-id={job_id}]"
    await page.goto(session_url(served, "web-s1", "start_job"))
    await page.wait_for_selector(f"{row}[data-state=running]")
    assert await page.text_content(f"{row} .job-command") == command
    assert await page.text_content(f"{row} .job-desc") == "Tick, then wait"
    assert await page.text_content("#result .job-link") == job_id

    # The job's own output, live, in the detail view.
    await page.click(f"{row} .job-command")
    await page.wait_for_function(
        "() => window.toolbound.panes.stdout.count >= 3 && "
        "window.toolbound.panes.stdout.lineText(2) === 'tick 3'"
    )
    assert await page.text_content("#call-head .badge") == "running"
    await page.click(f"{row} button.stop")
    await page.wait_for_selector(f"{row} .confirm")
    await screenshot(page, "jobs")
    # The row is redrawn as the job prints (its totals); the question stays.
    polls = await page.evaluate("() => window.toolbound.state.polls")
    await page.wait_for_function("n => window.toolbound.state.polls > n + 1", arg=polls)
    assert await page.is_visible(f"{row} .confirm")

    # "Keep it running" takes the question back; nothing was sent.
    await page.click(f"{row} .confirm-no")
    await page.wait_for_selector(f"{row} button.stop")
    assert host.jobs.get(job_id).running
    await page.click(f"{row} button.stop")
    await page.click(f"{row} .confirm-yes")
    await page.wait_for_selector(f"{row}[data-state=killed]")
    assert host.jobs.get(job_id).state == "killed"
    await page.wait_for_function(
        "() => document.querySelector('#call-head .badge').textContent !== 'running'"
    )
    # Stopped from the page: killed, not a failure of the command.
    assert await page.text_content("#call-head .badge") == "killed"
    # The page's stop is not the agent's call, and leaves the agent's place in the output.
    output = await host.call("JobOutput", {"jobId": job_id}, tool_call_id="agent_reads")
    assert output["state"] == "killed"
    assert output["stdout"].startswith("tick 1\ntick 2\n")
    ids = [r.tool_call_id for r in served.hub.records("web-s1")]
    assert ids == ["start_job", job_id, "agent_reads"]
