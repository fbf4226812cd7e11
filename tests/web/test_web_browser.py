"""The page in a real Chromium: live output, separation, inert output, the viewer.

Each test runs real tool calls on a real host while the page watches through
the real server; every wait is bounded (``WAIT_MS``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from support import wait_for_async
from toolbound import estimate_tokens, model_text

# One event loop per module: the module shares one Chromium (conftest.py).
pytestmark = pytest.mark.asyncio(loop_scope="module")

# The fixtures (conftest.py) give a real host, hub and server, and Chromium.
Served = Any
WAIT_MS = 15_000

PANE_LINES = "sel => [...document.querySelectorAll(sel + ' .line')].map(e => e.textContent)"


async def pane(page: Any, which: str) -> list[str]:
    lines: list[str] = await page.evaluate(f"({PANE_LINES})('#{which}')")
    return lines


async def wait_lines(page: Any, which: str, count: int) -> list[str]:
    await page.wait_for_function(
        f"n => ({PANE_LINES})('#{which}').length >= n", arg=count, timeout=WAIT_MS
    )
    return await pane(page, which)


async def wait_first_line(page: Any, which: str, text: str) -> None:
    """Wait until the pane's first shown line is ``text`` (the pane renders on a frame)."""
    await page.wait_for_function(
        f"t => ({PANE_LINES})('#{which}')[0] === t", arg=text, timeout=WAIT_MS
    )


async def start_call(
    served: Served, call_id: str, command: str, *, timeout_s: int = 60
) -> asyncio.Task[dict[str, Any]]:
    task = asyncio.create_task(
        served.host.call("Bash", {"command": command, "timeout": timeout_s}, tool_call_id=call_id)
    )
    await wait_for_async(
        lambda: served.hub.record(served.host.session_id, call_id) is not None,
        f"the hub to hold {call_id}",
        timeout_s=WAIT_MS / 1000,
    )
    return task


async def test_lines_of_a_slow_bash_call_appear_in_order_before_it_ends(
    served: Served, page: Any, screenshot: Any
) -> None:
    command = (
        "for i in 1 2 3 4 5; do echo out $i; echo err $i >&2; sleep 0.1; done; "
        "while [ ! -e gate ]; do sleep 0.05; done; echo finished"
    )
    call = await start_call(served, "call_slow", command)
    await page.goto(served.call_url("call_slow"))

    assert await wait_lines(page, "out-stdout", 5) == [f"out {i}" for i in range(1, 6)]
    assert await wait_lines(page, "out-stderr", 5) == [f"err {i}" for i in range(1, 6)]
    assert not call.done()
    assert await page.text_content("#call-head .badge") == "running"
    await screenshot(page, "live-call")

    (served.workspace / "gate").touch()
    result = await asyncio.wait_for(call, WAIT_MS / 1000)
    assert result["exitCode"] == 0
    await page.wait_for_selector("#detail[data-stream=done]")
    assert await pane(page, "out-stdout") == [*(f"out {i}" for i in range(1, 6)), "finished"]
    assert await pane(page, "out-stderr") == [f"err {i}" for i in range(1, 6)]
    assert await page.text_content("#result .status") == "exit status 0"
    await page.wait_for_function(
        "() => document.querySelector('#call-head .badge').textContent === 'done'"
    )


async def test_output_is_inert_text_with_colours_and_overwritten_progress(
    served: Served, page: Any
) -> None:
    hostile = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
    command = (
        f"printf '%s\\n' '{hostile}'; "
        "printf '\\033[31mred\\033[0m plain\\n'; "
        "printf 'progress 10%%\\rprogress 55%%\\rprogress 100%%\\n'; "
        f"printf '%s\\n' '{hostile}' >&2; "
        "for i in $(seq 1 2000); do printf '\\rbar %d' $i; done; echo"
    )
    call = await start_call(served, "call_hostile", command)
    await asyncio.wait_for(call, WAIT_MS / 1000)
    await page.goto(served.call_url("call_hostile"))
    await page.wait_for_selector("#detail[data-stream=done]")

    assert await pane(page, "out-stdout") == [hostile, "red plain", "progress 100%", "bar 2000"]
    # 2,000 rewrites of one line are kept as the one line they show.
    kept = await page.evaluate("() => window.toolbound.panes.stdout.lines[3].length")
    assert kept < 100
    assert await pane(page, "out-stderr") == [hostile]
    assert await page.evaluate("() => window.__pwned") is None
    inserted = "() => document.querySelectorAll('#detail script, #detail img').length"
    assert await page.evaluate(inserted) == 0
    red = await page.eval_on_selector("#out-stdout .line span.f1", "e => e.textContent")
    assert red == "red"


async def test_a_request_without_the_token_is_refused(served: Served, browser: Any) -> None:
    page = await browser.new_page()
    for path in ["/", "/api/sessions", "/static/app.js", "/api/sessions/s/calls/x/events"]:
        response = await page.goto(served.url + path)
        assert response is not None
        assert response.status == 403, path
    assert "needs its token" in await page.text_content("body")
    assert await browser.cookies() == []


async def test_the_viewer_pages_through_a_500_kb_spill_file(
    served: Served, page: Any, screenshot: Any
) -> None:
    outputs: list[dict[str, Any]] = []

    async def keep(response: Any) -> None:
        if "/outputs/" in response.url:
            outputs.append(json.loads(await response.body()))

    page.on("response", keep)
    call = await start_call(served, "call_big", "seq -f 'row %06g' 0 59999")
    result = await asyncio.wait_for(call, WAIT_MS / 1000)
    spill = result["spill"]["stdout"]
    assert served.host.scratch.dir.exists()
    size = (served.host.scratch.dir / "tool-output" / spill.rsplit("/", 1)[1]).stat().st_size
    assert size >= 500 * 1024

    await page.goto(served.call_url("call_big"))
    await page.wait_for_selector("#detail[data-stream=done]")
    assert await page.text_content(".badge.cut") == "cut"
    await page.click("button[data-output=stdout]")
    await page.wait_for_selector("#viewer[data-offset='0']")
    assert await page.text_content("#viewer-info") == "lines 1–500 · 524288 bytes"
    assert (await pane(page, "viewer-text"))[:3] == ["row 000000", "row 000001", "row 000002"]

    await page.click("#viewer-next")
    await page.wait_for_selector("#viewer[data-offset='500']")
    await page.click("#viewer-next")
    await page.wait_for_selector("#viewer[data-offset='1000']")
    assert await page.text_content("#viewer-info") == "lines 1001–1500 · 524288 bytes"
    await wait_first_line(page, "viewer-text", "row 001000")
    await page.click("#viewer-prev")
    await page.wait_for_selector("#viewer[data-offset='500']")
    await wait_first_line(page, "viewer-text", "row 000500")
    await screenshot(page, "spill-viewer")

    # Paged through Read windows, never the whole file, never every line in the DOM.
    assert [o["offset"] for o in outputs] == [0, 500, 1000, 500]
    assert all(o["lineCount"] == 500 and o["truncated"] for o in outputs)
    assert await page.evaluate("() => document.querySelectorAll('.line').length") < 300


async def test_a_read_result_opens_its_file_at_its_window_and_pages_on(
    served: Served, page: Any, screenshot: Any
) -> None:
    (served.workspace / "big.txt").write_text("".join(f"f {i:04d}\n" for i in range(3000)))
    result = await served.host.call(
        "Read", {"path": "big.txt", "offset": 100, "limit": 50}, tool_call_id="call_read"
    )
    assert result["lineCount"] == 50
    await page.goto(served.call_url("call_read"))
    await page.wait_for_selector("#detail[data-stream=done]")
    shown = "() => { const p = window.toolbound.readPane; "
    shown += "return [...Array(p.count).keys()].map(i => p.lineText(i)); }"
    assert await page.evaluate(shown) == [f"f {i:04d}" for i in range(100, 150)]
    assert (await pane(page, "read-window"))[0] == "f 0100"
    first_number = "() => document.querySelector('#read-window .line').dataset.n"
    assert await page.evaluate(first_number) == "101"
    info = "big.txt (workspace) · lines 101–150 · 21000 bytes"
    assert await page.text_content("#read-info") == info
    assert await page.text_content("#result .notice") == result["notice"]
    assert await page.is_hidden("#bash-view")
    assert await page.text_content(".badge.cut") == "cut"

    await screenshot(page, "read-window")
    await page.click("button[data-output=file]")
    await page.wait_for_selector("#viewer[data-offset='100']")
    assert await page.text_content("#viewer-info") == "lines 101–600 · 21000 bytes"
    await wait_first_line(page, "viewer-text", "f 0100")
    await page.click("#viewer-next")
    await page.wait_for_selector("#viewer[data-offset='600']")
    await wait_first_line(page, "viewer-text", "f 0600")


async def test_a_timed_out_call_shows_the_timeout_and_its_marker(served: Served, page: Any) -> None:
    call = await start_call(served, "call_late", "seq 1 5000; sleep 30", timeout_s=1)
    result = await asyncio.wait_for(call, WAIT_MS / 1000)
    assert result["timedOut"]
    await page.goto(served.call_url("call_late"))
    await page.wait_for_selector("#detail[data-stream=done]")
    assert await page.text_content("#result .status") == "timed out; the process tree was stopped"
    # The model view is the result event's text as the model read it, the marker in it.
    marker = result["stdout"].rsplit("\n", 1)[1]
    shown = await page.text_content("#model .model-text")
    assert shown == model_text("Bash", result)
    assert shown.startswith("[timed out]\n")
    assert marker in shown
    assert await page.text_content("#call-head .badge") == "timed out"


async def test_an_edit_shows_its_diff(served: Served, page: Any, screenshot: Any) -> None:
    (served.workspace / "app.py").write_text("def f():\n    return 1\n")
    await served.host.call("Read", {"path": "app.py"}, tool_call_id="call_read_app")
    result = await served.host.call(
        "Edit",
        {"path": "app.py", "oldString": "return 1", "newString": "return 2"},
        tool_call_id="call_edit",
    )
    assert result["replacements"] == 1
    await page.goto(served.call_url("call_edit"))
    await page.wait_for_selector("#detail[data-stream=done]")
    rows = "() => [...document.querySelectorAll('#list-view .diff > div')]"
    rows += ".map(e => [e.className, e.textContent])"
    shown = await page.evaluate(rows)
    assert [text for _, text in shown] == result["diff"].removesuffix("\n").split("\n")
    assert ["del", "-    return 1"] in shown
    assert ["add", "+    return 2"] in shown
    assert await page.text_content("#list-view .list-title") == "app.py · 1 replacement"
    await screenshot(page, "edit-diff")


async def test_a_bash_call_shows_its_whole_command_its_description_and_the_model_view(
    served: Served, page: Any, screenshot: Any
) -> None:
    command = "printf 'one\\ntwo\\n'; echo warn >&2; " + " ".join(
        f"echo {i:03d};" for i in range(40)
    )
    assert len(command) > 160  # longer than the list's short form
    args = {"command": command, "description": "Print two lines and a warning"}
    result = await served.host.call("Bash", args, tool_call_id="call_desc")
    await page.goto(served.call_url("call_desc"))
    await page.wait_for_selector("#detail[data-stream=done]")

    assert await page.text_content("#call-description") == "Print two lines and a warning"
    assert await page.text_content("#args-list dd[data-arg=command]") == command
    row = "#calls .call[data-id=call_desc]"
    assert await page.text_content(f"{row} .desc") == "Print two lines and a warning"
    assert (await page.text_content(f"{row} .args") or "").endswith("…")
    # What the model read, exactly as sent, and its token estimate.
    text = model_text("Bash", result)
    assert await page.text_content("#model-text") == text
    assert await page.text_content("#model-tokens") == str(estimate_tokens(text))
    assert await page.text_content("#model-bytes") == str(len(text.encode()))
    # The outcome first, then the two streams.
    order = "() => [...document.querySelectorAll('#result .status, #bash-view h3')]"
    order += ".map(e => e.textContent)"
    assert await page.evaluate(order) == [
        "exit status 0",
        "stdout · 42 lines · 168 bytes",
        "stderr · 1 line · 5 bytes",
    ]
    await page.wait_for_function("() => window.toolbound.panes.stdout.count === 42")
    held = "() => { const p = window.toolbound.panes.stdout; "
    held += "return [...Array(p.count).keys()].map(i => p.lineText(i)); }"
    assert await page.evaluate(held) == ["one", "two", *(f"{i:03d}" for i in range(40))]
    assert await pane(page, "out-stderr") == ["warn"]
    await screenshot(page, "bash-call")


async def test_grep_hits_are_grouped_by_file_with_context_lines_apart(
    served: Served, page: Any, screenshot: Any
) -> None:
    (served.workspace / "a.py").write_text("import os\n\ndef alpha():\n    return os.sep\n")
    (served.workspace / "b.py").write_text("x = 1\ndef beta():\n    pass\ny = 2\nz = 3\n")
    args = {"pattern": "^def ", "before": 1, "after": 1}
    result = await served.host.call("Grep", args, tool_call_id="call_grep")
    files = list(dict.fromkeys(m["path"] for m in result["matches"]))
    assert sorted(files) == ["a.py", "b.py"]
    await page.goto(served.call_url("call_grep"))
    await page.wait_for_selector("#detail[data-stream=done]")

    shown = await page.evaluate(
        """() => [...document.querySelectorAll('#list-view .grep-file')].map(f => [
            f.dataset.path,
            f.querySelector('h4').textContent,
            [...f.querySelectorAll('.hit')].map(h => [
                h.classList.contains('context') ? 'context' : 'match',
                Number(h.querySelector('.num').dataset.n),
                h.textContent,
            ]),
        ])"""
    )
    assert shown == [
        [
            path,
            f"{path} · 1 match",
            [
                ["context" if m.get("context") else "match", m["line"], m["text"]]
                for m in result["matches"]
                if m["path"] == path
            ],
        ]
        for path in files
    ]
    assert await page.text_content("#list-view .list-title") == "6 lines, 2 files"
    assert await page.is_hidden("#bash-view")
    await screenshot(page, "grep-hits")


async def test_a_glob_is_a_list_and_a_tool_error_says_its_code(served: Served, page: Any) -> None:
    for name in ("one.txt", "two.txt"):
        (served.workspace / name).write_text(name)
    found = await served.host.call("Glob", {"pattern": "*.txt"}, tool_call_id="call_glob")
    await page.goto(served.call_url("call_glob"))
    await page.wait_for_selector("#detail[data-stream=done]")
    items = "() => [...document.querySelectorAll('#list-view ol.files li')].map(e => e.textContent)"
    assert await page.evaluate(items) == found["matches"]
    assert await page.text_content("#list-view .list-title") == "2 files"

    failed = await served.host.call("Read", {"path": "missing.txt"}, tool_call_id="call_missing")
    await page.goto(served.call_url("call_missing"))
    await page.wait_for_function(
        "() => document.querySelector('#result .status.error') !== null", timeout=WAIT_MS
    )
    error = failed["error"]
    assert await page.text_content("#result .status") == f"{error['code']}: {error['message']}"
    assert await page.is_hidden("#read-view")
