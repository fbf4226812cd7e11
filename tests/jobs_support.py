"""Helpers of the background job tests (importable: ``tests`` is on pytest's pythonpath).

Pieces:
    running     whether a PID exists and has not exited
    reap        reap exited children of this process
    mode_of     a file's permission bits
    in_session  the PIDs of a session, from /proc
    start       start a job through a host
    ended       a job's output once it ended
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from typing import Any

from toolbound import ToolHost


def running(pid: int) -> bool:
    """True while ``pid`` exists and has not exited (a zombie has: its reaper's business)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


def reap(pids: Iterable[int]) -> None:
    """Reap those of ``pids`` that are this process's exited children."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def mode_of(path: str) -> int | None:
    """A file's permission bits, None if it is not there."""
    try:
        return os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        return None


def in_session(sid: int) -> list[int]:
    """The PIDs in /proc whose session is ``sid`` (zombies included)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 3 and int(fields[3]) == sid:
            found.append(int(name))
    return found


async def start(host: ToolHost, command: str, **args: Any) -> dict[str, Any]:
    """Start ``command`` as a job; its start result (asserted to be one)."""
    result = await host.call("Bash", {"command": command, "background": True, **args})
    assert result["state"] == "running", result
    return result


async def ended(host: ToolHost, job_id: str) -> dict[str, Any]:
    """The job's output once it ended (it must end within the wait)."""
    # `\z.` (a character after the end) never matches: the wait ends with the job.
    out = await host.call("JobOutput", {"jobId": job_id, "waitS": 30, "until": r"\z."})
    assert out["state"] != "running", out
    return out
