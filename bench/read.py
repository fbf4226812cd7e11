"""Benchmark: Read's first deep page of a 300 MB, 5-million-line file (issues 3, 19).

Anchor: ``tail -n +N FILE | head -n 2000`` on the same file, measured side by
side in the same run, from the page cache for both (the file is read once
before any timing).

For the windows at offsets 0, 2,500,000 and 4,999,000 (scaled with
``--lines``) it prints:

- first call: a fresh process starts a ``ToolHost`` and times its very first
  call, one ``Read`` through ``ToolHost.call``, so every first-use cost of a
  call is in it (the thread pool, the empty line index; the tools' modules
  are imported as the host starts, whose time is printed beside it). Two
  columns: right after the host started (the goal's column), and once the
  host has served one Read of the file's first line (warm: the deep scan
  alone). The median of ``--runs`` such processes, against the median of as
  many ``tail | head`` runs, alternating (goal: ratio <= 1.5x);
- repeat: the median of 20 more calls in that process (goal: <= 5 ms);
- peak RSS of the reading process (VmHWM; goal: <= 64 MB).

The file is generated in a temp dir and removed afterwards.

    python bench/read.py            # 5,000,000 lines of 60 bytes, 300 MB
    python bench/read.py --quick    # 200,000 lines, 12 MB
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

LINE_BYTES = 60
WINDOW_LINES = 2000
REPEATS = 20
GOAL_RATIO = 1.5
GOAL_REPEAT_MS = 5.0
GOAL_RSS_MB = 64.0


def generate(path: Path, n_lines: int) -> None:
    """``n_lines`` lines of exactly LINE_BYTES bytes: a line number, then filler."""
    filler = "lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor inc"
    pad = LINE_BYTES - 11
    tail = filler[:pad]
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


async def child_main(workspace: str, name: str, offset: int, warm: bool) -> dict[str, Any]:
    from toolbound import ToolHost

    started = time.perf_counter()
    async with ToolHost(workspace, data_dir=Path(workspace) / ".data") as host:
        start_s = time.perf_counter() - started
        if warm:
            await host.call("Read", {"path": name, "limit": 1})
        rss_before_kb = vm_kb("VmRSS")
        cpu0, t0 = cpu_s(resource.RUSAGE_SELF), time.perf_counter()
        first = await host.call("Read", {"path": name, "offset": offset})
        first_s = time.perf_counter() - t0
        first_cpu_s = cpu_s(resource.RUSAGE_SELF) - cpu0
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
        "start_s": start_s,
        "first_cpu_s": first_cpu_s,
        "repeat_s": statistics.median(repeats),
        "lines": first["lineCount"],
        "rss_before_mb": rss_before_kb / 1024,
        "peak_rss_mb": vm_kb("VmHWM") / 1024,
    }


def run_child(workspace: Path, name: str, offset: int, warm: bool) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(workspace), name, str(offset), str(int(warm))],
        capture_output=True,
        text=True,
        check=True,
        env=child_env(),
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def child_env() -> dict[str, str]:
    """This environment, with bytecode caching on: an installed toolbound has its
    modules compiled (pip compiles them), so a fresh process that compiled every
    module it imports (``PYTHONDONTWRITEBYTECODE`` in a checkout) would add a
    first-use cost no install pays (measured: 8 ms on the first Read alone)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def cpu_s(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def time_tail(path: Path, offset: int) -> tuple[float, float]:
    """Wall and CPU seconds (shell, tail and head together) of one anchor run."""
    cpu0, t0 = cpu_s(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(
        f"tail -n +{offset + 1} '{path}' | head -n {WINDOW_LINES} > /dev/null",
        shell=True,
        check=True,
    )
    return time.perf_counter() - t0, cpu_s(resource.RUSAGE_CHILDREN) - cpu0


def measure(path: Path, offset: int, runs: int) -> dict[str, Any]:
    children, cold, tails = [], [], []
    for _ in range(runs):  # alternate, so all see the same machine state
        cold.append(run_child(path.parent, path.name, offset, warm=False))
        tails.append(time_tail(path, offset))
        children.append(run_child(path.parent, path.name, offset, warm=True))
    first = statistics.median(c["first_s"] for c in children)
    cold_first = statistics.median(c["first_s"] for c in cold)
    tail = statistics.median(wall for wall, _ in tails)
    tail_cpu = statistics.median(cpu for _, cpu in tails)
    return {
        "offset": offset,
        "first_ms": first * 1000,
        "cold_ms": cold_first * 1000,
        "tail_ms": tail * 1000,
        "ratio": first / tail,
        "cold_ratio": cold_first / tail,
        "cpu_ms": statistics.median(c["first_cpu_s"] for c in children) * 1000,
        "cold_cpu_ms": statistics.median(c["first_cpu_s"] for c in cold) * 1000,
        "tail_cpu_ms": tail_cpu * 1000,
        "repeat_ms": statistics.median(c["repeat_s"] for c in children) * 1000,
        "start_ms": statistics.median(c["start_s"] for c in cold) * 1000,
        "rss_before_mb": max(c["rss_before_mb"] for c in children),
        "peak_rss_mb": max(c["peak_rss_mb"] for c in children),
        "lines": children[0]["lines"],
    }


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def print_table(rows: list[dict[str, Any]], n_lines: int, size: int, runs: int) -> None:
    print(f"file: {n_lines:,} lines, {size / 1e6:.0f} MB; window read: default limit")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average {load} (1, 5, 15 min); medians of {runs} runs each")
    head = (
        f"{'offset':>10} | {'1st, just started':>20} | {'warm':>9} | {'tail|head':>9} | "
        f"{'ratio':>6} "
        f"(<= {GOAL_RATIO}x) | {'repeat':>8} (<= {GOAL_REPEAT_MS:g} ms) | "
        f"{'peak RSS':>9} (<= {GOAL_RSS_MB:g} MB) | {'RSS idle':>8} | lines | "
        "CPU ms: 1st just started / warm / tail|head | host start"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['offset']:>10,} | {r['cold_ms']:>6.1f} ms {r['cold_ratio']:>5.2f}x "
            f"{verdict(r['cold_ratio'] <= GOAL_RATIO):>6} | "
            f"{r['first_ms']:>6.1f} ms | {r['tail_ms']:>6.1f} ms | "
            f"{r['ratio']:>5.2f}x {verdict(r['ratio'] <= GOAL_RATIO):>8} | "
            f"{r['repeat_ms']:>5.2f} ms {verdict(r['repeat_ms'] <= GOAL_REPEAT_MS):>10} | "
            f"{r['peak_rss_mb']:>6.1f} MB {verdict(r['peak_rss_mb'] <= GOAL_RSS_MB):>9} | "
            f"{r['rss_before_mb']:>5.1f} MB | {r['lines']} | "
            f"{r['cold_cpu_ms']:.0f} / {r['cpu_ms']:.0f} / {r['tail_cpu_ms']:.0f} | "
            f"{r['start_ms']:.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=5_000_000, help="lines in the file")
    parser.add_argument("--quick", action="store_true", help="a small run: 200,000 lines")
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per offset")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        workspace, name, offset, warm = args.child
        print(json.dumps(asyncio.run(child_main(workspace, name, int(offset), warm == "1"))))
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
        print_table(rows, n_lines, path.stat().st_size, args.runs)


if __name__ == "__main__":
    main()
