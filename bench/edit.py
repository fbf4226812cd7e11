"""Benchmark: Edit of one line in a 1 MB and a 100 MB file (issue 15), and ApplyPatch of
20 chunks over a 1 MB file (issue 29).

Anchor: ``sed -i 's/OLD/NEW/' FILE`` doing the same replacement on the same
file, measured side by side in the same run (alternating, each from the page
cache). Goal: Edit within 2x of sed.

The edit is the core's ``edit_file`` in a warm process (imports loaded, as in a
serving host), after one real Read of the file's first window was recorded, so
it pays for everything an Edit does: open, binary sniff, read, the record's
check, the search, the atomic write with its two fsyncs (the file and its
folder), hashing the new content for the record, and the diff. ``sed -i``
writes a temporary file and renames it too, but does not fsync; the line
``sed -i + sync FILE`` adds the file's fsync to the anchor for comparison.

Peak RSS: a fresh process makes one Edit of the 100 MB file and reports its
peak RSS (VmHWM) after imports, after the Read and after the Edit. The core
holds one copy of the file, so the goal is: the peak after imports plus the
file's size, no more.

ApplyPatch: a patch of 20 chunks (3 lines of context, one line changed, spread
through a 1 MB file) applied by the tool's body (``_apply``: parse, read,
match, stage, fsync, rename, record, diff) in a warm process. Anchor: ``git
apply`` of the same 20 hunks as a unified diff on the same file, side by
side (alternating: each step applies the patch forwards or back). Goal:
ApplyPatch within 2x of git apply. ``git apply`` does not fsync; the line
``git apply + sync FILE`` adds it for comparison.

    python bench/edit.py            # 1 MB and 100 MB, then ApplyPatch
    python bench/edit.py --quick    # 1 MB and 10 MB, then ApplyPatch
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MB = 1024 * 1024
LINE = b"%09d lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod temp\n"
OLD, NEW = "needle-old-value", "needle-new-value"
GOAL_RATIO = 2.0

RSS_CHILD = r"""
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from edit import record_read, one_edit
from toolbound.edit import ReadRecord
from toolbound.paths import Roots
path = Path(sys.argv[1])
roots = Roots.create(path.parent, path.parent / ".scratch")
def hwm_kb():
    # VmHWM: this process's own peak (ru_maxrss would carry the forking parent's over exec).
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
record = ReadRecord()
imports = hwm_kb()
record_read(roots, record, path.name)
before = hwm_kb()
one_edit(roots, record, path.name, sys.argv[3], sys.argv[4])
after = hwm_kb()
print(json.dumps({"imports_kb": imports, "before_kb": before, "after_kb": after}))
"""


def generate(path: Path, size: int) -> None:
    """About ``size`` bytes of 90-byte lines, with OLD once in the middle line."""
    n = size // len(LINE % 0)
    middle = n // 2
    with path.open("wb") as f:
        block = 10_000
        for first in range(0, n, block):
            lines = [LINE % i for i in range(first, min(first + block, n))]
            if first <= middle < first + block:
                lines[middle - first] = b"%09d %s\n" % (middle, OLD.encode())
            f.write(b"".join(lines))


def record_read(roots: object, record: object, name: str) -> None:
    """A real Read of the first window, recorded as the Read tool records it."""
    from toolbound.edit import ReadRecord, content_digest
    from toolbound.limits import DEFAULT_LIMITS
    from toolbound.paths import Roots
    from toolbound.tools.read import read_window

    assert isinstance(roots, Roots)
    assert isinstance(record, ReadRecord)
    result = read_window(roots, name, offset=0, limit=2000, limits=DEFAULT_LIMITS)
    real = roots.resolve(name).real
    end = len(result.content.encode())
    with real.open("rb") as f:
        head = f.read(end)
    record.saw_window(
        real,
        call_id="read-1",
        offset=0,
        limit=2000,
        line_count=result.line_count,
        start_byte=0,
        end_byte=end,
        at_eof=result.total_lines is not None,
        digest=content_digest(head),
    )


def one_edit(roots: object, record: object, name: str, old: str, new: str) -> float:
    """One Edit through the core; returns its seconds."""
    from toolbound.edit import ReadRecord, edit_file, resolve_target
    from toolbound.paths import Roots

    assert isinstance(roots, Roots)
    assert isinstance(record, ReadRecord)
    t0 = time.perf_counter()
    target = resolve_target(roots, name, tool="Edit")
    result = edit_file(target, old_string=old, new_string=new, record=record, call_id="e")
    elapsed = time.perf_counter() - t0
    assert result.replacements == 1, result
    return elapsed


def run_sed(path: Path, old: str, new: str, *, sync: bool) -> float:
    t0 = time.perf_counter()
    subprocess.run(["sed", "-i", f"s/{old}/{new}/", str(path)], check=True)
    if sync:
        subprocess.run(["sync", str(path)], check=True)
    return time.perf_counter() - t0


def bench_size(folder: Path, size: int, runs: int) -> dict[str, float]:
    from toolbound.edit import ReadRecord
    from toolbound.paths import Roots

    path = folder / f"file-{size // MB}mb.txt"
    generate(path, size)
    roots = Roots.create(folder, folder / ".scratch")
    record = ReadRecord()
    record_read(roots, record, path.name)
    times: dict[str, list[float]] = {"edit": [], "sed": [], "sed_sync": []}
    pair = (OLD, NEW)
    for _ in range(runs):
        # Each step turns the needle back the other way, so every step does the same work.
        times["edit"].append(one_edit(roots, record, path.name, *pair))
        pair = (pair[1], pair[0])
        times["sed"].append(run_sed(path, *pair, sync=False))
        pair = (pair[1], pair[0])
        times["sed_sync"].append(run_sed(path, *pair, sync=True))
        pair = (pair[1], pair[0])
        # sed changed the file: the session Reads it again before its next Edit.
        record_read(roots, record, path.name)
    medians = {k: statistics.median(v) for k, v in times.items()}
    path.unlink()
    return medians


PATCH_CHUNKS = 20
PATCH_CONTEXT = 3


def patch_texts(lines: int) -> dict[str, str]:
    """The same 20 one-line changes as Codex patches and unified diffs, both directions."""
    picks = [lines * (k + 1) // (PATCH_CHUNKS + 1) for k in range(PATCH_CHUNKS)]

    def text(i: int) -> str:
        return (LINE % i).decode().rstrip("\n")

    def changed(i: int) -> str:
        return f"{i:09d} changed by the patch"

    out: dict[str, str] = {}
    for direction, (old, new) in {"forward": (text, changed), "back": (changed, text)}.items():
        codex = ["*** Begin Patch", "*** Update File: patched.txt"]
        diff = ["--- a/patched.txt", "+++ b/patched.txt"]
        for at in picks:
            before = [text(i) for i in range(at - PATCH_CONTEXT, at)]
            after = [text(i) for i in range(at + 1, at + 1 + PATCH_CONTEXT)]
            body = [f" {x}" for x in before] + [f"-{old(at)}", f"+{new(at)}"]
            body += [f" {x}" for x in after]
            codex += ["@@", *body]
            size = 2 * PATCH_CONTEXT + 1
            start = at - PATCH_CONTEXT + 1
            diff += [f"@@ -{start},{size} +{start},{size} @@", *body]
        out[f"codex_{direction}"] = "\n".join([*codex, "*** End Patch"]) + "\n"
        out[f"diff_{direction}"] = "\n".join(diff) + "\n"
    return out


def apply_patch_core(folder: Path, patch: str) -> float:
    """One ApplyPatch through the tool's body in this (warm) process; returns its seconds."""
    import asyncio

    from toolbound.arguments import ApplyPatchArgs
    from toolbound.context import ToolContext
    from toolbound.limits import DEFAULT_LIMITS
    from toolbound.paths import Roots
    from toolbound.scratch import Scratch
    from toolbound.tools.apply_patch import _apply

    ctx = ToolContext(
        limits=DEFAULT_LIMITS,
        roots=Roots.create(folder, folder / ".scratch"),
        scratch=Scratch(folder / ".data", "bench"),
        tool_call_id="p",
        emit=lambda _stream, _data: None,
        abort=asyncio.Event(),
    )
    args = ApplyPatchArgs(patch=patch)
    t0 = time.perf_counter()
    result = _apply(args, ctx)
    elapsed = time.perf_counter() - t0
    assert len(result.files[0].hunks) == PATCH_CHUNKS, result
    assert not any(h.already_applied for h in result.files[0].hunks), result
    return elapsed


def run_git_apply(folder: Path, diff: Path, *, sync: bool) -> float:
    t0 = time.perf_counter()
    subprocess.run(["git", "apply", str(diff)], cwd=folder, check=True)
    if sync:
        subprocess.run(["sync", str(folder / "patched.txt")], check=True)
    return time.perf_counter() - t0


def bench_apply_patch(folder: Path, runs: int) -> dict[str, float]:
    path = folder / "patched.txt"
    generate(path, 1 * MB)
    lines = path.read_bytes().count(b"\n")
    texts = patch_texts(lines)
    diffs = {}
    for direction in ("forward", "back"):
        diffs[direction] = folder / f"{direction}.diff"
        diffs[direction].write_text(texts[f"diff_{direction}"])
    original = path.read_bytes()
    times: dict[str, list[float]] = {"apply_patch": [], "git": [], "git_sync": []}
    for _ in range(runs):
        # Each step turns the file the other way, so every step does the same work.
        times["apply_patch"].append(apply_patch_core(folder, texts["codex_forward"]))
        times["git"].append(run_git_apply(folder, diffs["back"], sync=False))
        times["git_sync"].append(run_git_apply(folder, diffs["forward"], sync=True))
        times["apply_patch"].append(apply_patch_core(folder, texts["codex_back"]))
        times["git"].append(run_git_apply(folder, diffs["forward"], sync=False))
        times["git_sync"].append(run_git_apply(folder, diffs["back"], sync=True))
    assert path.read_bytes() == original
    return {k: statistics.median(v) for k, v in times.items()}


def peak_rss(folder: Path, size: int) -> dict[str, int]:
    path = folder / "rss.txt"
    generate(path, size)
    out = subprocess.run(
        [sys.executable, "-c", RSS_CHILD, str(path), str(Path(__file__).parent), OLD, NEW],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    ).stdout
    path.unlink()
    result: dict[str, int] = json.loads(out)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 MB and 10 MB")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    big = 10 * MB if args.quick else 100 * MB
    print(f"load average at start: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="bench-edit-") as tmp:
        folder = Path(tmp)
        for size, runs in ((1 * MB, args.runs * 3), (big, args.runs)):
            m = bench_size(folder, size, runs)
            ratio = m["edit"] / m["sed"]
            print(
                f"{size // MB:>4} MB: Edit {m['edit'] * 1000:8.1f} ms | sed -i "
                f"{m['sed'] * 1000:8.1f} ms -> ratio {ratio:.2f}x (goal < {GOAL_RATIO}x) | "
                f"sed -i + sync {m['sed_sync'] * 1000:8.1f} ms -> ratio "
                f"{m['edit'] / m['sed_sync']:.2f}x   (medians of {runs})"
            )
        patch_dir = folder / "patch"
        patch_dir.mkdir()
        m = bench_apply_patch(patch_dir, args.runs * 3)
        print(
            f"   1 MB, {PATCH_CHUNKS} chunks: ApplyPatch {m['apply_patch'] * 1000:8.1f} ms | "
            f"git apply {m['git'] * 1000:8.1f} ms -> ratio {m['apply_patch'] / m['git']:.2f}x "
            f"(goal < {GOAL_RATIO}x) | git apply + sync {m['git_sync'] * 1000:8.1f} ms -> ratio "
            f"{m['apply_patch'] / m['git_sync']:.2f}x   (medians of {2 * args.runs * 3})"
        )
        rss = peak_rss(folder, big)
        print(
            f"peak RSS, one Edit of the {big // MB} MB file: {rss['after_kb'] / 1024:.0f} MB "
            f"(after imports: {rss['imports_kb'] / 1024:.0f} MB, after the Read: "
            f"{rss['before_kb'] / 1024:.0f} MB)"
        )
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
