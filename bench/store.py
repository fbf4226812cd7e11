"""Benchmark the session store against raw sqlite3 (issue 6).

Anchors, measured side by side in one run:
- appending 100,000 messages through ``Session.append`` vs raw ``sqlite3``
  inserts of the same rows into the same schema with the same pragmas, one
  transaction per row as ``append`` commits (goal: ratio <= 2x); a single
  ``executemany`` transaction is shown as well for scale;
- ``checkpoint()`` plus ``context()`` on that 100,000-message transcript
  (goal: <= 200 ms);
- the host recording tool calls: the event loop's worst stall while a tool
  streams 20,000 chunks, and the cost per call, with and without a store.

Run: ``.venv/bin/python bench/store.py``
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import tempfile
import threading
import time
import types
from pathlib import Path
from typing import Any

from toolbound import SessionStore, ToolHost
from toolbound.results import GlobResult, WireModel
from toolbound.store.db import connect
from toolbound.tools import ToolContext

N_MESSAGES = 100_000
N_CHUNKS = 20_000
N_CALLS = 300


def transcript(n: int) -> list[dict[str, Any]]:
    """A realistic mix: user text, assistant text, and a tool call + result every 10."""
    out: list[dict[str, Any]] = []
    i = 0
    while len(out) < n:
        k = len(out) % 10
        if k == 8 and len(out) + 2 <= n:
            out.append(
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": f"t{i}",
                            "name": "Read",
                            "input": {"path": "a.py"},
                        }
                    ],
                }
            )
            out.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"t{i}", "content": "x" * 400}
                    ],
                }
            )
        elif k % 2 == 0:
            out.append({"role": "user", "content": f"question {i}: " + "please look at this " * 8})
        else:
            out.append(
                {"role": "assistant", "content": f"answer {i}: " + "here is what I found " * 8}
            )
        i += 1
    return out[:n]


ROUNDS = 10


def bench_append(base: Path, messages: list[dict[str, Any]]) -> dict[str, float]:
    """Alternate rounds of API appends and raw inserts of the same rows, so load drift
    on a shared machine hits both sides alike."""
    insert = (
        "INSERT INTO messages (session_id, seq, kind, body, tokens, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)"
    )

    def raw_db(name: str) -> sqlite3.Connection:
        (base / name).mkdir()
        raw = connect(base / name / "toolbound.db", busy_timeout_s=5.0)
        raw.execute("INSERT INTO sessions (id, created_at) VALUES ('bench', 0)")
        return raw

    api_s = raw_s = 0.0
    raw = raw_db("raw")
    per_round = len(messages) // ROUNDS
    with SessionStore(base / "api") as store:
        session = store.session("bench")
        reader = sqlite3.connect(store.path)
        for r in range(ROUNDS):
            batch = messages[r * per_round : (r + 1) * per_round]
            t0 = time.perf_counter()
            for m in batch:
                session.append(m)
            api_s += time.perf_counter() - t0
            rows = reader.execute(
                "SELECT session_id, seq, kind, body, tokens, created_at FROM messages"
                " WHERE seq >= ? ORDER BY seq",
                (r * per_round,),
            ).fetchall()
            t0 = time.perf_counter()
            for row in rows:
                raw.execute("BEGIN IMMEDIATE")
                raw.execute(insert, row)
                raw.execute("COMMIT")
            raw_s += time.perf_counter() - t0
        all_rows = reader.execute(
            "SELECT session_id, seq, kind, body, tokens, created_at FROM messages ORDER BY seq"
        ).fetchall()
        reader.close()
    raw.close()

    raw = raw_db("raw-batch")
    t0 = time.perf_counter()
    raw.execute("BEGIN IMMEDIATE")
    raw.executemany(insert, all_rows)
    raw.execute("COMMIT")
    batch_s = time.perf_counter() - t0
    raw.close()
    return {"api_s": api_s, "raw_s": raw_s, "batch_s": batch_s}


def bench_checkpoint(base: Path) -> dict[str, float]:
    with SessionStore(base / "api") as store:
        session = store.session("bench")
        t0 = time.perf_counter()
        record = session.checkpoint(summary="Everything so far, summarised.")
        t1 = time.perf_counter()
        context = session.context()
        t2 = time.perf_counter()
        session.context(provider="openai")
        t3 = time.perf_counter()
    return {
        "checkpoint_s": t1 - t0,
        "context_s": t2 - t1,
        "openai_s": t3 - t2,
        "retained": len(record.retained),
        "retained_tokens": record.retained_tokens,
        "context_messages": len(context),
    }


def _chunky_tool() -> types.ModuleType:
    async def run(args: Any, ctx: ToolContext) -> WireModel:
        def worker() -> None:
            for i in range(N_CHUNKS):
                ctx.emit("stdout", f"chunk {i} " + "." * 60 + "\n")

        thread = threading.Thread(target=worker)
        thread.start()
        await asyncio.to_thread(thread.join)
        return GlobResult(matches=[], count=0, truncated=False)

    module = types.ModuleType("toolbound.tools.bash")
    module.run = run  # type: ignore[attr-defined]
    return module


async def _host_run(workspace: Path, data_dir: Path) -> dict[str, float]:
    stall = 0.0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal stall
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            stall = max(stall, now - last - 0.001)
            last = now

    async with ToolHost(workspace=workspace, data_dir=data_dir, session_id="bench") as host:
        tick = asyncio.create_task(ticker())
        t0 = time.perf_counter()
        n = 0
        async for _event in host.stream("Bash", {"command": "x"}):
            n += 1
        stream_s = time.perf_counter() - t0
        stop.set()
        await tick
        t0 = time.perf_counter()
        for _ in range(N_CALLS):
            await host.call("Glob", {"limit": 0})
        call_s = (time.perf_counter() - t0) / N_CALLS
    assert n == N_CHUNKS + 1
    return {"stall_s": stall, "stream_s": stream_s, "call_s": call_s}


def bench_host(base: Path) -> dict[str, dict[str, float]]:
    sys.modules["toolbound.tools.bash"] = _chunky_tool()
    (base / "blocker").write_text("a file where the data dir should be: nothing is recorded")
    return {
        "recorded": asyncio.run(_host_run(base, base / "host-data")),
        "unrecorded": asyncio.run(_host_run(base, base / "blocker" / "data")),
    }


def main() -> None:
    messages = transcript(N_MESSAGES)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        a = bench_append(base, messages)
        c = bench_checkpoint(base)
        h = bench_host(base)
        size = sum(len(json.dumps(m)) for m in messages)
    ratio = a["api_s"] / a["raw_s"]
    cp_ms = (c["checkpoint_s"] + c["context_s"]) * 1000
    rows = [
        (
            "append 100k: Session.append",
            f"{a['api_s']:.2f} s",
            f"{a['api_s'] / N_MESSAGES * 1e6:.1f} us/msg",
        ),
        (
            "append 100k: raw sqlite3, 1 txn/row",
            f"{a['raw_s']:.2f} s",
            f"{a['raw_s'] / N_MESSAGES * 1e6:.1f} us/msg",
        ),
        ("append 100k: raw sqlite3, 1 txn", f"{a['batch_s']:.2f} s", "(scale only)"),
        ("ratio API / raw (goal <= 2x)", f"{ratio:.2f}x", "PASS" if ratio <= 2 else "MISS"),
        (
            "checkpoint() on 100k",
            f"{c['checkpoint_s'] * 1000:.1f} ms",
            f"{c['retained']} retained, {c['retained_tokens']} tokens",
        ),
        (
            "context() after it",
            f"{c['context_s'] * 1000:.1f} ms",
            f"{c['context_messages']} messages",
        ),
        (
            "checkpoint + context (goal <= 200 ms)",
            f"{cp_ms:.1f} ms",
            "PASS" if cp_ms <= 200 else "MISS",
        ),
        ("context(provider='openai')", f"{c['openai_s'] * 1000:.1f} ms", ""),
        (
            f"stream {N_CHUNKS} chunks, recorded",
            f"{h['recorded']['stream_s'] * 1000:.0f} ms",
            f"worst loop stall {h['recorded']['stall_s'] * 1000:.1f} ms",
        ),
        (
            f"stream {N_CHUNKS} chunks, no store",
            f"{h['unrecorded']['stream_s'] * 1000:.0f} ms",
            f"worst loop stall {h['unrecorded']['stall_s'] * 1000:.1f} ms",
        ),
        ("host.call, recorded", f"{h['recorded']['call_s'] * 1000:.2f} ms/call", ""),
        ("host.call, no store", f"{h['unrecorded']['call_s'] * 1000:.2f} ms/call", ""),
    ]
    print(f"transcript: {N_MESSAGES} messages, {size / 1e6:.1f} MB of JSON")
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'value':>14}  note")
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>14}  {note}")


if __name__ == "__main__":
    main()
