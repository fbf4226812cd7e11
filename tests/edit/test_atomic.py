"""Atomic replacement: a SIGKILL at any moment leaves the old file or the new, never a part."""

from __future__ import annotations

import os
import random
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import toolbound.edit.atomic as atomic
from toolbound.edit.atomic import atomic_write, sweep_temp_files, temp_name, write_all

# Each version is this large, written in small pieces, so a kill lands mid-write.
VERSION_BYTES = 4 * 1024 * 1024
KILLS = 25
KILLING_FOR_S = 10.0
STARTUP_WAIT_S = 30.0
TEMP = re.compile(r"\.target\.txt\.toolbound-\d+-[0-9a-f]{12}\.tmp")

# The child loads atomic.py by its path (it imports only the standard library), so it
# starts in milliseconds, then rewrites the target forever, alternating two versions.
CHILD = r"""
import importlib.util, os, sys
spec = importlib.util.spec_from_file_location("atomic", sys.argv[1])
atomic = importlib.util.module_from_spec(spec)
spec.loader.exec_module(atomic)
target, size = sys.argv[2], int(sys.argv[3])
versions = [b"A" * size, b"B" * (size + 4096)]
print("go", flush=True)
i = 0
while True:
    data = memoryview(versions[i % 2])
    def fill(fd):
        for at in range(0, len(data), 65536):
            atomic.write_all(fd, data[at:at + 65536])
    atomic.atomic_write(atomic.Path(target), fill, like=os.stat(target))
    i += 1
"""


def _wait_for_go(child: subprocess.Popen[bytes]) -> None:
    assert child.stdout is not None
    ready, _, _ = select.select([child.stdout], [], [], STARTUP_WAIT_S)
    assert ready, "the writer did not start"
    assert child.stdout.readline() == b"go\n"


def test_a_sigkill_mid_write_leaves_the_old_file_or_the_new(tmp_path: Path) -> None:
    target = tmp_path / "target.txt"
    old, new = b"A" * VERSION_BYTES, b"B" * (VERSION_BYTES + 4096)
    target.write_bytes(old)
    os.chmod(target, 0o640)
    rng = random.Random(15)
    seen: set[bytes] = set()
    left_behind = 0
    deadline = time.monotonic() + KILLING_FOR_S
    kills = 0
    while kills < KILLS and time.monotonic() < deadline:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, atomic.__file__, str(target), str(VERSION_BYTES)],
            stdout=subprocess.PIPE,
        )
        try:
            _wait_for_go(child)
            time.sleep(rng.uniform(0.0, 0.15))  # a random moment, not a wait for a condition
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=STARTUP_WAIT_S)
            assert child.stdout is not None
            child.stdout.close()
        kills += 1
        data = target.read_bytes()
        assert data in (old, new), f"kill {kills}: a partial file of {len(data)} bytes"
        seen.add(data[:1])
        assert target.stat().st_mode & 0o777 == 0o640
        temps = [name for name in os.listdir(tmp_path) if name != "target.txt"]
        assert all(TEMP.fullmatch(name) for name in temps), temps
        left_behind += len(temps)
        assert sweep_temp_files(tmp_path, "target.txt") == len(temps)
    assert kills >= 10
    # The kills did land mid-write: some left a temporary behind, some after a rename.
    assert left_behind > 0
    assert seen == {b"A", b"B"}
    assert os.listdir(tmp_path) == ["target.txt"]


def test_a_failing_fill_leaves_the_target_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "t.txt"
    target.write_text("old\n")

    def fill(fd: int) -> None:
        write_all(fd, b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        atomic_write(target, fill, like=target.stat())
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["t.txt"]


def test_before_rename_can_give_up_and_the_target_stays(tmp_path: Path) -> None:
    target = tmp_path / "t.txt"
    target.write_text("old\n")

    def refuse() -> None:
        raise RuntimeError("changed meanwhile")

    with pytest.raises(RuntimeError):
        atomic_write(target, lambda fd: write_all(fd, b"new\n"), like=None, before_rename=refuse)
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["t.txt"]


def test_the_temporary_is_private_until_it_takes_the_old_mode(tmp_path: Path) -> None:
    target = tmp_path / "t.txt"
    target.write_text("old\n")
    os.chmod(target, 0o604)
    modes: list[int] = []
    atomic_write(
        target,
        lambda fd: modes.append(os.fstat(fd).st_mode & 0o777),
        like=target.stat(),
    )
    assert modes == [0o600]
    assert target.stat().st_mode & 0o777 == 0o604


def test_temporary_names_are_hidden_unique_and_fit_a_long_name() -> None:
    names = {temp_name("a.py") for _ in range(100)}
    assert len(names) == 100
    assert all(name.startswith(".a.py.toolbound-") for name in names)
    long = temp_name("x" * 250)
    assert long.startswith(".toolbound-")
    assert len(long) < 255


def test_the_sweep_keeps_the_temporaries_of_a_live_writer(tmp_path: Path) -> None:
    mine = tmp_path / f".t.txt.toolbound-{os.getpid()}-0123456789ab.tmp"
    mine.write_text("in progress")
    other = tmp_path / ".u.txt.toolbound-999999999-0123456789ab.tmp"
    other.write_text("another target")
    assert sweep_temp_files(tmp_path, "t.txt") == 0
    assert sorted(os.listdir(tmp_path)) == sorted([mine.name, other.name])
