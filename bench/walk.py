"""Benchmark: reaching a file from its root's descriptor (CONTRACT 16) against realpath.

Anchor: what Read did before 0.3, ``os.path.realpath`` of the path, then
``stat`` and ``open`` by name, measured side by side in the same run on the
same file. Against it, the walk that replaced it (``Roots.locate`` then an
open at the folder's descriptor), with the kernel's ``openat2`` and with the
per-component walk a kernel without it falls back to.

The file sits ``--depth`` folders below the workspace (default 5). Each figure
is the median of ``--rounds`` rounds of ``--calls`` look-ups, in microseconds
per look-up; the three take turns round by round.

    python bench/walk.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from toolbound import fsroot
from toolbound.paths import Roots

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


def _realpath_open(roots: Roots, rel: str) -> None:
    real = os.path.realpath(os.path.join(roots.workspace, rel))
    os.stat(real)
    os.close(os.open(real, _FLAGS))


def _walk_open(roots: Roots, rel: str) -> None:
    with roots.locate(rel) as located:
        os.close(located.spot.open(_FLAGS))


def _per_call_us(fns: list[Callable[[], None]], calls: int, rounds: int) -> list[float]:
    """Each function's median microseconds per call, the functions taking turns round
    by round (so a load that comes and goes weighs on each alike)."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            times[i].append((time.perf_counter() - start) / calls * 1e6)
    return [statistics.median(t) for t in times]


def _without_openat2(fn: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        probe = fsroot.openat2_available
        fsroot.openat2_available = lambda: False  # type: ignore[assignment]
        try:
            fn()
        finally:
            fsroot.openat2_available = probe

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="toolbound-bench-walk-") as tmp:
        ws = Path(tmp) / "ws"
        folder = ws.joinpath(*(f"d{i}" for i in range(ns.depth)))
        folder.mkdir(parents=True)
        (folder / "f.txt").write_text("x\n")
        rel = str((folder / "f.txt").relative_to(ws))
        roots = Roots.create(ws, Path(tmp) / "scratch")
        available = fsroot.openat2_available()
        anchor, fast, slow = _per_call_us(
            [
                lambda: _realpath_open(roots, rel),
                lambda: _walk_open(roots, rel),
                _without_openat2(lambda: _walk_open(roots, rel)),
            ],
            ns.calls,
            ns.rounds,
        )
    print(f"path {rel!r}, depth {ns.depth}; median of {ns.rounds} x {ns.calls} look-ups")
    print(f"  realpath + stat + open (anchor)     {anchor:7.2f} us  1.00x")
    label = "openat2" if available else "openat2 (absent here: the walk)"
    print(f"  locate + openat, {label:<19} {fast:7.2f} us  {fast / anchor:.2f}x")
    print(f"  locate + openat, per component      {slow:7.2f} us  {slow / anchor:.2f}x")


if __name__ == "__main__":
    main()
