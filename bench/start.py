"""Benchmark: how soon a server spawned over stdio answers ``initialize``; how soon
``toolbound call`` is done.

A harness spawns its MCP servers and may start its first model turn without a
server that has not answered yet (Codex CLI's first request went out 1.4 s
after spawning a server that was not ``required``), so start-up is part of
what the model gets. Side by side in one run, interleaved in rounds so machine
noise hits both alike:

1. ``toolbound serve --stdio`` against the anchor, the reference MCP filesystem
   server in node (``@modelcontextprotocol/server-filesystem``, pinned by
   ``bench/start/package-lock.json``, installed with ``npm ci`` into
   ``bench/start/node_modules`` on first use and reused while the lock file is
   unchanged): the time from spawning the process to reading its
   ``initialize`` response, median over the rounds, and the ratio (the goal:
   at most 1.5x);
2. ``toolbound call Read`` of a small file against the anchor ``python -c
   pass`` (the interpreter's own start): the whole process, median, ratio.
   With ``--before SRC`` (another checkout's ``src`` folder, e.g. a worktree
   of the previous commit), the same call from that source tree too, in the
   same rounds, so a change's before and after are timed side by side.

Usage: ``python bench/start.py [--rounds N] [--before SRC]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent / "start"
STAMP = HERE / "node_modules" / ".toolbound-lock-sha256"
REFERENCE = HERE / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist"
WAIT_S = 30.0

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench-start", "version": "0"},
    },
}


def installed_reference() -> Path:
    """The reference server's entry point, ``npm ci`` first when the lock file changed."""
    want = hashlib.sha256((HERE / "package-lock.json").read_bytes()).hexdigest()
    if not STAMP.is_file() or STAMP.read_text() != want:
        if shutil.which("npm") is None:
            sys.exit("bench/start.py needs node and npm: apt-get install -y nodejs npm")
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=HERE,
            check=True,
            timeout=600,
        )
        STAMP.write_text(want)
    return REFERENCE / "index.js"


def time_to_initialize(argv: list[str], cwd: Path) -> float:
    """Seconds from spawning ``argv`` to reading its answer to ``initialize`` on stdout."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        proc.stdin.flush()
        while True:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{argv[0]} closed stdout before answering initialize")
            message = json.loads(line)
            if message.get("id") == 1:
                if "result" not in message:
                    raise RuntimeError(f"initialize failed: {message}")
                return time.perf_counter() - started
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def time_to_exit(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, capture_output=True, timeout=WAIT_S)
    return time.perf_counter() - started


def rounds(n: int, measures: tuple[Callable[[], float], ...]) -> tuple[float, ...]:
    """Median seconds of each measure, run in turn ``n`` times (after one warm-up)."""
    for measure in measures:
        measure()
    times: list[list[float]] = [[] for _ in measures]
    for _ in range(n):
        for taken, measure in zip(times, measures, strict=True):
            taken.append(measure())
    return tuple(statistics.median(taken) for taken in times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--before", type=Path, help="another checkout's src, timed beside")
    ns = parser.parse_args()
    reference = installed_reference()
    node = shutil.which("node") or "node"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "a.txt").write_text("hello\n")
        data = root / "data"
        env_python = sys.executable
        serve = [env_python, "-m", "toolbound", "serve", "--stdio", "--workspace", str(root)]
        serve += ["--data-dir", str(data)]
        ours, anchor = rounds(
            ns.rounds,
            (
                lambda: time_to_initialize(serve, root),
                lambda: time_to_initialize([node, str(reference), str(root)], root),
            ),
        )
        print(
            f"initialize over stdio, median of {ns.rounds} rounds (machine: {os.cpu_count()} cpus)"
        )
        print(f"  toolbound serve --stdio           {ours * 1000:7.0f} ms")
        print(f"  server-filesystem (node, anchor)  {anchor * 1000:7.0f} ms")
        print(f"  ratio                             {ours / anchor:7.2f}x  (goal: <= 1.5x)")
        call = [env_python, "-m", "toolbound", "call", "Read", '{"path": "a.txt"}']
        call += ["--data-dir", str(data)]
        measures: tuple[Callable[[], float], ...] = (
            lambda: time_to_exit(call, root),
            lambda: time_to_exit([env_python, "-c", "pass"], root),
        )
        if ns.before is not None:
            before = {**os.environ, "PYTHONPATH": str(ns.before.resolve())}
            measures += (lambda: time_to_exit(call, root, env=before),)
        ours, anchor, *earlier = rounds(ns.rounds, measures)
        print(f"toolbound call Read, median of {ns.rounds} rounds")
        print(f"  toolbound call Read               {ours * 1000:7.0f} ms")
        print(f"  python -c pass (anchor)           {anchor * 1000:7.0f} ms")
        print(f"  ratio                             {ours / anchor:7.2f}x")
        for then in earlier:
            print(f"  the same call from --before       {then * 1000:7.0f} ms")
            print(f"  its ratio                         {then / anchor:7.2f}x")


if __name__ == "__main__":
    main()
