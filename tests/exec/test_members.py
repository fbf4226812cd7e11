"""Reading /proc for a tree's members: whole files, and nothing once a process is gone."""

from __future__ import annotations

import os
from pathlib import Path

from toolbound.exec.members import read_proc


def test_a_file_past_one_read_is_read_whole(tmp_path: Path) -> None:
    # A process's environment can be far past one read's 64 KB.
    data = os.urandom(200 * 1024 + 7)
    path = tmp_path / "environ"
    path.write_bytes(data)
    assert read_proc(str(path)) == data
    assert read_proc(f"/proc/{os.getpid()}/environ") == Path("/proc/self/environ").read_bytes()


def test_a_gone_process_reads_as_empty(tmp_path: Path) -> None:
    assert read_proc(str(tmp_path / "no-such-pid" / "environ")) == b""
