"""Views of their own in Chromium: job pages, a cut stream, a re-read, a list that follows.

Real tool calls on a real host while the page watches through the real
server; every wait is bounded (``WAIT_MS``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolbound.host import ToolHost
from toolbound.store import SessionStore

# One event loop per module: the module shares one Chromium (conftest.py).
pytestmark = pytest.mark.asyncio(loop_scope="module")

Served = Any  # the fixture's type (conftest.py): host, hub, view, server, workspace
WAIT_MS = 15_000
NARROW = {"width": 420, "height": 800}

TICKS = "i=1; while :; do echo tick $i; i=$((i+1)); sleep 0.05; done"


def session_url(served: Served, session_id: str, call_id: str | None = None) -> str:
    return f"{served.url}/#s={session_id}" + (f"&c={call_id}" if call_id else "")


async def row_badge(page: Any, call_id: str) -> str:
    selector = f"#calls .call[data-id='{call_id}'] .badge"
    await page.wait_for_selector(selector)
    return str(await page.text_content(selector))


async def test_job_output_and_job_stop_show_the_jobs_state_its_pages_and_next_never_an_error(
    served: Served, page: Any, screenshot: Any
) -> None:
    host = served.host
    started = await host.call("Bash", {"command": TICKS, "background": True}, tool_call_id="go")
    job_id = started["jobId"]
    read = await host.call(
        "JobOutput", {"jobId": job_id, "until": "tick 3$", "waitS": 10}, tool_call_id="peek"
    )
    assert (read["state"], read["exitCode"], read["matched"]) == ("running", None, "tick 3")

    await page.goto(session_url(served, "web-s1", "peek"))
    await page.wait_for_selector("#detail[data-stream=done]")
    assert await row_badge(page, "peek") == "done"
    assert await page.text_content("#result .job-state") == f"job {job_id} · running"
    assert await page.text_content("#result .job-matched code") == "tick 3"
    nxt = page.locator("#result .job-next")
    assert await nxt.get_attribute("data-stdout") == str(read["next"]["stdout"])
    assert await nxt.get_attribute("data-stderr") == "0"
    shown = await page.evaluate(
        "() => { const p = window.toolbound.panes.stdout;"
        " return [...Array(p.count).keys()].map(i => p.lineText(i)); }"
    )
    assert shown == read["stdout"].rstrip("\n").split("\n")
    assert shown[:3] == ["tick 1", "tick 2", "tick 3"]
    assert await page.is_visible("#out-stdout")
    assert await page.locator("#result pre").count() == 0  # not a JSON dump
    await screenshot(page, "job-output")

    stopped = await host.call("JobStop", {"jobId": job_id}, tool_call_id="halt")
    assert (stopped["state"], stopped["exitCode"]) == ("killed", None)
    await page.goto(session_url(served, "web-s1", "halt"))
    await page.wait_for_selector("#detail[data-stream=done] #result .job-state")
    assert await row_badge(page, "halt") == "done"
    state = f"stopped job {job_id} · killed ({stopped['signal']})"
    assert await page.text_content("#result .job-state") == state
    # The job's own call ended stopped: killed, not an error; nor is its row in the panel.
    assert await row_badge(page, job_id) == "killed"
    panel = f"#jobs li[data-id={job_id}] .badge"
    await page.wait_for_selector(panel)
    assert "st-error" not in str(await page.get_attribute(panel, "class"))
    assert await page.locator("#calls .badge.st-error").count() == 0


async def test_a_job_stopped_by_its_sessions_end_is_killed_not_an_error(
    served: Served, page: Any
) -> None:
    async with ToolHost(served.workspace, data_dir=served.host.data_dir, session_id="ends") as host:
        started = await host.call("Bash", {"command": TICKS, "background": True})
        await host.call("JobOutput", {"jobId": started["jobId"], "until": "tick 2", "waitS": 10})
        await host.end()
    await page.goto(session_url(served, "ends", started["jobId"]))
    assert await row_badge(page, started["jobId"]) == "killed"
    await page.wait_for_selector("#detail[data-stream=done] #result .status")
    assert (await page.text_content("#result .status") or "").startswith("killed")


async def test_a_job_that_failed_is_red_in_its_row_and_the_jobs_panel_alike(
    served: Served, page: Any
) -> None:
    started = await served.host.call(
        "Bash", {"command": "exit 3", "background": True}, tool_call_id="start3"
    )
    job_id = started["jobId"]
    ended = {"jobId": job_id, "until": "^never$", "waitS": 30}
    assert (await served.host.call("JobOutput", ended))["exitCode"] == 3
    # The call that started it did its work: done, whatever became of the job.
    await page.goto(session_url(served, "web-s1", "start3"))
    await page.wait_for_selector("#detail[data-stream=done] #result .status")
    assert await page.get_attribute("#result .status", "class") == "status done"
    assert (
        await page.text_content("#result .status")
        == f"started background job {job_id} · pid {started['pid']}"
    )
    await page.goto(session_url(served, "web-s1", job_id))
    assert await row_badge(page, job_id) == "error"
    panel = f"#jobs li[data-id={job_id}] .badge"
    await page.wait_for_selector(panel)
    assert await page.get_attribute(panel, "class") == "badge st-error"
    await page.wait_for_selector("#detail[data-stream=done] #result .status")
    assert await page.get_attribute("#result .status", "class") == "status error"


async def test_job_output_without_a_job_lists_the_sessions_jobs(served: Served, page: Any) -> None:
    host = served.host
    started = await host.call("Bash", {"command": "echo done", "background": True})
    ended = {"jobId": started["jobId"], "until": "^never$", "waitS": 30}
    assert (await host.call("JobOutput", ended))["state"] == "exited"
    await host.call("JobOutput", {}, tool_call_id="list")
    await page.goto(session_url(served, "web-s1", "list"))
    entry = f"#list-view .job-entry[data-id={started['jobId']}]"
    await page.wait_for_selector(entry)
    assert await page.text_content(f"{entry} .status") == "exited, exit status 0"
    assert await page.text_content(f"{entry} code") == "echo done"


async def test_a_cut_stdout_opens_on_the_head_and_the_marker_the_model_read(
    served: Served, page: Any, screenshot: Any
) -> None:
    result = await served.host.call("Bash", {"command": "seq 1 20000"}, tool_call_id="many")
    assert result["truncated"] is True
    kept, marker = result["stdout"].rsplit("\n", 1)
    await page.goto(session_url(served, "web-s1", "many"))
    await page.wait_for_selector("#detail[data-stream=done]")
    cut = "#result .model-cut[data-stream=stdout]"
    await page.wait_for_selector(cut)
    assert await page.text_content(f"{cut} code") == marker
    assert await page.locator("#result .model-cut").count() == 1  # stderr was not cut
    lines = len(kept.split("\n"))
    assert f"lines 1–{lines:,}" in (await page.text_content(cut) or "")
    # The pane holds the capture, opened at its first line, not at its end.
    await page.wait_for_function(
        "() => document.querySelector('#out-stdout .line')?.textContent === '1'"
    )
    assert await page.evaluate("() => document.querySelector('#out-stdout').scrollTop") == 0
    assert await page.evaluate("() => window.toolbound.panes.stdout.count") == 20000
    await screenshot(page, "bash-cut")


async def test_an_unchanged_read_links_the_call_that_sent_its_window(
    served: Served, page: Any, screenshot: Any
) -> None:
    (served.workspace / "notes.txt").write_text("".join(f"note {i}\n" for i in range(40)))
    async with ToolHost(
        served.workspace, data_dir=served.host.data_dir, session_id="eco", profile="economy"
    ) as eco:
        await eco.call("Read", {"path": "notes.txt", "limit": 10}, tool_call_id="other")
        await eco.call("Read", {"path": "notes.txt"}, tool_call_id="first")
        again = await eco.call("Read", {"path": "notes.txt"}, tool_call_id="again")
    assert again["unchanged"] is True
    assert "first" in again["notice"]
    await page.goto(session_url(served, "eco", "again"))
    link = "#result .unchanged a.unchanged-link"
    await page.wait_for_selector(f"{link}:text-is('call #2 (first)')")
    assert await page.is_hidden("#read-view")  # no empty box
    assert await page.text_content("#calls .call[data-id=first] .num-call") == "#2"
    await screenshot(page, "read-unchanged")
    await page.click(link)
    await page.wait_for_selector("#call-head .call-id:text-is('first')")
    await page.wait_for_function(
        "() => window.toolbound.readPane.count === 40 && "
        "window.toolbound.readPane.lineText(0) === 'note 0'"
    )


async def test_the_calls_list_shows_many_rows_and_follows_a_new_running_call(
    served: Served, page: Any
) -> None:
    host = served.host
    for i in range(40):
        await host.call("Bash", {"command": f"echo {i}"}, tool_call_id=f"c{i:02}")
    await page.goto(session_url(served, "web-s1"))
    await page.wait_for_selector("#calls .call[data-id=c39]")
    in_view = """id => { const box = document.querySelector('#calls').getBoundingClientRect();
        const r = document.querySelector(`#calls .call[data-id='${id}']`).getBoundingClientRect();
        return r.top >= box.top - 1 && r.bottom <= box.bottom + 1; }"""
    visible = """() => { const box = document.querySelector('#calls').getBoundingClientRect();
        return [...document.querySelectorAll('#calls .call')].filter(e => {
          const r = e.getBoundingClientRect();
          return r.top >= box.top - 1 && r.bottom <= box.bottom + 1;
        }).length; }"""
    assert await page.evaluate(visible) >= 15
    await page.wait_for_function(in_view, arg="c39")  # opened at its end

    gate = served.workspace / "go"
    wait = f"while [ ! -e {gate} ]; do sleep 0.02; done"
    running = asyncio.create_task(host.call("Bash", {"command": wait}, tool_call_id="slow"))
    await page.wait_for_selector("#calls .call[data-id=slow] .badge.st-running")
    await page.wait_for_function(in_view, arg="slow")

    # Scrolled away, the list stays where the user left it.
    await page.evaluate("() => { document.querySelector('#calls').scrollTop = 0; }")
    await page.wait_for_function("() => !window.toolbound.state.followCalls")
    await host.call("Bash", {"command": "echo later"}, tool_call_id="later")
    await page.wait_for_selector("#calls .call[data-id=later]")
    polls = await page.evaluate("() => window.toolbound.state.polls")
    await page.wait_for_function("n => window.toolbound.state.polls > n", arg=polls)
    assert await page.evaluate("() => document.querySelector('#calls').scrollTop") == 0
    gate.touch()
    await running


async def test_clicking_a_call_in_a_narrow_window_brings_its_detail_into_view(
    served: Served, page: Any, screenshot: Any
) -> None:
    for i in range(12):
        await served.host.call("Bash", {"command": f"echo {i}"}, tool_call_id=f"n{i:02}")
    await page.set_viewport_size(NARROW)
    await page.goto(session_url(served, "web-s1"))
    row = "#calls .call[data-id=n03]"
    await page.wait_for_selector(row)
    await page.evaluate("() => window.scrollTo(0, 0)")
    before = await page.evaluate("() => window.scrollY")
    await page.click(row)
    await page.wait_for_selector("#detail[data-stream=done]")
    top_in_view = """() => {
        const t = document.querySelector('#detail').getBoundingClientRect().top;
        return t >= 0 && t < window.innerHeight / 2; }"""
    await page.wait_for_function(top_in_view)
    assert await page.evaluate("() => window.scrollY") > before
    assert await page.text_content("#call-head .call-id") == "n03"
    await screenshot(page, "narrow-click")


async def test_a_clicked_calls_detail_stays_in_view_while_the_ledger_above_fills_in_late(
    served: Served, page: Any
) -> None:
    """One column: the ledger sits above the detail. Its answer held until the
    clicked call's detail is shown, it then pushes the detail down; the page
    brings the detail back into view."""
    for i in range(12):
        await served.host.call("Bash", {"command": f"echo {i}"}, tool_call_id=f"n{i:02}")
    release = asyncio.Event()

    async def held(route: Any) -> None:
        await release.wait()
        await route.continue_()

    await page.route("**/api/sessions/*/ledger*", held)
    await page.set_viewport_size(NARROW)
    await page.goto(session_url(served, "web-s1"))
    await page.reload()  # loaded afresh: its ledger is asked for now, and held
    row = "#calls .call[data-id=n03]"
    await page.wait_for_selector(row)
    await page.evaluate("() => window.scrollTo(0, 0)")
    await page.click(row)
    await page.wait_for_selector("#detail[data-stream=done]")
    pushed = "() => document.querySelector('#ledger').getBoundingClientRect().height"
    assert await page.evaluate("() => document.querySelector('#ledger').hidden")
    release.set()
    await page.wait_for_selector("#ledger:not([hidden])")
    assert await page.evaluate(pushed) > 0
    top_in_view = """() => {
        const t = document.querySelector('#detail').getBoundingClientRect().top;
        return t >= 0 && t < window.innerHeight / 2; }"""
    await page.wait_for_function(top_in_view)


async def test_the_call_list_rows_of_a_stored_session_number_its_calls(
    served: Served, page: Any
) -> None:
    await served.host.call("Bash", {"command": "true"}, tool_call_id="one")
    await served.host.call("Bash", {"command": "true"}, tool_call_id="two")
    await page.goto(session_url(served, "web-s1", "two"))
    await page.wait_for_selector("#calls .call[data-id=two]")
    nums = await page.evaluate(
        "() => [...document.querySelectorAll('#calls .call .num-call')].map(e => e.textContent)"
    )
    assert nums == ["#1", "#2"]
    await page.wait_for_selector("#call-head .num-call:text-is('#2')")


LEDGER_GEOMETRY = """() => {
    const box = (e) => { const r = e.getBoundingClientRect();
        return [r.left, r.top, r.right, r.bottom]; };
    const tools = document.querySelector('#ledger .ledger-tools');
    const time = document.querySelector('#ledger .ledger-time');
    return {
        rows: [...tools.querySelectorAll('.tool-row')].map(g => ({
            tool: g.dataset.tool, tokens: Number(g.dataset.tokens),
            sent: Number(g.querySelector('rect.sent').getAttribute('width')),
            texts: [...g.querySelectorAll('text')].map(box),
            bars: [...g.querySelectorAll('rect')].map(box),
        })),
        sentTop: time.querySelector('.sent-top').textContent,
        cols: [...time.querySelectorAll('a.col')].map(a => Number(a.dataset.running)),
        sentPath: time.querySelector('path.sent').getAttribute('d'),
        plotTop: Number(time.querySelector('line.axis:nth-of-type(2)').getAttribute('y1')),
    };
}"""


def overlaps(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


async def test_the_ledger_gives_tokens_sent_their_own_scale_and_no_label_covers_a_value(
    served: Served, page: Any, screenshot: Any
) -> None:
    host = served.host
    (served.workspace / "big.txt").write_text("".join(f"line {i} of text\n" for i in range(1200)))
    await host.call("Bash", {"command": "seq 1 300000"}, tool_call_id="flood")
    await host.call("Read", {"path": "big.txt"}, tool_call_id="read")
    started = await host.call("Bash", {"command": "echo hi", "background": True})
    await host.call("JobOutput", {"jobId": started["jobId"], "until": "^never$", "waitS": 30})
    await page.goto(session_url(served, "web-s1"))
    await page.wait_for_selector("#ledger[data-calls='4']")
    shown = await page.evaluate(LEDGER_GEOMETRY)
    with SessionStore(host.data_dir) as store:
        ledger = store.session("web-s1").ledger()
    assert ledger["total"]["elidedBytes"] > 100 * ledger["total"]["modelTokens"]

    # Per tool: the bars of tokens sent are in proportion to each other, the largest whole.
    rows = {r["tool"]: r for r in shown["rows"]}
    widest = max(r["sent"] for r in shown["rows"])
    top = max(r["tokens"] for r in shown["rows"])
    for row in shown["rows"]:
        assert abs(row["sent"] / widest - row["tokens"] / top) < 0.01
    assert rows["Read"]["sent"] > widest / 4
    # No label or figure over another, nor over a bar.
    for row in shown["rows"]:
        texts, bars = row["texts"], row["bars"]
        for i, a in enumerate(texts):
            assert not any(overlaps(a, b) for b in texts[i + 1 :] + bars), row["tool"]

    # Over time: the axis is the running total of tokens sent, which reaches its top.
    total = ledger["total"]["modelTokens"]
    assert shown["sentTop"] == f"{total:,}"
    assert shown["cols"][-1] == total
    last_y = float(shown["sentPath"].split(" L")[-2].split(",")[1])
    assert last_y == shown["plotTop"]
    await screenshot(page, "ledger-scales")


async def test_the_jobs_panel_shows_each_jobs_output_so_far(
    served: Served, page: Any, screenshot: Any
) -> None:
    host = served.host
    loud = "echo 'starting' >&2; " + TICKS
    started = await host.call("Bash", {"command": loud, "background": True}, tool_call_id="go")
    job_id = started["jobId"]
    row = f"#jobs li[data-id={job_id}]"
    await page.goto(session_url(served, "web-s1"))
    await page.wait_for_selector(f"{row} .job-tail.stdout")
    assert await page.text_content(f"{row} .job-tail.stderr") == "starting"
    # It grows as the job prints, its last lines kept.
    read = await host.call("JobOutput", {"jobId": job_id, "until": "tick 20$", "waitS": 20})
    assert read["matched"] == "tick 20"
    await page.wait_for_function(
        "sel => /^tick (2\\d|[3-9]\\d|\\d{3,})$/m.test(document.querySelector(sel).textContent)",
        arg=f"{row} .job-tail.stdout",
    )
    shown = str(await page.text_content(f"{row} .job-tail.stdout")).split("\n")
    assert len(shown) <= 8
    numbers = [int(line.split()[1]) for line in shown]
    assert numbers == list(range(numbers[0], numbers[0] + len(shown)))
    await screenshot(page, "jobs-output")
    await host.call("JobStop", {"jobId": job_id})
