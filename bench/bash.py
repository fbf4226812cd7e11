"""Bash tool benchmark (issue 5): throughput, memory, spawn overhead, tree stop time.

Each figure is measured side by side with its anchor in one run:

- 1 GiB to stdout, and 1 GiB to stderr, through the Bash tool (host in a child
  process, so its peak RSS is its own ``ru_maxrss``) against the same command
  piped into ``cat > /dev/null``, the fastest ordinary reader of the same pipe;
  goal <= 1.3x, peak RSS <= 64 MB, every count exact. The runs alternate
  (anchor, tool) and the medians are compared; ``> /dev/null`` (no reader at
  all) is printed as the floor. Two tool figures: a host's call once it has
  served one (``true``: imports and workers warm), and its very first call
  right after it started, every first-use cost in it.
- 500 runs of ``true`` through the tool against ``subprocess.run(["bash",
  "-c", "true"])``; goal <= 1.5x.
- A tree of 50 processes, setsid and double-forked ones among them, all
  ignoring SIGTERM, timed from the deadline to the last process gone; goal
  <= grace + 0.5 s.

Usage: ``python bench/bash.py`` prints the table; ``--throughput`` only the
1 GiB rows, ``--text`` only the 70-byte-lines rows, ``--true`` only the
``true`` row (with a no-store column: the same host recording nothing).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from toolbound import DEFAULT_LIMITS, ToolHost

GIB = 1024**3
WRITERS = {
    "head -c 1G /dev/zero": "raw bytes, the pipe is all the work",
    f"yes '{'a line of build output from a compiler, padded out to 70 bytes':<69}' | head -c 1G": (
        "70-byte lines via a pipe"
    ),
}
TRUE_RUNS = 500
TRUE_BATCH = 25
# Throughput runs per figure, alternating with the anchor; medians are compared.
RUNS = 5
TREE_TIMEOUT_S = 1


def _expected_lines(writer: str) -> int:
    """Lines of 1 GiB of the writer's output: newlines, plus a final partial line."""
    if "yes" not in writer:
        return 1
    line = len(writer.split("'")[1]) + 1
    return -(-GIB // line)


def _child_run(command: str, workspace: str, data_dir: str, ready: str) -> None:
    """In a fresh process: one Bash call (``ready``: "1" after a first call of
    ``true``, "0" right after the host started); print elapsed seconds and this
    process's peak RSS."""

    def cpu_s() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    call_cpu = 0.0

    async def go() -> float:
        nonlocal call_cpu
        async with ToolHost(workspace, data_dir, "bench") as host:
            if ready == "1":
                await host.call("Bash", {"command": "true"})
            cpu_before, started = cpu_s(), time.perf_counter()
            result = await host.call("Bash", {"command": command, "timeout": 300})
            elapsed = time.perf_counter() - started
            call_cpu = cpu_s() - cpu_before
            totals = result["totals"]
            assert totals["stdout"]["bytes"] + totals["stderr"]["bytes"] == GIB, result
            lines = totals["stdout"]["lines"] + totals["stderr"]["lines"]
            assert lines == _expected_lines(command), result
            return elapsed

    elapsed = asyncio.run(go())
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {"elapsed": elapsed, "peak_mb": peak_mb, "cpu_s": cpu_s(), "call_cpu_s": call_cpu}
        )
    )


def _through_tool(command: str, workspace: str, data_dir: str, *, ready: bool) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", command, workspace, data_dir, str(int(ready))],
        capture_output=True,
        text=True,
        check=True,
        # Bytecode caching on, as in an install (pip compiles the modules).
        env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    )
    figures: dict[str, float] = json.loads(out.stdout)
    return figures


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time_shell(command: str) -> tuple[float, float]:
    """Wall seconds and CPU seconds (all the pipeline's processes) of one run."""
    cpu_before, started = _children_cpu_s(), time.perf_counter()
    subprocess.run(["bash", "-c", command], check=True)
    return time.perf_counter() - started, _children_cpu_s() - cpu_before


def bench_throughput(
    workspace: str, data_dir: str, writers: dict[str, str]
) -> list[tuple[str, str, str, str]]:
    rows = []
    for writer, what in writers.items():
        for stream, redirect in (("stdout", ""), ("stderr", " >&2")):
            command = f"{{ {writer}; }}{redirect}"
            anchors, floors, runs, cold = [], [], [], []
            for _ in range(RUNS):  # alternate, so a shared machine's load hits all alike
                anchors.append(_time_shell(f"{{ {writer}; }} | cat > /dev/null"))
                runs.append(_through_tool(command, workspace, data_dir, ready=True))
                floors.append(_time_shell(f"{{ {writer}; }} > /dev/null"))
                cold.append(_through_tool(command, workspace, data_dir, ready=False))
            anchor, floor = (statistics.median(wall for wall, _ in t) for t in (anchors, floors))
            # cat's own CPU: the pipeline with cat less the same pipeline without a reader.
            cat_cpu = statistics.median(c for _, c in anchors) - statistics.median(
                c for _, c in floors
            )
            tool = statistics.median(r["elapsed"] for r in runs)
            cold_tool = statistics.median(r["elapsed"] for r in cold)
            call_cpu = statistics.median(r["call_cpu_s"] for r in runs)
            cold_cpu = statistics.median(r["call_cpu_s"] for r in cold)
            peak = max(r["peak_mb"] for r in runs + cold)
            rows.append(
                (
                    f"1 GiB to {stream}: {writer.split(' |')[0][:24]}… ({what})",
                    f"{tool:.3f} s vs | cat {anchor:.3f} s (> /dev/null: {floor:.3f} s); "
                    f"just started {cold_tool:.3f} s",
                    f"{tool / anchor:.2f}x (goal <= 1.3x); just started {cold_tool / anchor:.2f}x",
                    f"peak RSS {peak:.1f} MB (goal <= 64 MB); CPU in the call {call_cpu:.2f} s, "
                    f"just started {cold_cpu:.2f} s (cat: {cat_cpu:.2f} s)",
                )
            )
    return rows


async def _true_through_tool(
    workspace: str, data_dir: str, runs: int, *, store: str | None = None
) -> float:
    async with ToolHost(workspace, data_dir, "bench", store=store) as host:
        await host.call("Bash", {"command": "true"})  # warm-up: imports, guard, workers
        started = time.perf_counter()
        for _ in range(runs):
            result = await host.call("Bash", {"command": "true"})
            assert result["exitCode"] == 0, result
        return time.perf_counter() - started


def _true_plain(runs: int) -> float:
    started = time.perf_counter()
    for _ in range(runs):
        subprocess.run(["bash", "-c", "true"], check=True)
    return time.perf_counter() - started


def bench_true(workspace: str, data_dir: str) -> tuple[str, str, str, str]:
    """Interleaved batches, so a shared machine's changing load hits all sides alike.

    Beside the anchor, the same host with no store to record into (a store
    that cannot be opened costs the recording only): what recording costs.
    """
    unusable = Path(workspace) / "not-a-dir"
    unusable.write_text("")
    quiet = logging.getLogger("toolbound")
    level = quiet.level
    tool = bare = anchor = 0.0
    ratios: list[float] = []
    for _ in range(TRUE_RUNS // TRUE_BATCH):
        batch = asyncio.run(_true_through_tool(workspace, data_dir, TRUE_BATCH))
        quiet.setLevel(logging.ERROR)  # its "calls are not recorded" warning, once a batch
        try:
            no_store = str(unusable / "store")
            bare += asyncio.run(_true_through_tool(workspace, data_dir, TRUE_BATCH, store=no_store))
        finally:
            quiet.setLevel(level)
        plain = _true_plain(TRUE_BATCH)
        tool, anchor = tool + batch, anchor + plain
        ratios.append(batch / plain)
    return true_row(tool, bare, anchor, ratios)


def true_row(
    tool: float, bare: float, anchor: float, ratios: list[float]
) -> tuple[str, str, str, str]:
    ms = 1000 / TRUE_RUNS
    return (
        f"{TRUE_RUNS} x `true`",
        f"{tool * ms:.2f} ms vs {anchor * ms:.2f} ms each (no store: {bare * ms:.2f} ms)",
        f"{tool / anchor:.2f}x (goal <= 1.5x; batches {min(ratios):.2f}-{max(ratios):.2f}x, "
        f"median {statistics.median(ratios):.2f}x); no store {bare / anchor:.2f}x",
        "",
    )


def _tree_command(token: str) -> str:
    """50 processes: the shell and its sleep, 12 setsid pairs, 12 double-forked pairs."""
    stubborn = "trap \\'\\' TERM; sleep 600; :"
    return (
        f"export BENCH_TREE={token}; "
        f"for i in $(seq 12); do setsid bash -c $'{stubborn}' & done; "
        f"for i in $(seq 12); do ( bash -c $'{stubborn}' & ) ; done; "
        "trap '' TERM; echo ready; sleep 600; :"
    )


def _count_tree(token: str) -> int:
    needle = f"BENCH_TREE={token}\0".encode()
    found = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                env = Path(f"/proc/{name}/environ").read_bytes()
            except OSError:
                continue
            found += needle in env
    return found


async def bench_tree(host: ToolHost) -> tuple[str, str, str, str]:
    token = f"t{os.getpid()}"
    size = 0
    started = time.perf_counter()
    result: dict[str, Any] = {}
    async for event in host.stream(
        "Bash", {"command": _tree_command(token), "timeout": TREE_TIMEOUT_S}
    ):
        if event["type"] == "chunk" and "ready" in event["data"]:
            # Let the last double-forks land; the count is taken well before the deadline.
            await asyncio.sleep(0.3)
            size = _count_tree(token)
        elif event["type"] == "result":
            result = event["result"]
    after = time.perf_counter() - started - TREE_TIMEOUT_S
    left = _count_tree(token)
    size += 1  # the shell itself, which exported the token only to its children
    assert result["timedOut"], result
    grace = host.limits.kill_grace_s
    return (
        f"tree of {size} processes (setsid + double-fork, ignore SIGTERM)",
        f"{after:.3f} s from deadline to last gone, {left} left",
        f"goal <= {grace + 0.5:.1f} s (grace {grace:g} s)",
        "",
    )


async def in_process(workspace: str, data_dir: str) -> tuple[str, str, str, str]:
    async with ToolHost(workspace, data_dir, "bench", limits=DEFAULT_LIMITS) as host:
        return await bench_tree(host)


def main(flags: list[str]) -> None:
    writers = WRITERS
    if "--text" in flags:
        writers = {w: what for w, what in WRITERS.items() if w.startswith("yes")}
    with tempfile.TemporaryDirectory() as tmp:
        workspace, data_dir = tmp, str(Path(tmp) / "data")
        if "--true" in flags:
            rows = [bench_true(workspace, data_dir)]
        else:
            rows = bench_throughput(workspace, data_dir, writers)
        if not {"--throughput", "--text", "--true"} & set(flags):
            rows += [bench_true(workspace, data_dir), asyncio.run(in_process(workspace, data_dir))]
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
    width = max(len(r[0]) for r in rows)
    widths = [width, *(max(len(r[i]) for r in rows) for i in (1, 2))]
    header = ("figure", "measured", "ratio / goal", "memory")
    for row in (header, *rows):
        cells = [f"{cell:<{w}}" for cell, w in zip(row, widths, strict=False)]
        print("  ".join([*cells, row[3]]).rstrip())


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        _child_run(*sys.argv[2:])
    else:
        main(sys.argv[1:])
