"""Who a spawned shell is: the facts that find, stop and reap its tree.

A leaf: ``exec.members`` and ``exec.stopping`` read these facts, and
``exec.tree`` builds them when it spawns, so the type lives below all three.

Pieces:
    ShellIdent   a spawned ``bash -c``: Popen, its two pipe read ends, its marker,
                 the pipes and PIDs that tell its members
"""

from __future__ import annotations

import os
import subprocess
import threading
from dataclasses import dataclass, field


@dataclass(slots=True)
class ShellIdent:
    """A spawned ``bash -c``: the process, the read ends of its pipes, its marker."""

    proc: subprocess.Popen[bytes]
    stdout_fd: int
    stderr_fd: int
    marker: bytes
    # The pipes as /proc/PID/fd links show them: whoever holds one is a member.
    pipes: frozenset[str] = frozenset()
    host_pid: int = field(default_factory=os.getpid)
    # The thread that forked the shell: the shell is listed among its children.
    spawner_tid: int = field(default_factory=threading.get_native_id)
    # Every PID ever seen as a member and not yet reaped by the host: a member
    # that has exited keeps no environment to show its marker.
    known: set[int] = field(default_factory=set)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def wait(self) -> int:
        return self.proc.wait()
