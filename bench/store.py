"""Benchmark the session store on both backends, against raw driver inserts.

Measured side by side in one run, on an SQLite data dir and on a PostgreSQL
database (a throwaway server started from Debian's postgresql package, as
the tests start it, with fsync on and commits not waited for: the
durability of SQLite's synchronous=NORMAL in WAL mode):

- appending 100,000 messages through ``Session.append`` vs raw inserts of the
  same rows into the same schema (``sqlite3`` / ``psycopg``), one transaction
  per row as ``append`` commits, in alternating rounds (goal: ratio <= 2x on
  SQLite; a single ``executemany`` transaction is shown as well for scale);
- ``checkpoint()`` plus ``context()`` on that 100,000-message transcript
  (goal: <= 200 ms);
- 8 processes each recording 1,000 tool calls into one store at once
  (``ToolHost.call``, which returns once its result is committed): calls
  per second and rows lost (goal: 0), against 8 processes inserting the
  same rows raw, one transaction per call (goal on PostgreSQL: at least
  0.8x raw's rate); the two alternate for 3 rounds and each shows its
  median, as other load on the machine comes and goes;
- on SQLite, the host recording tool calls: the event loop's worst stall
  while a tool streams 20,000 chunks, and the cost per call, with and
  without a store.

Run: ``.venv/bin/python bench/store.py`` (``--quick`` for a tenth of the sizes,
``--concurrent-only`` for the 8 processes alone, ``--procs=N`` for N of them).
With the rates it prints the CPU each call took while they ran: the recording
processes' own, and on PostgreSQL the database's processes'.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psycopg

from toolbound import SessionStore, ToolHost
from toolbound.results import GlobResult, WireModel
from toolbound.tools import ToolContext

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import pgserver

QUICK = "--quick" in sys.argv
CONCURRENT_ONLY = "--concurrent-only" in sys.argv
N_MESSAGES = 10_000 if QUICK else 100_000
N_CHUNKS = 20_000
N_CALLS = 300
N_PROCS = next((int(a.split("=", 1)[1]) for a in sys.argv if a.startswith("--procs=")), 8)
CALLS_PER_PROC = 100 if QUICK else 1_000
ROUNDS = 10
CONCURRENT_ROUNDS = 3


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


class Raw:
    """The anchor: plain driver inserts into a store's own schema, one commit per row."""

    def __init__(self, location: str) -> None:
        self.location = location
        if location.startswith("postgresql://"):
            self.pg: psycopg.Connection[Any] | None = psycopg.connect(location, autocommit=True)
            self.lite: sqlite3.Connection | None = None
        else:
            self.pg = None
            self.lite = sqlite3.connect(
                Path(location) / "toolbound.db", isolation_level=None, timeout=30
            )
            self.lite.execute("PRAGMA journal_mode = WAL")
            self.lite.execute("PRAGMA synchronous = NORMAL")

    def transaction(self, statements: list[tuple[str, Sequence[Any]]]) -> None:
        if self.pg is not None:
            with self.pg.transaction():
                for sql, params in statements:
                    self.pg.execute(sql.replace("?", "%s"), params, prepare=True)
            return
        assert self.lite is not None
        self.lite.execute("BEGIN IMMEDIATE")
        for sql, params in statements:
            self.lite.execute(sql, params)
        self.lite.execute("COMMIT")

    def transaction_returning(
        self, first: str, first_params: Sequence[Any], second: str, second_params: Sequence[Any]
    ) -> tuple[Any, ...]:
        """Insert a call and its result event in one transaction (the raw recorder)."""
        if self.pg is not None:
            with self.pg.transaction():
                row = self.pg.execute(
                    first.replace("?", "%s"), first_params, prepare=True
                ).fetchone()
                assert row is not None
                self.pg.execute(second.replace("?", "%s"), (row[0], *second_params), prepare=True)
            return tuple(row)
        assert self.lite is not None
        self.lite.execute("BEGIN IMMEDIATE")
        row = self.lite.execute(first, first_params).fetchone()
        self.lite.execute(second, (row[0], *second_params))
        self.lite.execute("COMMIT")
        return tuple(row)

    def executemany(self, sql: str, rows: list[Sequence[Any]]) -> None:
        if self.pg is not None:
            with self.pg.transaction(), self.pg.cursor() as cur:
                cur.executemany(sql.replace("?", "%s"), rows)
            return
        assert self.lite is not None
        self.lite.execute("BEGIN IMMEDIATE")
        self.lite.executemany(sql, rows)
        self.lite.execute("COMMIT")

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        if self.pg is not None:
            return self.pg.execute(sql.replace("?", "%s"), params).fetchall()
        assert self.lite is not None
        return self.lite.execute(sql, params).fetchall()

    def close(self) -> None:
        if self.pg is not None:
            self.pg.close()
        if self.lite is not None:
            self.lite.close()


INSERT_MESSAGE = (
    "INSERT INTO messages (session_id, seq, kind, body, tokens, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)


def bench_append(
    new_location: Callable[[], str], messages: list[dict[str, Any]]
) -> tuple[str, dict[str, float]]:
    """Alternate rounds of API appends and raw inserts of the same rows, so load drift
    on a shared machine hits both sides alike."""

    def raw_store() -> Raw:
        location = new_location()
        SessionStore(location).close()  # migrated: the same schema and triggers
        raw = Raw(location)
        raw.transaction([("INSERT INTO sessions (id, created_at) VALUES ('bench', 0)", ())])
        return raw

    api_s = raw_s = 0.0
    raw = raw_store()
    per_round = len(messages) // ROUNDS
    api_location = new_location()
    with SessionStore(api_location) as store:
        session = store.session("bench")
        reader = Raw(api_location)
        for r in range(ROUNDS):
            batch = messages[r * per_round : (r + 1) * per_round]
            t0 = time.perf_counter()
            for m in batch:
                session.append(m)
            api_s += time.perf_counter() - t0
            rows = reader.rows(
                "SELECT session_id, seq, kind, body, tokens, created_at FROM messages"
                " WHERE seq >= ? ORDER BY seq",
                (r * per_round,),
            )
            t0 = time.perf_counter()
            for row in rows:
                raw.transaction([(INSERT_MESSAGE, row)])
            raw_s += time.perf_counter() - t0
        all_rows = reader.rows(
            "SELECT session_id, seq, kind, body, tokens, created_at FROM messages ORDER BY seq"
        )
        reader.close()
    raw.close()

    raw = raw_store()
    t0 = time.perf_counter()
    raw.executemany(INSERT_MESSAGE, all_rows)
    batch_s = time.perf_counter() - t0
    raw.close()
    return api_location, {"api_s": api_s, "raw_s": raw_s, "batch_s": batch_s}


def bench_checkpoint(location: str) -> dict[str, float]:
    with SessionStore(location) as store:
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


RECORDER = r"""
import asyncio, json, sys, time
mode, location, workspace, data_dir, name, count = sys.argv[1:7]
count = int(count)

async def api():
    from toolbound import ToolHost
    async with ToolHost(workspace, data_dir=data_dir, session_id=name, store=location) as host:
        print("ready", flush=True)
        sys.stdin.readline()
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(count):
            await host.call("Glob", {"limit": 0}, tool_call_id=f"{name}-{i}")
        done(time.perf_counter() - t0, time.process_time() - c0)

def raw():
    sys.path.insert(0, sys.argv[7])
    from store import Raw
    from toolbound import SessionStore
    with SessionStore(location, scratch_dir=data_dir) as store:
        store.session(name)
    db = Raw(location)
    result = json.dumps({"error": {"code": "TOOL_INVALID_ARGUMENT", "message": "x" * 120}})
    print("ready", flush=True)
    sys.stdin.readline()
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(count):
        now = time.time()
        (call_id,) = db.transaction_returning(
            "INSERT INTO tool_calls (session_id, tool_call_id, tool, args, started_at)"
            " VALUES (?, ?, ?, ?, ?) RETURNING id",
            (name, f"{name}-{i}", "Glob", '{"limit": 0}', now),
            "INSERT INTO tool_events (call_id, seq, type, stream, data, result, created_at)"
            " VALUES (?, 0, 'result', NULL, NULL, ?, ?)",
            (result, now),
        )
    done(time.perf_counter() - t0, time.process_time() - c0)
    db.close()

def done(elapsed, cpu):
    # The time and this process's CPU; the connections stay open until told, so the
    # database's processes can be measured first.
    print(elapsed, cpu, flush=True)
    sys.stdin.readline()

asyncio.run(api()) if mode == "api" else raw()
"""


def database_cpu_s() -> float:
    """The CPU time of every PostgreSQL process now (its backends live while
    their clients are connected)."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        if name.startswith(("postgres", "postmaster")):
            fields = stat[stat.rindex(")") + 2 :].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def bench_concurrent(location: str, base: Path, mode: str) -> dict[str, float]:
    """N_PROCS processes recording CALLS_PER_PROC calls each at once: rate and rows lost."""
    procs = []
    for i in range(N_PROCS):
        name = f"{mode}-p{i}"
        (base / name).mkdir(parents=True)
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    RECORDER,
                    mode,
                    location,
                    str(base / name),
                    str(base / name / "data"),
                    name,
                    str(CALLS_PER_PROC),
                    str(Path(__file__).resolve().parent),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    try:
        for p in procs:
            assert p.stdout is not None
            line = p.stdout.readline()
            if line != "ready\n":
                raise RuntimeError(f"a recorder did not start: {line!r}")
        db0 = database_cpu_s()
        t0 = time.perf_counter()
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        outs = [p.stdout.readline() for p in procs if p.stdout is not None]
        if not all(outs):
            raise RuntimeError("a recorder failed before its figures")
        wall_s = time.perf_counter() - t0
        db_s = database_cpu_s() - db0
        for p in procs:
            p.communicate("bye\n", timeout=600)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    if any(p.returncode != 0 for p in procs):
        raise RuntimeError(f"a recorder failed: {[p.returncode for p in procs]}")
    raw = Raw(location)
    prefix = f"{mode}-p%"
    calls = raw.rows("SELECT count(*) FROM tool_calls WHERE session_id LIKE ?", (prefix,))[0][0]
    events = raw.rows(
        "SELECT count(*) FROM tool_events e JOIN tool_calls c ON c.id = e.call_id"
        " WHERE c.session_id LIKE ? AND e.type = 'result'",
        (prefix,),
    )[0][0]
    raw.close()
    expected = N_PROCS * CALLS_PER_PROC
    return {
        "calls_per_s": expected / wall_s,
        "lost": (expected - calls) + (expected - events),
        "slowest_s": max(float(out.split()[0]) for out in outs),
        # CPU per call while the calls ran: the recording processes', the database's.
        "client_ms": sum(float(out.split()[1]) for out in outs) / expected * 1e3,
        "db_ms": db_s / expected * 1e3,
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


def bench_concurrent_rounds(
    name: str, new_location: Callable[[], str], base: Path
) -> tuple[dict[str, float], dict[str, float]]:
    """ToolHost and raw inserts alternating, each round into a fresh store: the
    median round's rate of each, and every round's lost rows."""
    rounds: dict[str, list[dict[str, float]]] = {"api": [], "raw": []}
    for r in range(CONCURRENT_ROUNDS):
        shared = new_location()
        SessionStore(shared, scratch_dir=base / "scratch").close()
        for mode in ("api", "raw"):
            rounds[mode].append(bench_concurrent(shared, base / f"{name}-{mode}{r}", mode))
    medians = []
    for mode in ("api", "raw"):
        runs = sorted(rounds[mode], key=lambda run: run["calls_per_s"])
        median = dict(runs[len(runs) // 2])
        median["lost"] = sum(run["lost"] for run in runs)
        medians.append(median)
    return medians[0], medians[1]


def concurrent_rows(name: str, api: dict[str, float], raw: dict[str, float]) -> list[Row]:
    k = N_PROCS * CALLS_PER_PROC * CONCURRENT_ROUNDS
    ratio = api["calls_per_s"] / raw["calls_per_s"]
    goal = ""
    if name == "postgresql":
        goal = "PASS" if ratio >= 0.8 else "MISS"
        goal += " (goal >= 0.8x)"
    return [
        (
            f"{name}: {N_PROCS} procs x {CALLS_PER_PROC} calls, ToolHost",
            f"{api['calls_per_s']:.0f} calls/s",
            f"{api['lost']} rows lost of {2 * k}",
        ),
        (
            f"{name}: {N_PROCS} procs x {CALLS_PER_PROC} calls, raw inserts",
            f"{raw['calls_per_s']:.0f} calls/s",
            f"{raw['lost']} rows lost of {2 * k}",
        ),
        (f"{name}: ratio ToolHost / raw rate", f"{ratio:.2f}x", goal),
        *(
            (
                f"{name}: CPU per call, {who}",
                f"{run['client_ms'] + run['db_ms']:.3f} ms",
                f"processes {run['client_ms']:.3f} + database {run['db_ms']:.3f}"
                if name == "postgresql"
                else f"processes {run['client_ms']:.3f}",
            )
            for who, run in (("ToolHost", api), ("raw inserts", raw))
        ),
    ]


Row = tuple[str, str, str]


def bench_backend(
    name: str, new_location: Callable[[], str], base: Path, messages: list[dict[str, Any]]
) -> list[tuple[str, str, str]]:
    api, raw = bench_concurrent_rounds(name, new_location, base)
    if CONCURRENT_ONLY:
        return concurrent_rows(name, api, raw)
    location, a = bench_append(new_location, messages)
    c = bench_checkpoint(location)
    ratio = a["api_s"] / a["raw_s"]
    cp_ms = (c["checkpoint_s"] + c["context_s"]) * 1000
    n = len(messages)
    return [
        (
            f"{name}: append {n}: Session.append",
            f"{a['api_s']:.2f} s",
            f"{a['api_s'] / n * 1e6:.1f} us/msg",
        ),
        (
            f"{name}: append {n}: raw, 1 txn/row",
            f"{a['raw_s']:.2f} s",
            f"{a['raw_s'] / n * 1e6:.1f} us/msg",
        ),
        (f"{name}: append {n}: raw, 1 txn", f"{a['batch_s']:.2f} s", "(scale only)"),
        (f"{name}: ratio append / raw", f"{ratio:.2f}x", "goal <= 2x on sqlite"),
        (
            f"{name}: checkpoint() on {n}",
            f"{c['checkpoint_s'] * 1000:.1f} ms",
            f"{c['retained']} retained, {c['retained_tokens']} tokens",
        ),
        (
            f"{name}: context() after it",
            f"{c['context_s'] * 1000:.1f} ms",
            f"{c['context_messages']} messages",
        ),
        (
            f"{name}: checkpoint + context",
            f"{cp_ms:.1f} ms",
            "PASS" if cp_ms <= 200 else "MISS (goal <= 200 ms)",
        ),
        (f"{name}: context(provider='openai')", f"{c['openai_s'] * 1000:.1f} ms", ""),
        *concurrent_rows(name, api, raw),
    ]


def main() -> None:
    messages = [] if CONCURRENT_ONLY else transcript(N_MESSAGES)
    size = sum(len(json.dumps(m)) for m in messages)
    bin_dir = pgserver.pg_bin_dir()
    if bin_dir is None:
        sys.exit(pgserver.INSTALL_HINT)
    server = pgserver.PgServer(bin_dir, durable=True).start()
    rows: list[tuple[str, str, str]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp)
            counter = iter(range(1_000_000))
            rows += bench_backend(
                "sqlite", lambda: str(base / f"db{next(counter)}"), base, messages
            )
            rows += bench_backend("postgresql", server.new_url, base, messages)
            h = None if CONCURRENT_ONLY else bench_host(base)
    finally:
        server.stop()
    if h is not None:
        rows += host_rows(h)
    print(
        f"transcript: {N_MESSAGES} messages, {size / 1e6:.1f} MB of JSON;"
        f" load average {os.getloadavg()[0]:.2f}"
    )
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'value':>16}  note")
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>16}  {note}")


def host_rows(h: dict[str, dict[str, float]]) -> list[Row]:
    return [
        (
            f"sqlite: stream {N_CHUNKS} chunks, recorded",
            f"{h['recorded']['stream_s'] * 1000:.0f} ms",
            f"worst loop stall {h['recorded']['stall_s'] * 1000:.1f} ms",
        ),
        (
            f"sqlite: stream {N_CHUNKS} chunks, no store",
            f"{h['unrecorded']['stream_s'] * 1000:.0f} ms",
            f"worst loop stall {h['unrecorded']['stall_s'] * 1000:.1f} ms",
        ),
        ("sqlite: host.call, recorded", f"{h['recorded']['call_s'] * 1000:.2f} ms/call", ""),
        ("sqlite: host.call, no store", f"{h['unrecorded']['call_s'] * 1000:.2f} ms/call", ""),
    ]


if __name__ == "__main__":
    main()
