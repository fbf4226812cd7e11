"""Benchmark: the web view's live latency and its memory with a huge output open.

1. Latency: a Bash call prints 1,000 lines, paced (one ``echo`` per loop turn
   with a short sleep, like a build), while Chromium shows the call live.
   For each line: the time from the chunk that carried it leaving the Bash
   reader (``ctx.emit``, timed by wrapping the host's event sink) to the line
   element appearing in the page (a MutationObserver on the stdout pane).
   Browser and Python clocks are aligned by a round trip before the run.
   Anchor: the same chunks' time from ``ctx.emit`` to an in-process consumer
   of ``host.stream`` (the MCP server's position), measured in the same run.
2. Memory: the page's JS heap (CDP ``Performance.getMetrics`` after a forced
   GC) and its DOM node count with a 200,000-line output open (``yes x``:
   the capture's 200,000-line ceiling within its 512 KB), against the same
   page with a 10-line output open; and the pane fed 200,000 distinct
   80-character lines in the page, the page's own cost per line.

Run: ``.venv/bin/python bench/web.py`` (needs /usr/bin/chromium: ``make browser``).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from toolbound.exec.events import CallEvents
from toolbound.host import ToolHost
from toolbound.web import Hub, WebView, build_app, host_reader
from toolbound.web.server import LocalServer

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LINES = 1000
BIG_LINES = 200_000
TIMEOUT_MS = 120_000

# Records, per line "L <n>", when it first appears in the stdout pane.
WATCH_JS = """
() => {
  window.__seen = {};
  const pane = document.getElementById('out-stdout');
  new MutationObserver(() => {
    const now = performance.timeOrigin + performance.now();
    for (const line of pane.querySelectorAll('.line')) {
      const t = line.textContent;
      if (t.startsWith('L ') && !(t in window.__seen)) window.__seen[t] = now;
    }
  }).observe(pane, {childList: true, subtree: true});
}
"""


class EmitClock:
    """Wraps the calls' event emitter: when each chunk left the tool (wall clock, ms)."""

    def __init__(self) -> None:
        self.chunks: list[tuple[float, str]] = []
        self.first = threading.Event()
        self._original = CallEvents.chunk

    def __enter__(self) -> EmitClock:
        original = self._original
        chunks = self.chunks
        first = self.first

        def timed(sink: Any, stream: Any, data: str) -> None:
            chunks.append((time.time() * 1000, data))
            original(sink, stream, data)
            first.set()

        CallEvents.chunk = timed  # type: ignore[method-assign,assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        CallEvents.chunk = self._original  # type: ignore[method-assign]

    def line_times(self) -> dict[str, float]:
        """Each complete line -> when the chunk that ended it was emitted."""
        out: dict[str, float] = {}
        pending = ""
        for at, data in self.chunks:
            pending += data
            *complete, pending = pending.split("\n")
            for line in complete:
                out.setdefault(line, at)
        return out


async def clock_offset_ms(page: Any) -> float:
    """Browser wall clock minus Python's, from the best of several round trips."""
    best: tuple[float, float] | None = None
    for _ in range(20):
        t0 = time.time() * 1000
        js = await page.evaluate("() => performance.timeOrigin + performance.now()")
        t1 = time.time() * 1000
        if best is None or t1 - t0 < best[0]:
            best = (t1 - t0, js - (t0 + t1) / 2)
    assert best is not None
    return best[1]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def latency(host: ToolHost, view_url: str, page: Any) -> dict[str, list[float]]:
    await page.goto(view_url)
    offset = await clock_offset_ms(page)
    command = f'for i in $(seq 1 {LINES}); do echo "L $i"; sleep 0.002; done'
    consumer: dict[str, float] = {}

    async def consume(call_id: str) -> None:
        pending = ""
        args = {"command": command, "timeout": 120}
        async for event in host.stream("Bash", args, tool_call_id=call_id):
            if event["type"] != "chunk":
                continue
            pending += event["data"]
            *complete, pending = pending.split("\n")
            now = time.time() * 1000
            for line in complete:
                consumer.setdefault(line, now)

    with EmitClock() as clock:
        call_id = "bench_live"
        run = asyncio.create_task(consume(call_id))
        await asyncio.to_thread(clock.first.wait, TIMEOUT_MS / 1000)
        await page.goto(f"{view_url.split('?')[0]}#s={host.session_id}&c={call_id}")
        await page.wait_for_selector("#out-stdout")
        await page.evaluate(WATCH_JS)
        watching_since = time.time() * 1000
        await run
        await page.wait_for_function(
            f"() => Object.keys(window.__seen).length >= {LINES} - 50", timeout=TIMEOUT_MS
        )
        await page.wait_for_function(f"() => 'L {LINES}' in window.__seen", timeout=TIMEOUT_MS)
        seen: dict[str, float] = await page.evaluate("() => window.__seen")
    emitted = clock.line_times()
    lines = [f"L {i}" for i in range(1, LINES + 1)]
    # Lines emitted before the watcher started (shown as backlog) are left out.
    watched = [line for line in lines if emitted[line] > watching_since and line in seen]
    return {
        "page": [seen[line] - offset - emitted[line] for line in watched],
        "consumer": [consumer[line] - emitted[line] for line in watched],
    }


async def heap(host: ToolHost, view_url: str, context: Any, lines: int) -> dict[str, float]:
    call_id = f"bench_big_{lines}"
    await host.call(
        "Bash", {"command": f"yes x | head -n {lines}", "timeout": 120}, tool_call_id=call_id
    )
    page = await context.new_page()
    cdp = await context.new_cdp_session(page)
    await page.goto(view_url)
    started = time.perf_counter()
    await page.goto(f"{view_url.split('?')[0]}#s={host.session_id}&c={call_id}")
    await page.wait_for_function(
        f"() => window.toolbound && window.toolbound.panes.stdout.count >= {lines}",
        timeout=TIMEOUT_MS,
    )
    await page.wait_for_selector("#detail[data-stream=done]", timeout=TIMEOUT_MS)
    shown_s = time.perf_counter() - started
    await cdp.send("Performance.enable")
    await cdp.send("HeapProfiler.collectGarbage")
    metrics = {m["name"]: m["value"] for m in (await cdp.send("Performance.getMetrics"))["metrics"]}
    lines_in_dom = await page.evaluate("() => document.querySelectorAll('.line').length")
    await page.close()
    return {
        "heap_mb": metrics["JSHeapUsedSize"] / 2**20,
        "nodes": metrics["Nodes"],
        "line_elements": lines_in_dom,
        "shown_s": shown_s,
    }


async def heap_synthetic(view_url: str, context: Any, lines: int, width: int) -> dict[str, float]:
    """The pane alone, fed ``lines`` distinct lines of ``width`` characters in the page.

    More text than a Bash call can stream (its capture stops at 512 KB), to
    show what the page itself costs per line.
    """
    page = await context.new_page()
    cdp = await context.new_cdp_session(page)
    await page.goto(view_url)
    await page.wait_for_function("() => window.toolbound !== undefined")
    started = time.perf_counter()
    await page.evaluate(
        """([lines, width]) => {
          document.getElementById('detail').hidden = false;
          const pane = window.toolbound.panes.stdout;
          let chunk = '';
          for (let i = 0; i < lines; i++) {
            chunk += String(i).padStart(8, '0') + ' ' + 'x'.repeat(width - 9) + '\\n';
            if (chunk.length > 65536) { pane.append(chunk); chunk = ''; }
          }
          pane.append(chunk);
        }""",
        [lines, width],
    )
    await page.wait_for_function(
        f"() => window.toolbound.panes.stdout.count >= {lines}", timeout=TIMEOUT_MS
    )
    shown_s = time.perf_counter() - started
    await cdp.send("Performance.enable")
    await cdp.send("HeapProfiler.collectGarbage")
    metrics = {m["name"]: m["value"] for m in (await cdp.send("Performance.getMetrics"))["metrics"]}
    lines_in_dom = await page.evaluate("() => document.querySelectorAll('.line').length")
    await page.close()
    return {
        "heap_mb": metrics["JSHeapUsedSize"] / 2**20,
        "nodes": metrics["Nodes"],
        "line_elements": lines_in_dom,
        "shown_s": shown_s,
    }


async def main() -> int:
    from playwright.async_api import async_playwright

    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        data = Path(tmp) / "data"
        hub = Hub()
        async with ToolHost(workspace=workspace, data_dir=data, session_id="bench-web") as host:
            hub.attach(host)
            view = WebView(hub, host_reader(workspace=workspace, data_dir=data))
            server = await LocalServer(build_app(view)).start()
            url = f"{server.base_url}/?token={view.token}"
            try:
                async with async_playwright() as pw:
                    context = await pw.chromium.launch_persistent_context(
                        str(Path(tmp) / "profile"),
                        executable_path=CHROMIUM,
                        args=CHROMIUM_ARGS,
                        headless=True,
                        viewport={"width": 1200, "height": 900},
                    )
                    page = context.pages[0] if context.pages else await context.new_page()
                    lat = await latency(host, url, page)
                    small = await heap(host, url, context, 10)
                    big = await heap(host, url, context, BIG_LINES)
                    wide = await heap_synthetic(url, context, BIG_LINES, 80)
                    await context.close()
            finally:
                await server.stop()

    page_ms, consumer_ms = lat["page"], lat["consumer"]
    print(f"web view: {LINES} paced Bash lines, chunk leaving the Bash reader -> line shown")
    print(f"{'path':<34} {'lines':>6} {'median ms':>10} {'p95 ms':>8} {'max ms':>8}")
    for name, values in (
        ("page (SSE + render)", page_ms),
        ("in-process stream consumer", consumer_ms),
    ):
        print(
            f"{name:<34} {len(values):>6} {statistics.median(values):>10.2f} "
            f"{pct(values, 0.95):>8.2f} {max(values):>8.2f}"
        )
    ratio = statistics.median(page_ms) / max(statistics.median(consumer_ms), 1e-3)
    print(f"ratio page / in-process consumer (median): {ratio:.1f}x")
    print()
    print("page memory with an output open (JS heap after GC, CDP)")
    print(f"{'output':<16} {'heap MB':>8} {'DOM nodes':>10} {'.line elems':>12} {'shown in s':>11}")
    rows = (
        (f"{10:,} lines", small),
        (f"{BIG_LINES:,} lines", big),
        (f"{BIG_LINES:,} x 80 ch*", wide),
    )
    for name, m in rows:
        print(
            f"{name:<16} {m['heap_mb']:>8.1f} {m['nodes']:>10.0f} "
            f"{m['line_elements']:>12.0f} {m['shown_s']:>11.2f}"
        )
    print(f"ratio heap 200,000 / 10 lines: {big['heap_mb'] / small['heap_mb']:.1f}x")
    print("* fed to the pane in the page (16 MB of text, more than a Bash call can stream)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
