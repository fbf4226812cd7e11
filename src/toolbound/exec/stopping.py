"""Stopping a tree and reaping its members, every wait bounded.

Stopping is SIGTERM to every member, a grace period in which members are
reaped as they die, SIGKILL to whatever is left (including members forked
meanwhile), then reaping until none is left. Only the host's own children
are reaped here (the members ``exec.members`` finds among them); deeper
members are reparented to the host as their parents die and reaped then.

Pieces:
    send            a signal to a PID that may be gone already
    KillPolicy      how a tree is stopped: its signals, their order, the grace, the polling
    signal_name     the signal that ended a process, from its Popen returncode
    reap_lingering  reap members that already exited (no signal); the rest still run
    stop_tree       SIGTERM, grace, SIGKILL, reap; returns the PIDs signalled
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass

from toolbound.exec.ident import ShellIdent
from toolbound.exec.members import members
from toolbound.limits import Limits


@dataclass(frozen=True, slots=True)
class KillPolicy:
    """How a tree is stopped, as one value (every runner and tree takes it).

    ``term`` goes to every member first (SIGCONT after it, so a stopped member
    can act on it), parents before their children, the shell again each round;
    after ``grace_s`` ``kill`` goes to whatever is left, and reaping goes on for
    at most another ``grace_s``. ``poll_s`` is how often a stopping tree is
    rescanned; ``drain_s`` how long the pipes are drained after the shell
    exited while descendants still hold them (then they are stopped too), and
    how long a stream may stay open after its tree is gone.
    """

    grace_s: float = 2.0
    poll_s: float = 0.01
    drain_s: float = 0.25
    term: signal.Signals = signal.SIGTERM
    kill: signal.Signals = signal.SIGKILL

    @classmethod
    def of(cls, limits: Limits) -> KillPolicy:
        """The policy of a host's limits (``kill_grace_s``, ``linger_drain_s``)."""
        return cls(grace_s=limits.kill_grace_s, drain_s=limits.linger_drain_s)


def _reap(shell: ShellIdent, top: set[int]) -> set[int]:
    """Reap the members that are the host's children and have exited."""
    gone: set[int] = set()
    for pid in top:
        if pid == shell.pid:
            if shell.proc.poll() is not None:
                gone.add(pid)
            continue
        try:
            reaped, _status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            gone.add(pid)
            continue
        if reaped == pid:
            gone.add(pid)
    shell.known -= gone
    return gone


def reap_lingering(shell: ShellIdent) -> set[int]:
    """Reap exited members; return the members still running."""
    top, every = members(shell)
    return every - _reap(shell, top)


def send(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def signal_name(returncode: int | None) -> str | None:
    """``SIGTERM`` for a returncode of -15 (``Popen``: killed by that signal); None
    for an exit or a process still running."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"SIG{-returncode}"


def stop_tree(shell: ShellIdent, policy: KillPolicy) -> set[int]:
    """Stop every member of the tree and reap the host's share; blocks, bounded.

    ``policy.term`` (and SIGCONT, so a stopped member can act on it) to each
    member, parents first (the shell itself each round until it is gone),
    members reaped as they exit; after ``policy.grace_s`` ``policy.kill`` to
    whatever is left, new members included; reaping then continues for at most
    another ``grace_s``. Returns every PID that was signalled.
    """
    grace_s, poll_s = policy.grace_s, policy.poll_s
    signalled: set[int] = set()
    killed: set[int] = set()
    term_until = time.monotonic() + grace_s
    kill_until: float | None = None
    while True:
        alive = reap_lingering(shell)
        if not alive:
            return signalled
        now = time.monotonic()
        if kill_until is None and now >= term_until:
            kill_until = now + grace_s
        if kill_until is not None and now >= kill_until:
            return signalled
        # Parents before their children (the shell first, then by PID, the order
        # processes are made in): a shell signalled after its child could run its
        # next command in between (`sleep 600; echo late` printing `late`; seen
        # once in a loaded full run).
        for pid in sorted(alive, key=lambda pid: (pid != shell.pid, pid)):
            if kill_until is not None and pid not in killed:
                send(pid, policy.kill)
                killed.add(pid)
            elif pid not in signalled or pid == shell.pid:
                # The shell again each round: bash defers a SIGTERM that lands while
                # it forks, and would then run its next command once the child died.
                send(pid, policy.term)
                send(pid, signal.SIGCONT)
            signalled.add(pid)
        time.sleep(poll_s)
