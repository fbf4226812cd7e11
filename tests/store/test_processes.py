"""Several processes on one store: nothing is lost, and a kill -9 leaves it consistent."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from toolbound import SessionStore
from toolbound.store import is_url

APPENDER = r"""
import sys
from toolbound import SessionStore
from toolbound.store import is_url
location, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
with SessionStore(location) as store:
    session = store.session("shared")
    print("ready", flush=True)
    sys.stdin.readline()  # start together with the other appender
    for i in range(count):
        seq = session.append({"role": "user", "content": f"{name} {i}"})
        print(seq, flush=True)
"""

PER_PROCESS = 400


def test_two_processes_appending_to_one_session_lose_nothing(location: str) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", APPENDER, location, name, str(PER_PROCESS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("left", "right")
    ]
    try:
        for p in procs:
            assert p.stdout is not None
            if p.stdout.readline() != "ready\n":
                p.kill()
                _, err = p.communicate(timeout=30)
                raise AssertionError(f"an appender failed to open the store: {err}")
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        outputs = [p.communicate(timeout=60) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate(timeout=30)
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outputs]
    with SessionStore(location) as store:
        texts = [m["content"] for m in store.session("shared").transcript()]
    expected = {f"{name} {i}" for name in ("left", "right") for i in range(PER_PROCESS)}
    assert sorted(texts) == sorted(expected)
    # Each process saw its own appends land in order, at distinct positions.
    seqs = [[int(line) for line in out.split()] for out, _ in outputs]
    assert all(s == sorted(s) for s in seqs)
    assert sorted(seqs[0] + seqs[1]) == list(range(2 * PER_PROCESS))
    for name, mine in zip(("left", "right"), seqs, strict=True):
        assert [texts[s] for s in mine] == [f"{name} {i}" for i in range(PER_PROCESS)]


def test_kill_9_during_appends_leaves_a_consistent_database_with_every_commit(
    location: str,
) -> None:
    committed: list[int] = []
    with subprocess.Popen(
        [sys.executable, "-c", APPENDER, location, "victim", "1000000"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdin is not None
        assert proc.stdout.readline() == "ready\n"
        proc.stdin.write("go\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 30
        while len(committed) < 300 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            committed.append(int(line))
        # Killed in the middle of its stream of appends, not between them.
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    assert committed == list(range(300))

    if not is_url(location):
        conn = sqlite3.connect(Path(location) / "toolbound.db")
        try:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        finally:
            conn.close()
    with SessionStore(location) as store:
        session = store.session("shared")
        texts = [m["content"] for m in session.transcript()]
        # Every acknowledged append survived, in order, and nothing half-written follows.
        assert texts[:300] == [f"victim {i}" for i in range(300)]
        assert texts == [f"victim {i}" for i in range(len(texts))]
        assert session.append({"role": "user", "content": "after"}) == len(texts)
