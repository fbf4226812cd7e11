"""Benchmark: an economy call's cost as the session's stored transcript grows.

Until the caller reports its context (``host.context_used``), an economy host
that records into a store estimates the context from the session's
transcript before each call, to shrink the budgets as it fills. The gauge
keeps the tally, so each estimate reads only the messages appended since the
last one: the call should cost the same however long the transcript is.

Anchor: the same small Read under the exact profile (no estimate), on a host
over the same store, measured side by side in one process. For transcripts
of 10, 300 and 1000 exchanges (a user message of about 200 bytes and an
assistant reply of 3000: 300 exchanges estimate to about 240,000 tokens), a
message pair is appended between calls, as a running agent does. Prints the
median per-call milliseconds, the ratio to the exact call, and the growth of
that ratio from 10 exchanges; goal: flat, the growth within 1.3x.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from toolbound import SessionStore, ToolHost

CALLS = 40
GOAL = 1.3


def exchange(i: int) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": f"look at file {i} " + "y" * 200},
        {"role": "assistant", "content": "x" * 3000},
    ]


async def per_call_ms(workspace: Path, store: str, session_id: str, profile: str) -> float:
    """Median ms of a small Read, a message pair appended before each call."""
    times = []
    async with ToolHost(
        workspace, store=store, session_id=session_id, profile=profile, context_window=10**8
    ) as host:
        with SessionStore(store, scratch_dir=workspace / "scratch") as writer:
            session = writer.session(session_id)
            await host.call("Read", {"path": "f.txt", "limit": 5})
            for i in range(CALLS):
                for message in exchange(10**6 + i):
                    session.append(message)
                started = time.perf_counter()
                await host.call("Read", {"path": "f.txt", "limit": 5, "offset": i})
                times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"economy call vs exact call as the stored transcript grows; load average {load}")
    print(f"{'exchanges':>10} {'economy ms':>11} {'exact ms':>9} {'ratio':>7} {'growth':>7}")
    first: float | None = None
    with tempfile.TemporaryDirectory(prefix="toolbound-bench-estimate-") as tmp:
        workspace = Path(tmp)
        (workspace / "f.txt").write_text("".join(f"line {i}\n" for i in range(1000)))
        store = str(workspace / "data")
        for n in (10, 300, 1000):
            with SessionStore(store, scratch_dir=workspace / "scratch") as writer:
                for profile in ("economy", "exact"):
                    session = writer.session(f"{profile}-{n}")
                    for i in range(n):
                        for message in exchange(i):
                            session.append(message)
            economy, exact = [], []
            for _ in range(3):  # alternate, so the machine's load hits both alike
                for profile, times in (("economy", economy), ("exact", exact)):
                    run = per_call_ms(workspace, store, f"{profile}-{n}", profile)
                    times.append(asyncio.run(run))
            e, x = statistics.median(economy), statistics.median(exact)
            first = first or e / x
            growth = e / x / first
            verdict = "ok" if growth <= GOAL else "MISSED"
            print(f"{n:>10} {e:>11.2f} {x:>9.2f} {e / x:>6.2f}x {growth:>6.2f}x {verdict}")


if __name__ == "__main__":
    main()
