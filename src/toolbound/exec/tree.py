"""One command's process tree: spawn it, find every member, stop it, reap it.

``bash -c COMMAND`` starts in its own session with stdin from /dev/null and
two fresh pipes. A command can leave the shell's session (``setsid``) or
double-fork so that its daemon is reparented away from the shell, and then a
``killpg`` misses it. So the host finds members another way:

- The host process is a *child subreaper* (``PR_SET_CHILD_SUBREAPER``, set once
  per process): an orphan in any tree it started is reparented to the host,
  never to init, so every live member is a descendant of the host.
- Every shell gets a marker in its environment, ``TOOLBOUND_CALL=<host>.<n>``,
  which its descendants inherit. A member is the shell, or a child of the host
  that carries the call's marker, is in the shell's session, or holds one of
  the call's pipes, or a descendant of any of these. Children of the host
  that belong to other calls or to other parts of the host (an ``rg`` it
  runs) match none of these and are never touched, never reaped. The one
  process this misses is one that clears its environment, leaves the session
  *and* closes the pipes (``env -i setsid cmd >/dev/null 2>&1 &``): a cgroup
  would catch it, but moving each shell into one cost about 5 ms here, more
  than the whole spawn.

Stopping is SIGTERM to every member, a grace period in which members are
reaped as they die, SIGKILL to whatever is left (including members forked
meanwhile), then reaping until none is left, each wait bounded.

If the host dies, the trees die with it: a small guard process, started once
per host process, holds the read end of a pipe whose write end only the host
holds; at EOF it SIGKILLs every process carrying this host's marker. That
covers the whole tree (not only the shell, which is all ``PR_SET_PDEATHSIG``
reaches) and keeps each spawn on the fast ``vfork`` path, which a
``preexec_fn`` would forfeit (measured here: 2.0 ms -> 6.2 ms per spawn).

Pieces:
    become_subreaper  make this process the child subreaper (once)
    Tree              what the Bash tool drives: a Shell here, a sandboxed one in exec.sandbox
    Shell             a spawned shell: Popen, its two pipe read ends, its marker
    Launch, spawn_tree  start any argv as a new tree (the sandbox starts bwrap so)
    spawn_shell       start ``bash -c COMMAND`` as a new tree
    children_of, read_proc, send   procfs and signal helpers the sandbox shares
    members           a tree's PIDs, unreaped ones included: the host's children, and all
    stop_tree         SIGTERM, grace, SIGKILL, reap; returns the PIDs signalled
    reap_lingering    reap members that already exited (no signal)
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import itertools
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

MARKER_VAR = "TOOLBOUND_CALL"
_PR_SET_CHILD_SUBREAPER = 36
_F_SETPIPE_SZ = 1031
_PIPE_BYTES = 1024 * 1024

_lock = threading.Lock()
_state: dict[str, object] = {}
_call_numbers = itertools.count()


def become_subreaper() -> bool:
    """Make this process the child subreaper; True if it is one (set once)."""
    with _lock:
        done = _state.get("subreaper")
        if isinstance(done, bool):
            return done
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            ok = bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
        except (OSError, AttributeError):
            ok = False
        _state["subreaper"] = ok
        return ok


# The guard's program: wait for the host to go away, then kill its trees.
# Several rounds, because a member may fork while the first round runs.
_GUARD = """
import os, signal, sys, time
prefix = sys.argv[1].encode()
sys.stdin.buffer.read()
for _ in range(10):
    found = False
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/" + name + "/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if prefix in env:
            found = True
            try:
                os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass
    if not found:
        break
    time.sleep(0.05)
"""


def _host_token() -> str:
    """This process's marker prefix, and its guard, started on first use."""
    with _lock:
        token = _state.get("token")
        if isinstance(token, str) and _state.get("pid") == os.getpid():
            return token
        token = f"{os.getpid()}x{secrets.token_hex(4)}"
        _state["token"] = token
        _state["pid"] = os.getpid()
        _start_guard(f"{MARKER_VAR}={token}.")
        return token


def _start_guard(prefix: str) -> None:
    read_end, write_end = os.pipe()
    try:
        guard = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _GUARD, prefix],
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        os.close(write_end)
        return
    finally:
        os.close(read_end)
    # The write end stays open (and non-inheritable) for the life of the host.
    _state["guard"] = (guard, write_end)
    _state["guard_pid"] = guard.pid


class Tree(Protocol):
    """One command's running tree, as the Bash tool (and a job runner) drives it.

    ``pid`` is the shell's PID as the host sees it (a pidfd on it tells its
    exit); ``returncode`` follows ``Popen`` (negative: killed by that signal)
    once ``wait`` returned. ``lingering`` reaps what already exited and returns
    the members still running; ``stop`` stops them all (TERM, grace, KILL, reap)
    and returns the PIDs it signalled.
    """

    @property
    def stdout_fd(self) -> int: ...
    @property
    def stderr_fd(self) -> int: ...
    @property
    def pid(self) -> int: ...
    @property
    def returncode(self) -> int | None: ...
    def wait(self) -> int: ...
    def lingering(self) -> set[int]: ...
    def stop(self, *, grace_s: float, poll_s: float) -> set[int]: ...


@dataclass(slots=True)
class Shell:
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

    def lingering(self) -> set[int]:
        return reap_lingering(self)

    def stop(self, *, grace_s: float, poll_s: float) -> set[int]:
        return stop_tree(self, grace_s=grace_s, poll_s=poll_s)


@dataclass(frozen=True, slots=True)
class Launch:
    """How to start a tree's root, given the write ends of its two output pipes."""

    argv: list[str]
    stdout: int
    stderr: int
    stdin: int = subprocess.DEVNULL
    pass_fds: tuple[int, ...] = ()


def spawn_shell(command: str, *, cwd: Path) -> Shell:
    """Start ``bash -c command`` in ``cwd`` as the root of a new tree.

    New session, stdin from /dev/null, all other descriptors closed, both
    pipes' write ends closed in the host once the child has them. The read
    ends are non-blocking so a reader can also wait for a stop signal.
    """
    return spawn_tree(lambda out, err: Launch(["bash", "-c", command], out, err), cwd=cwd)


def spawn_tree(launch_for: Callable[[int, int], Launch], *, cwd: Path) -> Shell:
    """Start ``launch_for(stdout_w, stderr_w)`` as the root of a new tree, as
    ``spawn_shell`` does; the sandbox hands its pipes to a wrapper this way."""
    become_subreaper()
    marker = f"{_host_token()}.{next(_call_numbers)}"
    env = dict(os.environ)
    env[MARKER_VAR] = marker
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    _widen_pipe(out_r)
    _widen_pipe(err_r)
    launch = launch_for(out_w, err_w)
    try:
        proc = subprocess.Popen(
            launch.argv,
            cwd=cwd,
            env=env,
            stdin=launch.stdin,
            stdout=launch.stdout,
            stderr=launch.stderr,
            pass_fds=launch.pass_fds,
            start_new_session=True,
            close_fds=True,
        )
    except BaseException:
        for fd in (out_r, err_r):
            os.close(fd)
        raise
    finally:
        os.close(out_w)
        os.close(err_w)
    os.set_blocking(out_r, False)
    os.set_blocking(err_r, False)
    pipes = frozenset(f"pipe:[{os.fstat(fd).st_ino}]" for fd in (out_r, err_r))
    return Shell(proc, out_r, err_r, f"{MARKER_VAR}={marker}\0".encode(), pipes)


def _widen_pipe(fd: int) -> None:
    """Ask for a 1 MB pipe buffer: a fast writer then wakes the reader far less
    often (measured: about 1.4x the throughput of the 64 KB default). Optional."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_BYTES)


def read_proc(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def _host_children(shell: Shell) -> list[int]:
    """The host's children that can be members: the shell sits with the thread
    that forked it, and orphans are reparented to the thread group leader
    (measured). Reading just those two keeps a scan cheap in a host with many
    threads; if either thread is gone, every thread is read."""
    found: list[int] = []
    for tid in {shell.spawner_tid, shell.host_pid}:
        try:
            with open(f"/proc/{shell.host_pid}/task/{tid}/children", "rb") as f:
                found.extend(int(c) for c in f.read().split())
        except OSError:
            return children_of(shell.host_pid)
    return found


def children_of(pid: int) -> list[int]:
    """The PIDs whose parent is ``pid`` (any of its threads)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for tid in tids:
        found.extend(int(c) for c in read_proc(f"/proc/{pid}/task/{tid}/children").split())
    return found


def _carries(pid: int, marker: bytes) -> bool:
    env = read_proc(f"/proc/{pid}/environ")
    # The marker ends with NUL; an entry starts the block or follows a NUL.
    return env.startswith(marker) or (b"\0" + marker) in env


def _session_of(pid: int) -> int | None:
    """The session id in /proc/PID/stat (a zombie still has one)."""
    stat = read_proc(f"/proc/{pid}/stat")
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[3]) if len(fields) > 3 else None


def _holds(pid: int, pipes: frozenset[str]) -> bool:
    """True if ``pid`` has one of ``pipes`` open."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}") in pipes:
                return True
    return False


def _is_member(shell: Shell, pid: int) -> bool:
    if pid == _state.get("guard_pid"):
        return False  # always a child of the host, never a member: skip its /proc reads
    return (
        pid == shell.pid
        or pid in shell.known
        or _carries(pid, shell.marker)
        # The shell's own session: members that never called setsid, dead or alive.
        or _session_of(pid) == shell.pid
        # One that cleared its environment and left the session but kept the
        # output pipes (``env -i setsid cmd &``).
        or _holds(pid, shell.pipes)
    )


def members(shell: Shell) -> tuple[set[int], set[int]]:
    """``(top, every)``: members that are children of the host, and all members.

    Exited members not yet reaped (zombies) are included: they are gone only
    once reaped.
    """
    top = {pid for pid in _host_children(shell) if _is_member(shell, pid)}
    every = set(top)
    todo = list(top)
    while todo:
        for child in children_of(todo.pop()):
            if child not in every:
                every.add(child)
                todo.append(child)
    # Only what this scan saw: a PID seen long ago may have been reused since.
    shell.known = every
    return top, every


def _reap(shell: Shell, top: set[int]) -> set[int]:
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


def reap_lingering(shell: Shell) -> set[int]:
    """Reap exited members; return the members still running."""
    top, every = members(shell)
    return every - _reap(shell, top)


def send(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def stop_tree(shell: Shell, *, grace_s: float, poll_s: float) -> set[int]:
    """Stop every member of the tree and reap the host's share; blocks, bounded.

    SIGTERM (and SIGCONT, so a stopped member can act on it) to each member,
    members reaped as they exit; after ``grace_s`` SIGKILL to whatever is left,
    new members included; reaping then continues for at most another
    ``grace_s``. Returns every PID that was signalled.
    """
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
        for pid in alive:
            if kill_until is not None and pid not in killed:
                send(pid, signal.SIGKILL)
                killed.add(pid)
            elif pid not in signalled:
                send(pid, signal.SIGTERM)
                send(pid, signal.SIGCONT)
            signalled.add(pid)
        time.sleep(poll_s)
