"""A job's input on its page, in Chromium: what JobInput wrote, in order with the output.

A real ``cat`` job on a real host, answered through real JobInput calls while
the page watches; then the page reloaded, and then a second web view that
holds no call in memory, reading the job back from the store alone. Every
wait is bounded (``WAIT_MS``).
"""

from __future__ import annotations

from typing import Any

import pytest

from support import wait_for_async
from toolbound.store import SessionStore
from toolbound.web import Hub, StoreSource, WebView, build_app, host_reader
from toolbound.web.server import LocalServer

# One event loop per module: the module shares one Chromium (conftest.py).
pytestmark = pytest.mark.asyncio(loop_scope="module")

Served = Any  # the fixture's type (conftest.py): host, hub, view, server, workspace
WAIT_MS = 15_000
MARK = "› "  # app.js's INPUT_MARK

# Each line of the job's stdout pane as shown, input lines marked "in:".
PANE = """() => [...document.querySelectorAll('#out-stdout .line')].map(
    e => (e.classList.contains('input') ? 'in:' : '') + e.textContent)"""

FIRST = "<b>one</b>\n"
SECOND = "two & 'three' <img src=x onerror=alert(1)>\n"


async def shown(page: Any, lines: list[str]) -> list[str]:
    """Wait until the stdout pane shows ``lines`` exactly; return what it shows."""
    await page.wait_for_function(
        f"want => JSON.stringify(({PANE})()) === JSON.stringify(want)", arg=lines, timeout=WAIT_MS
    )
    got: list[str] = await page.evaluate(PANE)
    return got


async def test_a_jobs_inputs_show_among_its_output_in_order_live_reloaded_and_from_the_store(
    served: Served, page: Any, browser: Any, screenshot: Any
) -> None:
    host = served.host
    started = await host.call(
        "Bash", {"command": "cat", "background": True}, tool_call_id="start_cat"
    )
    job_id = started["jobId"]
    await page.goto(served.call_url(job_id))
    await page.wait_for_selector("#detail[data-stream=open]")

    first = await host.call("JobInput", {"jobId": job_id, "input": FIRST}, tool_call_id="in1")
    assert first["stdout"] == FIRST
    one = [f"in:{MARK}<b>one</b>", "<b>one</b>"]
    assert await shown(page, one) == one
    second = await host.call("JobInput", {"jobId": job_id, "input": SECOND}, tool_call_id="in2")
    assert second["stdout"] == SECOND
    two = [*one, f"in:{MARK}{SECOND[:-1]}", SECOND[:-1]]
    assert await shown(page, two) == two
    # The agent's text is text: no element of it made it into the page.
    assert await page.evaluate("() => document.querySelectorAll('#out-stdout b, img').length") == 0
    await screenshot(page, "job-input")
    # The jobs panel's row: how many inputs, the last one (as text).
    row = f"#jobs li[data-id={job_id}] .job-input"
    await page.wait_for_function(
        "([sel, want]) => document.querySelector(sel)?.textContent === want",
        arg=[row, f"input: 2 calls, the last {SECOND[:-1]}⏎"],
        timeout=WAIT_MS,
    )

    # The JobInput calls are calls like any: a row each, with the job and the input.
    await page.wait_for_selector("#calls .call[data-id=in2]")
    assert await page.text_content("#calls .call[data-id=in1] .tool") == "JobInput"
    assert await page.text_content("#calls .call[data-id=in1] .args") == (
        f'{job_id} input="<b>one</b>\\n"'
    )
    # A JobInput call's page: its input (the arguments) and what the job printed after it.
    await page.click("#calls .call[data-id=in2]")
    await page.wait_for_selector("#result .job-state")
    assert (await page.text_content("#result .job-state") or "").startswith(
        f"input to job {job_id}"
    )
    assert await page.text_content("#args-list dd[data-arg=input]") == SECOND

    # The job's page again, reloaded: the hub's events replayed, in the same order.
    await page.goto(served.call_url(job_id))
    await page.reload()
    assert await shown(page, two) == two

    # Its stdin closed: cat ends; the close is shown where it came.
    await host.call("JobInput", {"jobId": job_id, "input": "", "close": True}, tool_call_id="in3")
    ended = await host.call("JobOutput", {"jobId": job_id, "waitFor": "exit", "waitS": 10})
    assert ended["state"] == "exited"
    done = [*two, f"in:{MARK}(stdin closed)"]
    assert await shown(page, done) == done
    await page.wait_for_selector("#detail[data-stream=done]")
    # A refused input (the job ended) was not written: the row does not count it.
    late = await host.call("JobInput", {"jobId": job_id, "input": "x\n"}, tool_call_id="in4")
    assert late["error"]["code"] == "TOOL_INVALID_ARGUMENT"
    await page.wait_for_selector("#calls .call[data-id=in4]")
    await page.wait_for_function(
        "([sel, want]) => document.querySelector(sel)?.textContent === want",
        arg=[row, "input: 3 calls, the last  · stdin closed"],
        timeout=WAIT_MS,
    )

    # A web view that holds no call in memory: the job read back from the store.
    with SessionStore(host.data_dir) as store:

        def recorded() -> bool:
            events = store.events(job_id, session_id=host.session_id)
            return bool(events) and events[-1]["type"] == "result"

        await wait_for_async(recorded, "the job's result in the store", timeout_s=WAIT_MS / 1000)
        stored = store.events(job_id, session_id=host.session_id)
        assert [(e["type"], e.get("data")) for e in stored if e["type"] != "result"] == [
            ("input", FIRST),
            ("chunk", FIRST),
            ("input", SECOND),
            ("chunk", SECOND),
            ("input", ""),
        ]
        reader = host_reader(workspace=served.workspace, data_dir=host.data_dir)
        view = WebView(Hub(), reader, StoreSource(store), token=served.view.token)
        server = await LocalServer(build_app(view)).start()
        try:
            cold = await browser.new_page()
            await cold.goto(f"{server.base_url}/?token={view.token}")
            await cold.goto(f"{server.base_url}/#s={host.session_id}&c={job_id}")
            assert await shown(cold, done) == done
            await cold.close()
        finally:
            await server.stop()
