"""Benchmark: the web view's sessions list with each session's tokens, on 300 sessions.

The list (``SessionStore.summaries``, one query) now sums each session's
context ledger rows for its ``tokens``. Measured side by side in one run on
an SQLite data dir of 300 sessions of 8 recorded calls each (Bash and Read
through real hosts):

- the list with tokens (``summaries()``, as GET /api/sessions reads it);
- anchor: the store's own listing of the same sessions with their counts
  (``SessionStore.list()``: messages, checkpoints, tool calls per session);
- for scale: the list plus each session's ``ledger()`` read one by one, what
  the page would cost if it asked the ledger per session.

Each figure is the median of 9 rounds, taken in alternation; the ratios are
against the anchor.

Run: ``.venv/bin/python bench/web_sessions.py``.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from toolbound.host import ToolHost
from toolbound.store import SessionStore

SESSIONS = 300
CALLS = 8
ROUNDS = 9


async def fill(workspace: Path, data: Path) -> None:
    (workspace / "notes.txt").write_text("".join(f"note {i}\n" for i in range(200)))
    for s in range(SESSIONS):
        async with ToolHost(workspace, data_dir=data, session_id=f"s{s:03d}") as host:
            for c in range(CALLS):
                if c % 2:
                    await host.call("Read", {"path": "notes.txt"}, tool_call_id=f"c{c}")
                else:
                    await host.call("Bash", {"command": f"seq 1 {c * 500}"}, tool_call_id=f"c{c}")


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace, data = Path(tmp) / "ws", Path(tmp) / "data"
        workspace.mkdir()
        started = time.perf_counter()
        asyncio.run(fill(workspace, data))
        print(
            f"filled {SESSIONS} sessions x {CALLS} calls in {time.perf_counter() - started:.1f} s"
        )
        with SessionStore(data) as store:
            listed = store.summaries()
            assert len(listed) == SESSIONS
            assert all(
                s.tokens == store.session(s.id).ledger()["total"]["modelTokens"] for s in listed
            )

            def per_session() -> None:
                for s in store.summaries():
                    store.session(s.id).ledger()

            runs: dict[str, list[float]] = {"anchor": [], "summaries": [], "per_session": []}
            for _ in range(ROUNDS):
                runs["anchor"].append(timed(store.list))
                runs["summaries"].append(timed(store.summaries))
                runs["per_session"].append(timed(per_session))
        med = {k: statistics.median(v) for k, v in runs.items()}
        print(f"load average {os.getloadavg()[0]:.1f} (1 min)")
        print(f"anchor  SessionStore.list()            {med['anchor']:8.1f} ms  1.00x")
        for key, name in (
            ("summaries", "summaries() with tokens"),
            ("per_session", "summaries() + ledger() each"),
        ):
            print(f"{name:38s} {med[key]:8.1f} ms  {med[key] / med['anchor']:.2f}x")


if __name__ == "__main__":
    main()
