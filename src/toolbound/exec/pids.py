"""A process bound for one confined command tree: a pids cgroup, where one can be made.

``RLIMIT_NPROC`` (the sandbox's ``ulimit -u``) counts the processes of a user,
and the kernel never applies it to the host's root, the user a sandbox of a
root server maps to; a fork bomb would then meet no bound at all. Where the
host may create a cgroup v1 ``pids`` group (root, the controller mounted), each
confined tree gets one of its own with ``pids.max``: the sandbox's keeper
joins it through a descriptor on its ``tasks`` before it forks anything, so
every process of the tree is born inside it, with no window in which an early
fork could escape. ``pids.events`` then says
whether the bound was hit, so the result can say so.

Pieces:
    PidsGroup        one tree's group: joining_fd(), hit(), remove()
    pids_group       a new group bounded to ``max_processes``, or None where none can be made;
                     the first of a process removes the groups dead hosts left behind
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

_numbers = itertools.count()
_lock = threading.Lock()
# The v1 pids controller's mount point, looked up once ("" when there is none).
_mount: list[str] = []


def _pids_mount() -> Path | None:
    """Where the v1 ``pids`` controller is mounted, if it is and this process may use it."""
    with _lock:
        if not _mount:
            found = ""
            if os.geteuid() == 0:
                with contextlib.suppress(OSError), open("/proc/self/mountinfo") as f:
                    for line in f:
                        fields = line.split()
                        dash = fields.index("-")
                        if fields[dash + 1] == "cgroup" and "pids" in fields[-1].split(","):
                            found = fields[4]
                            break
            _mount.append(found)
        return Path(_mount[0]) if _mount[0] else None


def _thread_group(mount: Path) -> Path | None:
    """The pids group the calling thread is in now."""
    try:
        with open("/proc/thread-self/cgroup") as f:
            for line in f:
                _num, controllers, path = line.rstrip("\n").split(":", 2)
                if "pids" in controllers.split(","):
                    return mount / path.lstrip("/")
    except OSError:
        return None
    return None


@dataclass(slots=True)
class PidsGroup:
    """One confined tree's pids group (see the module docstring)."""

    path: Path
    home: Path

    def joining_fd(self) -> int:
        """A descriptor on the group's ``tasks``, for the process that joins it itself
        (writing ``0`` moves the writer): a sandbox's keeper, before it forks, so
        the host's thread never migrates (each migration waits for an RCU grace
        period: 4 ms on the event loop at load 1.3). The caller closes it."""
        return os.open(self.path / "tasks", os.O_WRONLY | os.O_CLOEXEC)

    def hit(self) -> bool:
        """Whether a fork was refused because the group was full."""
        try:
            for line in (self.path / "pids.events").read_text().splitlines():
                name, _, count = line.partition(" ")
                if name == "max":
                    return int(count) > 0
        except (OSError, ValueError):
            return False
        return False

    def remove(self) -> None:
        """Remove the group once its processes are gone (an empty group costs nothing
        if it cannot be removed yet)."""
        try:
            self.path.rmdir()
        except OSError as err:
            log.debug("toolbound: pids group %s stays: %s", self.path, err)


def _sweep(home: Path) -> None:
    """Remove the empty groups left by hosts that died before removing them."""
    for group in home.glob("toolbound-*-*"):
        pid = group.name.split("-")[1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):
                group.rmdir()


def pids_group(max_processes: int) -> PidsGroup | None:
    """A new pids group holding at most ``max_processes``, or None where none can be made."""
    mount = _pids_mount()
    if mount is None:
        return None
    home = _thread_group(mount)
    if home is None:
        return None
    number = next(_numbers)
    if number == 0:
        _sweep(home)
    path = home / f"toolbound-{os.getpid()}-{number}"
    try:
        path.mkdir()
    except OSError as err:
        log.debug("toolbound: no pids group under %s: %s", home, err)
        with _lock:
            _mount[0] = ""  # not allowed here: do not try again
        return None
    try:
        (path / "pids.max").write_text(str(max_processes))
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
    return PidsGroup(path, home)
