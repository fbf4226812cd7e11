"""The guard (``exec.guard``): at the host's normal exit it is reaped, not left running."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support import WAIT_S, wait_for

CHILD = """
import asyncio, sys
from toolbound import ToolHost
from toolbound.exec import guard

async def main():
    async with ToolHost(sys.argv[1], sys.argv[2], "s") as host:
        await host.call("Bash", {"command": "true"})  # the first call starts the guard
    print(guard.guard_pid(), flush=True)

asyncio.run(main())
"""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_hosts_normal_exit_reaps_its_guard_and_warns_of_no_running_child(
    tmp_path: Path,
) -> None:
    (tmp_path / "ws").mkdir()
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", CHILD, str(tmp_path / "ws"), str(tmp_path / "d")],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        env={**os.environ, "PYTHONDEVMODE": "1"},
    )
    assert done.returncode == 0, done.stderr
    # Left running past the interpreter, its Popen said so as it was collected.
    assert "ResourceWarning" not in done.stderr
    assert "still running" not in done.stderr
    guard_pid = int(done.stdout.split()[0])
    wait_for(lambda: not _alive(guard_pid), "the guard gone")
