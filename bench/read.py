"""Benchmark: Read at deep offsets of a 1 GB, 10-million-line file (issue 3).

Anchor: ``tail -n +N FILE | head -n 2000`` on the same file, measured side by
side in the same run, from the page cache for both (the file is read once
before any timing).

For the windows at offsets 0, 5,000,000 and 9,999,000 (scaled with
``--lines``) it prints:

- first call: a fresh process (empty line index) times one ``Read`` through
  ``ToolHost.call``; the median of ``--runs`` such processes, against the
  median of as many ``tail | head`` runs (goal: ratio <= 1.5x);
- repeat: the median of 20 more calls in that process (goal: <= 5 ms);
- peak RSS of the reading process (VmHWM; goal: <= 64 MB), next to its RSS
  after imports and a warm-up call, before the big file was touched.

Each process is warmed first, as a serving host is: its imports are loaded
(numpy's too) by a deep Read of a small file, so "first call" measures the
empty line index, not the interpreter's start-up.

The file is generated in a temp dir and removed afterwards.

    python bench/read.py            # 10,000,000 lines, ~1 GB
    python bench/read.py --quick    # 200,000 lines, ~20 MB
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

LINE_BYTES = 100
WINDOW_LINES = 2000
REPEATS = 20
GOAL_RATIO = 1.5
GOAL_REPEAT_MS = 5.0
GOAL_RSS_MB = 64.0


def generate(path: Path, n_lines: int) -> None:
    """``n_lines`` lines of exactly LINE_BYTES bytes: a line number, then filler."""
    filler = "lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor inc"
    pad = LINE_BYTES - 11
    tail = (filler * 2)[:pad]
    block = 10_000
    with path.open("w") as f:
        for first in range(0, n_lines, block):
            last = min(first + block, n_lines)
            f.write("".join(f"{i:09d} {tail}\n" for i in range(first, last)))


def warm_page_cache(path: Path) -> None:
    with path.open("rb") as f:
        while f.read(1 << 24):
            pass


def vm_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


async def child_main(workspace: str, name: str, offset: int) -> dict[str, Any]:
    from toolbound import ToolHost

    # A warm host, as a server is: imports (numpy's included: a deep page of a
    # small file counts a large span) and the thread pool, but not the big file.
    (Path(workspace) / "warm.txt").write_text("warm line of text\n" * 20_000)
    async with ToolHost(workspace, data_dir=Path(workspace) / ".data") as host:
        await host.call("Read", {"path": "warm.txt", "offset": 15_000})
        rss_before_kb = vm_kb("VmRSS")
        t0 = time.perf_counter()
        first = await host.call("Read", {"path": name, "offset": offset})
        first_s = time.perf_counter() - t0
        repeats = []
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            again = await host.call("Read", {"path": name, "offset": offset})
            repeats.append(time.perf_counter() - t0)
            assert again == first
    expected = f"{offset:09d} "
    assert first["content"].startswith(expected), first["content"][:40]
    return {
        "first_s": first_s,
        "repeat_s": statistics.median(repeats),
        "lines": first["lineCount"],
        "rss_before_mb": rss_before_kb / 1024,
        "peak_rss_mb": vm_kb("VmHWM") / 1024,
    }


def run_child(workspace: Path, name: str, offset: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(workspace), name, str(offset)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def time_tail(path: Path, offset: int) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        f"tail -n +{offset + 1} '{path}' | head -n {WINDOW_LINES} > /dev/null",
        shell=True,
        check=True,
    )
    return time.perf_counter() - t0


def measure(path: Path, offset: int, runs: int) -> dict[str, Any]:
    children, tails = [], []
    for _ in range(runs):  # alternate, so both see the same machine state
        children.append(run_child(path.parent, path.name, offset))
        tails.append(time_tail(path, offset))
    first = statistics.median(c["first_s"] for c in children)
    tail = statistics.median(tails)
    return {
        "offset": offset,
        "first_ms": first * 1000,
        "tail_ms": tail * 1000,
        "ratio": first / tail,
        "repeat_ms": statistics.median(c["repeat_s"] for c in children) * 1000,
        "rss_before_mb": max(c["rss_before_mb"] for c in children),
        "peak_rss_mb": max(c["peak_rss_mb"] for c in children),
        "lines": children[0]["lines"],
    }


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def print_table(rows: list[dict[str, Any]], n_lines: int, size: int) -> None:
    print(f"file: {n_lines:,} lines, {size / 1e9:.2f} GB; window read: default limit")
    head = (
        f"{'offset':>10} | {'Read 1st':>9} | {'tail|head':>9} | {'ratio':>6} "
        f"(<= {GOAL_RATIO}x) | {'repeat':>8} (<= {GOAL_REPEAT_MS:g} ms) | "
        f"{'peak RSS':>9} (<= {GOAL_RSS_MB:g} MB) | {'RSS idle':>8} | lines"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['offset']:>10,} | {r['first_ms']:>6.1f} ms | {r['tail_ms']:>6.1f} ms | "
            f"{r['ratio']:>5.2f}x {verdict(r['ratio'] <= GOAL_RATIO):>8} | "
            f"{r['repeat_ms']:>5.2f} ms {verdict(r['repeat_ms'] <= GOAL_REPEAT_MS):>10} | "
            f"{r['peak_rss_mb']:>6.1f} MB {verdict(r['peak_rss_mb'] <= GOAL_RSS_MB):>9} | "
            f"{r['rss_before_mb']:>5.1f} MB | {r['lines']}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=10_000_000, help="lines in the file")
    parser.add_argument("--quick", action="store_true", help="a small run: 200,000 lines")
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per offset")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        workspace, name, offset = args.child
        print(json.dumps(asyncio.run(child_main(workspace, name, int(offset)))))
        return
    n_lines = 200_000 if args.quick else args.lines
    offsets = [0, n_lines // 2, max(0, n_lines - 1000)]
    with tempfile.TemporaryDirectory(prefix="toolbound-bench-read-") as tmp:
        path = Path(tmp) / "big.txt"
        t0 = time.perf_counter()
        generate(path, n_lines)
        print(f"generated in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        warm_page_cache(path)
        rows = [measure(path, offset, args.runs) for offset in offsets]
        print_table(rows, n_lines, path.stat().st_size)


if __name__ == "__main__":
    main()
