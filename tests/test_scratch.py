"""Scratch dirs and spill files: private, created on first spill only, swept when stale."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from toolbound.scratch import LiveLock, Scratch, SessionIdError, check_session_id, sweep

DAY = 24 * 3600.0


def test_nothing_is_created_until_the_first_spill(tmp_path: Path) -> None:
    scratch = Scratch(tmp_path, "s1")
    assert not (tmp_path / "scratch").exists()
    path = scratch.spill("stdout", b"hello\n")
    assert path is not None
    assert path.parent == tmp_path / "scratch" / "s1" / "tool-output"
    assert path.read_bytes() == b"hello\n"


def test_spill_files_are_0600_and_folders_0700(tmp_path: Path) -> None:
    path = Scratch(tmp_path, "s1").spill("stderr", b"x")
    assert path is not None
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.parent.parent.stat().st_mode) == 0o700


def test_spill_names_are_label_ms_seq_and_never_collide(tmp_path: Path) -> None:
    scratch = Scratch(tmp_path, "s1")
    before = int(time.time() * 1000)
    paths = [scratch.spill("stdout", b"a") for _ in range(3)]
    names = [p.name for p in paths if p is not None]
    assert len(set(names)) == 3
    for seq, name in enumerate(names):
        label, ms, tail = name.split("-")
        assert (label, tail) == ("stdout", f"{seq}.log")
        assert before <= int(ms) <= int(time.time() * 1000)


def test_a_spill_under_a_file_fails_softly_and_leaves_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    assert Scratch(blocker / "data", "s1").spill("stdout", b"x" * 100) is None


_READ_ONLY_CHILD = """
import os, sys
from pathlib import Path
from toolbound.scratch import Scratch
if os.geteuid() == 0:
    os.setgid(65534)
    os.setuid(65534)
data = Path(sys.argv[1])
print("none" if Scratch(data, "s1").spill("stdout", b"x") is None else "written")
"""


def test_a_spill_into_a_read_only_data_dir_returns_none() -> None:
    # A real read-only data dir: as root, chmod alone does not stop writes, so
    # the child drops to an unprivileged user first.
    base = Path(tempfile.mkdtemp())
    try:
        data = base / "data"
        data.mkdir()
        base.chmod(0o755)
        data.chmod(0o555)
        out = subprocess.run(
            [sys.executable, "-c", _READ_ONLY_CHILD, str(data)],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        assert out.stdout.strip() == "none"
        assert list(data.iterdir()) == []
    finally:
        data.chmod(0o755)
        subprocess.run(["rm", "-rf", str(base)], check=True)


def test_remove_deletes_the_whole_scratch_dir(tmp_path: Path) -> None:
    scratch = Scratch(tmp_path, "s1")
    scratch.spill("stdout", b"x")
    scratch.remove()
    assert not scratch.dir.exists()


@pytest.mark.parametrize("bad", ["", "..", ".", "a/b", "../x", "a b", "-x", "x" * 129])
def test_session_ids_must_be_one_safe_path_component(bad: str) -> None:
    with pytest.raises(SessionIdError) as err:
        check_session_id(bad)
    assert isinstance(err.value, ValueError)
    assert err.value.to_tool_error().code == "TOOL_INVALID_ARGUMENT"


def _age(path: Path, seconds: float) -> None:
    old = time.time() - seconds
    for p in [path, *path.rglob("*")]:
        os.utime(p, (old, old), follow_symlinks=False)


def test_sweep_removes_stale_and_ended_sessions_but_never_a_live_one(tmp_path: Path) -> None:
    for sid in ("stale", "ended", "fresh", "live", "kept"):
        Scratch(tmp_path, sid).spill("stdout", b"x")
    for sid in ("stale", "live", "kept"):
        _age(tmp_path / "scratch" / sid, 2 * DAY)
    lock = LiveLock(tmp_path, "live")
    assert lock.acquire()
    try:
        removed = sweep(
            tmp_path, stale_s=DAY, is_ended=lambda sid: sid == "ended", keep=frozenset({"kept"})
        )
    finally:
        lock.release()
    assert sorted(removed) == ["ended", "stale"]
    assert sorted(p.name for p in (tmp_path / "scratch").iterdir()) == ["fresh", "kept", "live"]
    assert not lock.path.exists()


_HOLD_LOCK = """
import sys, time
from pathlib import Path
from toolbound.scratch import LiveLock
lock = LiveLock(Path(sys.argv[1]), "other")
assert lock.acquire()
print("held", flush=True)
sys.stdin.read()
"""


def test_sweep_spares_a_session_held_live_by_another_process(tmp_path: Path) -> None:
    Scratch(tmp_path, "other").spill("stdout", b"x")
    _age(tmp_path / "scratch" / "other", 2 * DAY)
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "held"
        assert sweep(tmp_path, stale_s=DAY) == []
    finally:
        child.communicate("", timeout=30)
    assert sweep(tmp_path, stale_s=DAY) == ["other"]
