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
            "tokens —",
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
    await page.evaluate("() => { window.__rows = [...document.querySelectorAll('#calls .call')]; }")
    polls = await page.evaluate("() => window.toolbound.state.polls")
    await page.wait_for_function("n => window.toolbound.state.polls > n + 1", arg=polls)
    kept = "() => [...document.querySelectorAll('#calls .call')].every((r, i) => r === __rows[i])"
    assert await page.evaluate(kept)
    assert await page.text_content("#args-list dd[data-arg=content]") == big
