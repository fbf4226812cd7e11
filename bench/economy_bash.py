"""Benchmark: the economy profile's Bash budgets, on the shell calls of a bug-fixing trace.

The shell calls of bench/economy_trace.py (a noisy test run with a coloured
``\\r`` progress bar and 40 warnings on stderr, npm spinners, docker redraws,
a 30 MB log) run through ``ToolHost`` under the exact profile and under the
economy profile with each candidate budget (``Limits.economy``), side by
side in one run. Printed per candidate: the model text's bytes (the result
event's text, ``model_text``) against the exact profile's and against the
anchor, Codex CLI's published policy simulated on the same raw output (every
result 10,000 bytes, half head, half tail); the needles visible in the text,
and visible or reachable through the spill file. The chosen budget is the
smallest that keeps every needle visible, with some room for a test run's
longer report.

    .venv/bin/python bench/economy_bash.py
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

# The script's folder (bench/) is on the path: the trace is its neighbour.
# Nothing here imports the mcp SDK, which bench/mcp.py would shadow.
import economy_trace
from toolbound import DEFAULT_LIMITS, ToolHost, model_text
from toolbound.bounds.terminal import strip_styling
from toolbound.limits import KB, Budget, Economy

Call = economy_trace.Call

# Outputs the trace's commands do not produce: long after collapsing too, so
# they are the ones a stream budget decides. Each needle sits where such a
# command puts the fact: a compiler's first error at the head, a verbose test
# run's failure report just above its summary, a listing's entry in the middle
# (the spill's business).
WIDE_SCRIPTS = {
    "tools/verbose_tests.py": """
import sys
for i in range(3000):
    print(f"tests/test_suite_{i // 100}.py::test_case_{i} PASSED" + " " * 20 + f"[{i // 30:3d}%]")
print("=" * 30 + " FAILURES " + "=" * 30)
for n in range(3):
    print(f"_____ test_bulk_discount_{n} _____")
    for k in range(25):
        print(f"    line {k} of the test body: total = order_total(items_{k})")
    print(f"E       assert {81 + n}.0 == 90")
    print(f"tests/test_pricing.py:{9 + n}: AssertionError")
print("=" * 20 + " 3 failed, 2997 passed in 41.20s " + "=" * 20)
""",
    "tools/compile_errors.py": """
print("src/app.ts(3,7): error TS2304: Cannot find name 'Discount'.")
for i in range(1500):
    where = f"src/module_{i}.ts({i % 90},{i % 40})"
    print(f"{where}: error TS7006: Parameter 'x' implicitly has an 'any' type.")
print("Found 1501 errors in 1500 files.")
""",
}
WIDE = [
    Call("Bash", {"command": "python3 tools/verbose_tests.py"}, "E       assert 81.0 == 90"),
    Call("Bash", {"command": "python3 tools/verbose_tests.py"}, "3 failed, 2997 passed"),
    Call("Bash", {"command": "python3 tools/compile_errors.py"}, "error TS2304"),
    Call("Bash", {"command": "python3 tools/compile_errors.py"}, "Found 1501 errors"),
    Call("Bash", {"command": "find lib -name '*.py' | sort"}, "lib/email/_parseaddr.py"),
]
CALLS = [call for call in economy_trace.TRACE if call.tool == "Bash"] + WIDE

CODEX_BYTES = 10_000

# (stdout budget, its head share, stderr budget, its head share)
CANDIDATES = [
    (Budget(32 * KB, 800), 0.5, Budget(16 * KB, 400), 0.25),
    (Budget(16 * KB, 400), 0.5, Budget(8 * KB, 200), 0.25),
    (Budget(16 * KB, 400), 0.25, Budget(8 * KB, 200), 0.25),
    (Budget(12 * KB, 300), 0.5, Budget(6 * KB, 150), 0.25),
    (Budget(8 * KB, 200), 0.5, Budget(4 * KB, 100), 0.25),
    (Budget(8 * KB, 200), 0.25, Budget(4 * KB, 100), 0.25),
    (Budget(4 * KB, 100), 0.5, Budget(2 * KB, 50), 0.25),
]


def shows(text: str, needle: str) -> bool:
    return needle in text or needle in strip_styling(text).text


def codex_text(workspace: Path, command: str) -> str:
    run = subprocess.run(["bash", "-c", command], cwd=workspace, capture_output=True, timeout=300)
    data = run.stdout + run.stderr
    if len(data) <= CODEX_BYTES:
        return data.decode("utf-8", "replace")
    half = CODEX_BYTES // 2
    cut = len(data) - CODEX_BYTES
    return f"{data[:half].decode(errors='ignore')}\n…{cut} bytes truncated…\n" + data[
        -half:
    ].decode(errors="ignore")


async def replay(workspace: Path, data_dir: Path, **host: Any) -> list[tuple[str, bool]]:
    """Each shell call's model text and whether its needle is in the text or its spill."""
    out = []
    async with ToolHost(workspace=workspace, data_dir=data_dir, **host) as h:
        for call in CALLS:
            result = await h.call("Bash", call.args)
            text = model_text("Bash", result)
            spills = [
                await asyncio.to_thread(Path(p).read_text, errors="replace")
                for p in result["spill"].values()
            ]
            out.append((text, any(shows(s, call.needle) for s in spills)))
    return out


def line(name: str, texts: list[tuple[str, bool]], exact: int, codex: int) -> str:
    total = sum(len(t.encode()) for t, _ in texts)
    visible = sum(shows(t, c.needle) for (t, _), c in zip(texts, CALLS, strict=True))
    reach = sum(shows(t, c.needle) or spilled for (t, spilled), c in zip(texts, CALLS, strict=True))
    n = len(CALLS)
    return (
        f"{name:<56} {total:>9,} {total / exact:>6.3f}x {total / codex:>6.2f}x "
        f"{visible:>3}/{n} {reach:>3}/{n}"
    )


def main() -> None:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="toolbound-economy-bash-") as tmp:
        workspace = economy_trace.build_workspace(Path(tmp) / "ws")
        for name, script in WIDE_SCRIPTS.items():
            (workspace / name).write_text(script)
        codex = [(codex_text(workspace, c.args["command"]), False) for c in CALLS]
        exact = asyncio.run(replay(workspace, Path(tmp) / "d-exact"))
        rows = {}
        for i, (out, out_share, err, err_share) in enumerate(CANDIDATES):
            economy = Economy(
                shell_stdout=out,
                stdout_head_share=out_share,
                shell_stderr=err,
                stderr_head_share=err_share,
            )
            limits = DEFAULT_LIMITS.replace(economy=economy)
            name = f"stdout {out.label} ({out_share:.0%} head), stderr {err.label}"
            rows[name] = asyncio.run(
                replay(workspace, Path(tmp) / f"d{i}", profile="economy", limits=limits)
            )
        exact_bytes = sum(len(t.encode()) for t, _ in exact)
        codex_bytes = sum(len(t.encode()) for t, _ in codex)
        print(f"{len(CALLS)} shell calls of bench/economy_trace.py; anchor Codex CLI 10,000 B")
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"{'policy':<56} {'bytes':>9} {'/exact':>7} {'/codex':>7} {'vis':>5} {'reach':>5}")
        print(line("exact", exact, exact_bytes, codex_bytes))
        print("(the first 12 calls are the trace's; the last 5 are long outputs)")
        print(line("Codex CLI (simulated)", codex, exact_bytes, codex_bytes))
        for name, texts in rows.items():
            print(line(name, texts, exact_bytes, codex_bytes))
        print("\nper call (bytes: exact / codex / economy candidates)")
        for i, call in enumerate(CALLS):
            sizes = [len(exact[i][0].encode()), len(codex[i][0].encode())]
            sizes += [len(texts[i][0].encode()) for texts in rows.values()]
            lost = [
                str(j)
                for j, texts in enumerate(rows.values())
                if not shows(texts[i][0], call.needle)
            ]
            print(
                f"  {call.args['command'][:44]:<44} {' '.join(f'{s:>7}' for s in sizes)}"
                f"  needle not shown by: {','.join(lost) or '-'}"
            )
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
