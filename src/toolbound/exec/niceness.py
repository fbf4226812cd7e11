"""Lower a command tree's CPU priority: what a bulk stream's command gets once it gives way.

A bulk stream (``busy.BulkStream``) that had to give way to another session's
short call has its command's whole tree lowered, once, for the rest of its
life (``lower``): its writers (``yes | head``, a build's compilers) then take
a CPU only when no short call wants one, and a short call is waiting exactly
while the CPUs are contended (niceness changes nothing on an idle CPU).

Two knobs, because on Linux niceness alone may weigh nothing here:

- **Every task's niceness** (``setpriority`` per thread: Linux applies
  ``PRIO_PROCESS`` to the one thread named, and a thread made later inherits
  its creator's, a process forked later its parent's).
- **The tree's autogroup.** With ``sched_autogroup`` on (most desktop and
  many server kernels; the one ``bench/load.py`` measured on) each session is
  a scheduling group of its own, sharing the CPUs with every other group as
  one, and a task's niceness weighs only against the tasks of its own group
  (measured, two rounds: the tasks alone lowered, the short Read's p99 was
  10-15x its idle median, no better than with nothing lowered, 6-10x). Every command
  starts a new session (``exec.tree``), so each is its own group: lowering
  its tasks alone would leave the group's share as it was. The group's own
  niceness (``/proc/PID/autogroup``) is what weighs against the server's group
  then; lowered for every group a member is in, except the host's own.

Never raised back: the stream's command stays low until it ends (raising a
niceness back takes CAP_SYS_NICE, or RLIMIT_NICE; a tree that once had to
give way will be bulk again the next time another call comes). A niceness
already at or above the target (the user's own ``nice -n 19 make``) is left
as it is. Every step is best effort: a member that exited meanwhile, or a
refusal, leaves that member as it was.

Pieces:
    Lowered       how many tasks and autogroups one lowering changed
    lower         lower the given processes (every thread) and their autogroups
    niceness_of   a task's niceness, from /proc (tests, benchmarks)
    autogroup_of  a process's autogroup and its niceness, from /proc
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass

from toolbound.exec.members import read_proc


@dataclass(frozen=True, slots=True)
class Lowered:
    """What one :func:`lower` changed: threads reniced, autogroups reniced."""

    tasks: int
    groups: int


def lower(pids: Iterable[int], nice: int) -> Lowered:
    """Raise every thread of ``pids`` to niceness ``nice`` and their autogroups too
    (never the host's own threads or group); anything already at least that nice
    is left."""
    tasks = 0
    groups: dict[str, int] = {}
    own = autogroup_of(os.getpid())
    own_name = None if own is None else own[0]
    # A member's PID or thread ID seen a moment ago may be the host's own by now
    # (reused); the host's threads are never lowered.
    own_tids = set(os.listdir("/proc/self/task"))
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue  # exited meanwhile
        for tid in tids:
            if tid not in own_tids:
                tasks += _lower_task(int(tid), nice)
        group = autogroup_of(pid)
        if group is not None and group[0] != own_name and group[1] < nice:
            groups.setdefault(group[0], pid)
    changed = sum(_lower_group(pid, nice) for pid in groups.values())
    return Lowered(tasks, changed)


def _lower_task(tid: int, nice: int) -> int:
    """1 if the thread ``tid`` was lowered to ``nice``, else 0 (already there, gone)."""
    try:
        if os.getpriority(os.PRIO_PROCESS, tid) >= nice:
            return 0
        os.setpriority(os.PRIO_PROCESS, tid, nice)
    except OSError:
        return 0
    return 1


def _lower_group(pid: int, nice: int) -> int:
    """1 if the autogroup ``pid`` is in was set to ``nice``, else 0 (refused, gone).
    Without CAP_SYS_ADMIN the kernel takes one such change per 100 ms (EAGAIN)."""
    with contextlib.suppress(OSError):
        fd = os.open(f"/proc/{pid}/autogroup", os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, str(nice).encode())
        finally:
            os.close(fd)
        return 1
    return 0


def niceness_of(tid: int) -> int | None:
    """The niceness in /proc/TID/stat (field 19); None once the task is gone."""
    stat = read_proc(f"/proc/{tid}/stat")
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[16]) if len(fields) > 16 else None


def autogroup_of(pid: int) -> tuple[str, int] | None:
    """``(name, niceness)`` of the autogroup ``pid`` is in (``/autogroup-N nice X``);
    None where the kernel has no autogroups, or the process is gone."""
    shown = read_proc(f"/proc/{pid}/autogroup").split()
    if len(shown) != 3 or shown[1] != b"nice":
        return None
    try:
        return shown[0].decode(), int(shown[2])
    except ValueError:
        return None
