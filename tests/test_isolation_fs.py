"""No racing symlink swap moves a tool's file operation outside its root (CONTRACT 16).

A real process swaps a workspace folder ``d`` with a symlink ``dl`` to an
outside folder (``renameat2(RENAME_EXCHANGE)`` in a tight loop) while the
tools run through ToolHost; afterwards nothing outside was written, and no
result shows an outside file. Every call still answers: a clear TOOL_ error is
fine when the path changed under it. The host's own writes into the scratch
dir (spill files, job logs) are never led out by a symlink a command planted.
"""

from __future__ import annotations

import collections
import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolbound import fsroot
from toolbound.host import ToolHost

CALLS = 500
SEARCH_CALLS = 40
# How long the swapper holds each state while Edits run (each Edit's steps by name
# took longer than the tight loop held one state, so it rarely caught one before).
EDIT_HOLD_S = 0.0005

# Exchanges the folder argv[1] and the symlink argv[2] until its stdin closes, then
# prints how many swaps it made; with argv[3], it holds each state that many seconds
# (an Edit's steps take longer than a tight loop holds one). A process of its own,
# so swaps land mid-call.
SWAPPER = r"""
import ctypes, os, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
a, b = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2])
hold_s = float(sys.argv[3])
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
print("swapping", flush=True)
swaps = 0
while not done.is_set():
    if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
        sys.exit("renameat2: " + os.strerror(ctypes.get_errno()))
    swaps += 1
    if hold_s:
        time.sleep(hold_s)
print(swaps, flush=True)
"""


@contextlib.contextmanager
def swapping(folder: Path, link: Path, *, hold_s: float = 0.0) -> Iterator[list[int]]:
    """The SWAPPER exchanging ``folder`` and ``link`` while the block runs; the list
    it yields gets the number of swaps made."""
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(folder), str(link), str(hold_s)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert swapper.stdin is not None
    assert swapper.stdout is not None
    swaps: list[int] = []
    try:
        assert swapper.stdout.readline() == "swapping\n"
        yield swaps
    finally:
        swapper.stdin.close()
        swaps.append(int(swapper.stdout.readline() or 0))
        swapper.wait(timeout=10)
        swapper.stdout.close()
    assert swapper.returncode == 0


@pytest.fixture(params=["openat2", "per-component"])
def walk_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both walks: the kernel's openat2 where it answers, and the per-component
    walk a kernel without it (or a seccomp filter refusing it) falls back to."""
    mode = str(request.param)
    if mode == "per-component":
        monkeypatch.setattr(fsroot, "openat2_available", lambda: False)
    return mode


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    """The workspace (``d`` a folder, ``dl`` a symlink to ``outside``) and ``outside``."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    (ws / "d" / "secret.txt").write_text("inside\n")
    (ws / "d" / "e.txt").write_text("A\n")
    (outside / "secret.txt").write_text("OUTSIDE\n")
    (outside / "e.txt").write_text("A\n")
    (outside / "only-outside.txt").write_text("OUTSIDE\n")
    (ws / "dl").symlink_to(outside)
    return ws, outside


def _code(result: Any) -> str:
    assert isinstance(result, dict)
    code = result["error"]["code"] if "error" in result else "ok"
    assert code == "ok" or code.startswith("TOOL_"), result
    return str(code)


async def test_no_write_lands_outside_while_a_folder_is_swapped(
    places: tuple[Path, Path], tmp_path: Path, walk_mode: str
) -> None:
    ws, outside = places
    codes: collections.Counter[str] = collections.Counter()
    async with ToolHost(workspace=ws, data_dir=tmp_path / "data") as host:
        with swapping(ws / "d", ws / "dl") as swaps:
            for i in range(CALLS):
                result = await host.call("Write", {"path": f"d/new/pwn-{i}.txt", "content": "x"})
                codes[_code(result)] += 1
    escaped = sorted(p.name for p in outside.rglob("pwn-*"))
    assert (len(escaped), escaped[:3]) == (0, []), (codes, swaps)
    assert codes["ok"] > 0, codes
    assert swaps[0] > CALLS, swaps


async def test_no_read_shows_an_outside_file_while_a_folder_is_swapped(
    places: tuple[Path, Path], tmp_path: Path, walk_mode: str
) -> None:
    ws, _ = places
    codes: collections.Counter[str] = collections.Counter()
    outside_reads = 0
    async with ToolHost(workspace=ws, data_dir=tmp_path / "data") as host:
        with swapping(ws / "d", ws / "dl") as swaps:
            for _ in range(CALLS):
                result = await host.call("Read", {"path": "d/secret.txt"})
                codes[_code(result)] += 1
                outside_reads += "OUTSIDE" in result.get("content", "")
    assert outside_reads == 0, (codes, swaps)
    assert codes["ok"] > 0, codes


async def test_no_edit_changes_an_outside_file_while_a_folder_is_swapped(
    places: tuple[Path, Path], tmp_path: Path
) -> None:
    ws, outside = places
    mirror = outside / "e.txt"
    inode = mirror.stat().st_ino
    codes: collections.Counter[str] = collections.Counter()
    replaced = 0
    async with ToolHost(workspace=ws, data_dir=tmp_path / "data") as host:
        with swapping(ws / "d", ws / "dl", hold_s=EDIT_HOLD_S):
            current: str | None = None
            for i in range(CALLS):
                if current is None:
                    read = await host.call("Read", {"path": "d/e.txt"})
                    if _code(read) != "ok":
                        continue
                    current = read["content"]
                edit = {"path": "d/e.txt", "oldString": current, "newString": f"E{i}\n"}
                code = _code(await host.call("Edit", edit))
                codes[code] += 1
                current = f"E{i}\n" if code == "ok" else None
                if code == "ok":
                    # The outside file keeps the same text, so an Edit led out there
                    # would pass the read record's check; written in place, so only
                    # an Edit's rename gives it a new inode.
                    with mirror.open("r+") as f:
                        f.truncate()
                        f.write(f"E{i}\n")
                replaced += mirror.stat().st_ino != inode
                inode = mirror.stat().st_ino
    assert replaced == 0, codes
    assert codes["ok"] > 0, codes


@pytest.mark.parametrize("path", ["d", None])
async def test_glob_and_grep_never_show_an_outside_file_while_a_folder_is_swapped(
    places: tuple[Path, Path], tmp_path: Path, path: str | None
) -> None:
    # With `path` "d" the swapped folder is the one searched; without, rg's own walk
    # meets it below the workspace.
    ws, _ = places
    where = {"path": path} if path else {}
    codes: collections.Counter[str] = collections.Counter()
    shown: list[str] = []
    async with ToolHost(workspace=ws, data_dir=tmp_path / "data") as host:
        with swapping(ws / "d", ws / "dl"):
            for _ in range(SEARCH_CALLS):
                found = await host.call("Glob", {"pattern": "**/*", **where})
                if _code(found) == "ok":
                    shown += found["matches"]
                codes["Glob " + _code(found)] += 1
                files = {"pattern": "OUTSIDE", "outputMode": "filesWithMatches", **where}
                found = await host.call("Grep", files)
                if _code(found) == "ok":
                    shown += found["files"]
                codes["Grep " + _code(found)] += 1
                found = await host.call("Grep", {"pattern": "OUTSIDE|inside", **where})
                if _code(found) == "ok":
                    shown += [f"{m['path']}:{m['text']}" for m in found["matches"]]
                codes["Grep content " + _code(found)] += 1
    assert [s for s in shown if "only-outside" in s or "OUTSIDE" in s] == [], codes
    assert codes["Glob ok"] > 0, codes


async def test_a_planted_tool_output_symlink_never_receives_a_spill(tmp_path: Path) -> None:
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    ws.mkdir()
    elsewhere.mkdir()
    async with ToolHost(workspace=ws, data_dir=tmp_path / "data") as host:
        assert host.scratch.ensure()
        (host.scratch.dir / "tool-output").symlink_to(elsewhere)
        result = await host.call(
            "Bash", {"command": f"{sys.executable} -c \"print('a' * 300_000)\""}
        )
        assert _code(result) == "ok"
        spilled = result["spill"].get("stdout")
        assert os.listdir(elsewhere) == []
        assert spilled is not None
        spill = Path(spilled)
        assert (spill.parent, spill.parent.is_symlink()) == (host.scratch.spill_dir, False)
        assert spill.read_bytes()[:1000] == b"a" * 1000  # noqa: ASYNC240


async def test_a_planted_jobs_symlink_never_receives_a_job_log(tmp_path: Path) -> None:
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    ws.mkdir()
    elsewhere.mkdir()
    async with ToolHost(workspace=ws, data_dir=tmp_path / "data") as host:
        assert host.scratch.ensure()
        (host.scratch.dir / "jobs").symlink_to(elsewhere)
        started = await host.call("Bash", {"command": "echo hi", "background": True})
        assert _code(started) == "ok"
        assert os.listdir(elsewhere) == []
        log = Path(started["logs"]["stdout"])
        assert (log.parent.parent, log.parent.parent.is_symlink()) == (
            host.scratch.dir / "jobs",
            False,
        )
