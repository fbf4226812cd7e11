"""Grep and Glob against ripgrep itself, side by side in one run (issue 4).

Anchors, each measured in the same run on the same warm tree:
    Grep (content, headLimit 200)  vs  raw `rg PATTERN TREE`        goal <= 1.3x
    Grep (content, headLimit 200)  vs  `rg --sortr modified ...`    goal: faster
    Glob `**/*.py` (limit 100)     vs  `rg --files -g '*.py' TREE`   goal <= 1.3x
        (and, for context, vs `rg --files --sortr modified`: newest first needs a
        stat per file, which plain `rg --files` never does)
    Grep over a ~2 GB tree whose every line matches: peak RSS       goal <= 100 MB

Trees: the Python standard library, this venv's site-packages, and a generated
tree of 100,000 files holding a .gitignore'd node_modules of 50,000 more
(``--quick`` shrinks it and the 2 GB tree). The raw rg runs read rg's whole
output through a pipe, as a harness calling rg would; times are the median of
``--repeat`` runs after one warm-up.

Also printed, to justify the engine's output format: the cost of reading rg's
plain ``--null --line-number`` output versus its ``--json`` output in Python.

    .venv/bin/python bench/search.py [--quick] [--files N] [--rss-mb MB] [--glob-only]

``--glob-only`` measures only Glob (``**/*.py`` and ``**/*``) against
``rg --files -g PATTERN`` on the three trees, with the cost of the stats alone
(one per listed file, which newest-first needs and the anchor never does). That anchor
does less than an exact listing: rg's ``-g`` override settles each file before
its ignore rules are read (which is also why it lifts them), so the ignore
check Glob must keep is part of the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from toolbound import ToolHost
from toolbound.search.rg import rg_binary
from toolbound.search.select import FileSelection

RG = str(rg_binary())
T0 = 1_700_000_000
WORDS = ["alpha", "beta", "gamma", "delta", "import", "return", "value", "config", "handler"]


def median_time(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up: page cache, imports
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


async def interleaved(
    runs: dict[str, Callable[[], Awaitable[object]]], repeat: int
) -> dict[str, float]:
    """Median seconds of each run, the runs taking turns so load drifts hit all alike."""
    for fn in runs.values():
        await fn()  # warm-up: page cache, imports
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, fn in runs.items():
            t = time.perf_counter()
            await fn()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def rg_run(args: list[str], cwd: Path) -> int:
    """Run rg, read its whole output through a pipe, return its size."""
    out = subprocess.run(
        [RG, *args], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, check=False
    )
    return len(out.stdout)


def generate_tree(root: Path, n_files: int, n_ignored: int, seed: int = 4) -> None:
    """``n_files`` small text files in nested folders plus an ignored node_modules."""
    rng = random.Random(seed)
    (root / ".git").mkdir(parents=True)  # a repo, so raw rg honours .gitignore too
    (root / ".gitignore").write_text("node_modules/\n")
    exts = [".py", ".ts", ".md", ".txt", ".js"]

    def write_many(base: Path, count: int) -> None:
        for i in range(count):
            d = base / f"d{i % 50:02d}" / f"e{(i // 50) % 40:02d}"
            if i < 2000:
                d.mkdir(parents=True, exist_ok=True)
            lines = [
                " ".join(rng.choice(WORDS) for _ in range(8)) for _ in range(rng.randint(5, 40))
            ]
            path = d / f"f{i:06d}{exts[i % len(exts)]}"
            path.write_text("\n".join(lines) + "\n")
            mtime = T0 - rng.randint(0, 10_000_000)
            os.utime(path, (mtime, mtime))

    write_many(root / "src", n_files)
    write_many(root / "node_modules", n_ignored)


def generate_big_tree(root: Path, total_mb: int) -> None:
    """About ``total_mb`` MB of 1 MB files in which every line matches ``line``."""
    root.mkdir(parents=True)
    line = b"line of text that matches the pattern, padded to a typical width.......\n"
    block = line * (1024 * 1024 // len(line))
    for i in range(total_mb):
        d = root / f"d{i // 100:03d}"
        d.mkdir(exist_ok=True)
        (d / f"big{i:05d}.log").write_bytes(block)


def peak_rss_kb() -> int:
    """This process's peak RSS (VmHWM).

    Not ru_maxrss: Linux carries a parent's peak across fork and exec into it,
    so the bench's own size would show up as this process's.
    """
    status = Path("/proc/self/status").read_text()
    found = re.search(r"VmHWM:\s+(\d+)", status)
    return int(found.group(1)) if found else -1


async def rss_child(tree: str, pattern: str) -> None:
    """Run one Grep in this (fresh) process; print its peak RSS and rg's."""

    async def go() -> dict[str, Any]:
        with tempfile.TemporaryDirectory() as data:
            async with ToolHost(tree, data) as host:
                t = time.perf_counter()
                result = await host.call("Grep", {"pattern": pattern, "headLimit": 200})
                return {"seconds": time.perf_counter() - t, "count": result.get("count")}

    out = await go()
    out["self_kb"] = peak_rss_kb()
    # An upper bound for rg: its ru_maxrss includes this process's size at spawn.
    out["rg_kb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps(out))


def measure_rss(tree: Path, pattern: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--rss-child", str(tree), pattern],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout))


def parse_cost(tree: Path, pattern: str) -> tuple[int, float, float]:
    """Seconds to run rg and parse all its output: plain --null vs --json."""
    line_re = re.compile(rb"([^\0]*)\0(\d+)[:-]")

    def plain() -> int:
        proc = subprocess.Popen(
            [RG, "--null", "-n", "-H", "--no-heading", pattern, "."],
            cwd=tree,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
        )
        n = 0
        assert proc.stdout is not None
        for raw in proc.stdout:
            mo = line_re.match(raw)
            if mo is not None:
                raw[mo.end() :].decode("utf-8", "replace")
                n += 1
        proc.wait()
        return n

    def as_json() -> int:
        proc = subprocess.Popen(
            [RG, "--json", pattern, "."],
            cwd=tree,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
        )
        n = 0
        assert proc.stdout is not None
        for raw in proc.stdout:
            msg = json.loads(raw)
            if msg["type"] == "match":
                n += 1
        proc.wait()
        return n

    lines = plain()
    return lines, median_time(plain, 3), median_time(as_json, 3)


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x"


def cpu_seconds() -> tuple[float, float]:
    """CPU seconds (user + system) of this process (all its threads) and of its reaped children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


async def bench_glob(name: str, tree: Path, repeat: int, data_dir: Path) -> list[list[str]]:
    """Glob alone: `**/*.py` and `**/*` against `rg --files -g` (``--glob-only``).

    Besides wall times it prints CPU: Glob's own (this process: the Python
    side runs in it) plus its rg's, against the anchor rg's. On a shared
    machine the wall ratio follows the CPU ratio once the cores are busy.
    The ratio column is the median of each round's ratio (the two runs of a
    round are back to back, so they saw about the same load).
    """
    rows: list[list[str]] = []
    async with ToolHost(tree, data_dir) as host:
        for pattern in ("**/*.py", "**/*"):

            async def glob(pattern: str = pattern) -> dict[str, Any]:
                return await host.call("Glob", {"pattern": pattern})

            async def files(pattern: str = pattern) -> int:
                return await asyncio.to_thread(rg_run, ["--files", "-g", pattern, "."], tree)

            runs = {"glob": glob, "files": files}
            for fn in runs.values():
                await fn()  # warm-up: page cache, imports
            wall: dict[str, list[float]] = {k: [] for k in runs}
            cpu: dict[str, list[float]] = {k: [] for k in runs}
            for _ in range(repeat):
                for key, fn in runs.items():
                    own, kids = cpu_seconds()
                    t = time.perf_counter()
                    await fn()
                    wall[key].append(time.perf_counter() - t)
                    own2, kids2 = cpu_seconds()
                    cpu[key].append(own2 - own + kids2 - kids)
            rounds = [g / f for g, f in zip(wall["glob"], wall["files"], strict=True)]
            t_glob, t_files = statistics.median(wall["glob"]), statistics.median(wall["files"])
            c_glob, c_files = statistics.median(cpu["glob"]), statistics.median(cpu["files"])
            n_paths, t_stats = stat_cost(tree, pattern, repeat)
            rows.append(
                [
                    name,
                    f"Glob {pattern}",
                    f"{t_glob * 1000:.0f} ms (CPU {c_glob * 1000:.0f} ms)",
                    f"rg --files -g {t_files * 1000:.0f} ms (CPU {c_files * 1000:.0f} ms)",
                    f"{statistics.median(rounds):.2f}x (CPU {ratio(c_glob, c_files)})",
                    "<= 1.30x",
                ]
            )
            rows.append(
                [
                    name,
                    f"  the {n_paths} stats alone (one thread)",
                    f"{t_stats * 1000:.1f} ms",
                    f"rg --files -g {t_files * 1000:.0f} ms",
                    ratio(t_stats, t_files),
                    "(floor)",
                ]
            )
    return rows


def stat_cost(tree: Path, pattern: str, repeat: int) -> tuple[int, float]:
    """The files Glob ranks for ``pattern``, and the median time to stat them all.

    The files are those of Glob's own walk (rg narrowed by the selection's
    flags, then its exact filter). Newest-first needs this one stat per file,
    which the anchor never does: on two cores shared with rg's walk it is the
    floor of Glob's ratio.
    """
    selection = FileSelection.of(glob=pattern, type_name=None, argument="pattern")
    out = subprocess.run(
        [RG, "--no-config", "--no-require-git", "--files", *selection.rg_args(), "--null", "."],
        cwd=tree,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    ).stdout
    paths = out.split(b"\0")[:-1]
    keep = selection.printed_filter()
    paths = paths if keep is None else keep(paths)
    fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    try:
        stat = os.stat
        t = median_time(lambda: [stat(p, dir_fd=fd).st_mtime_ns for p in paths], repeat)
    finally:
        os.close(fd)
    return len(paths), t


async def bench_tree(
    name: str, tree: Path, pattern: str, repeat: int, data_dir: Path
) -> list[list[str]]:
    rows: list[list[str]] = []
    async with ToolHost(tree, data_dir) as host:

        async def grep() -> dict[str, Any]:
            return await host.call("Grep", {"pattern": pattern, "headLimit": 200})

        async def glob() -> dict[str, Any]:
            return await host.call("Glob", {"pattern": "**/*.py"})

        async def raw() -> int:
            return await asyncio.to_thread(rg_run, [pattern, "."], tree)

        async def sortr() -> int:
            return await asyncio.to_thread(rg_run, ["--sortr", "modified", pattern, "."], tree)

        async def files() -> int:
            return await asyncio.to_thread(rg_run, ["--files", "-g", "*.py", "."], tree)

        async def files_sorted() -> int:
            return await asyncio.to_thread(
                rg_run, ["--files", "--sortr", "modified", "-g", "*.py", "."], tree
            )

        matched = (await grep())["count"]
        t = await interleaved(
            {
                "grep": grep,
                "raw": raw,
                "sortr": sortr,
                "glob": glob,
                "files": files,
                "files_sorted": files_sorted,
            },
            repeat,
        )
    t_grep, t_raw, t_sortr, t_glob, t_files = (
        t["grep"],
        t["raw"],
        t["sortr"],
        t["glob"],
        t["files"],
    )
    out_bytes = rg_run([pattern, "."], tree)
    n_files = rg_run(["--files", "."], tree)
    rows.append(
        [
            name,
            f"Grep '{pattern}' ({matched} shown; rg prints {out_bytes // 1024} KB)",
            f"{t_grep * 1000:.0f} ms",
            f"rg {t_raw * 1000:.0f} ms",
            ratio(t_grep, t_raw),
            "<= 1.30x",
        ]
    )
    rows.append(
        [
            name,
            f"Grep '{pattern}' vs --sortr modified",
            f"{t_grep * 1000:.0f} ms",
            f"rg --sortr {t_sortr * 1000:.0f} ms",
            ratio(t_grep, t_sortr),
            "< 1.00x",
        ]
    )
    rows.append(
        [
            name,
            f"Glob **/*.py (rg --files lists {n_files // 1024} KB)",
            f"{t_glob * 1000:.0f} ms",
            f"rg --files {t_files * 1000:.0f} ms",
            ratio(t_glob, t_files),
            "<= 1.30x",
        ]
    )
    rows.append(
        [
            name,
            "Glob **/*.py vs rg's own newest-first listing",
            f"{t_glob * 1000:.0f} ms",
            f"rg --files --sortr {t['files_sorted'] * 1000:.0f} ms",
            ratio(t_glob, t["files_sorted"]),
            "(context)",
        ]
    )
    return rows


def print_table(rows: list[list[str]]) -> None:
    head = ["tree", "measure", "toolbound", "anchor", "ratio", "goal"]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, ["-" * w for w in widths], *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small generated trees")
    ap.add_argument("--files", type=int, default=None, help="generated tree size")
    ap.add_argument("--rss-mb", type=int, default=None, help="size of the every-line tree")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--glob-only", action="store_true", help="only the Glob ratios")
    ap.add_argument("--rss-child", nargs=2, help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.rss_child:
        await rss_child(*opts.rss_child)
        return
    n_files = opts.files or (10_000 if opts.quick else 100_000)
    rss_mb = opts.rss_mb or (200 if opts.quick else 2048)
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="toolbound-bench-") as tmp_name:
        tmp = Path(tmp_name)
        gen = tmp / "generated"
        t = time.perf_counter()
        generate_tree(gen, n_files, n_files // 2)
        print(
            f"generated {n_files} files + {n_files // 2} ignored in {time.perf_counter() - t:.0f}s",
            file=sys.stderr,
        )
        trees = [
            ("stdlib", Path(sysconfig.get_path("stdlib")), "import"),
            ("site-packages", Path(sysconfig.get_path("purelib")), "import"),
            (f"generated {n_files // 1000}k", gen, "handler config"),
        ]
        if opts.glob_only:
            load_before = os.getloadavg()
            for name, tree, _ in trees:
                rows += await bench_glob(name, tree, opts.repeat, tmp / "data")
            print(f"load average before {load_before}, after {os.getloadavg()}", file=sys.stderr)
            print_table(rows)
            return
        for name, tree, pattern in trees:
            rows += await bench_tree(name, tree, pattern, opts.repeat, tmp / "data")
            print(f"measured {name}", file=sys.stderr)

        big = tmp / "big"
        t = time.perf_counter()
        generate_big_tree(big, rss_mb)
        print(f"generated {rss_mb} MB in {time.perf_counter() - t:.0f}s", file=sys.stderr)
        small = measure_rss(Path(sysconfig.get_path("stdlib")) / "json", "import")
        every = measure_rss(big, "line")
        rows.append(
            [
                f"{rss_mb} MB, every line",
                f"Grep peak RSS ({every['count']} shown in {every['seconds']:.1f}s)",
                f"{every['self_kb'] // 1024} MB",
                f"1-file search {small['self_kb'] // 1024} MB",
                f"rg <= {every['rg_kb'] // 1024} MB",
                "<= 100 MB",
            ]
        )
        lines, t_plain, t_json = parse_cost(Path(sysconfig.get_path("stdlib")), "import")
        rows.append(
            [
                "stdlib",
                f"read all {lines} rg lines: plain vs --json",
                f"plain {t_plain * 1000:.0f} ms",
                f"json {t_json * 1000:.0f} ms",
                ratio(t_plain, t_json),
                "(format choice)",
            ]
        )
    print_table(rows)


if __name__ == "__main__":
    asyncio.run(main())
