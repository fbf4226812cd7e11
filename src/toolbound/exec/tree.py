"""One command's process tree: spawn it as a new tree the host can find, stop and reap.

``bash -c COMMAND`` starts in its own session with stdin from /dev/null and
two fresh pipes, with the call's marker in its environment (``exec.guard``).
Its members are found in /proc (``exec.members``) and stopped and reaped there
(``exec.stopping``); the sandbox (``exec.sandbox``) starts its wrapper the same
way and drives its tree through the same ``Tree`` protocol.

Pieces:
    Tree              what the Bash tool drives: a Shell here, a sandboxed one in exec.sandbox
    Shell             a spawned shell (its facts: exec.ident.ShellIdent) as a Tree
    Launch, spawn_tree  start any argv as a new tree (the sandbox starts bwrap so)
    spawn_shell       start ``bash -c COMMAND`` as a new tree
    bash_path         the bash on PATH, looked up once per value of PATH
    KEPT_BACK         toolbound's own secrets, never in a command's environment
    environment       the host's environment as bytes, copied cheaply, secrets kept back
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from toolbound.exec.guard import MARKER_VAR, become_subreaper, next_marker
from toolbound.exec.ident import ShellIdent
from toolbound.exec.stopping import KillPolicy, reap_lingering, stop_tree

# The server's own variables (the bearer token, the store's URL with its password),
# removed from every command's environment whatever else is kept back (CONTRACT 16).
KEPT_BACK: frozenset[bytes] = frozenset({b"TOOLBOUND_TOKEN", b"TOOLBOUND_STORE"})

_F_SETPIPE_SZ = 1031
_PIPE_BYTES = 1024 * 1024


class Tree(Protocol):
    """One command's running tree, as the Bash tool (and a job runner) drives it.

    ``pid`` is the shell's PID as the host sees it (a pidfd on it tells its
    exit); ``returncode`` follows ``Popen`` (negative: killed by that signal)
    once ``wait`` returned. ``lingering`` reaps what already exited and returns
    the members still running; ``stop`` stops them all as ``policy`` says (TERM,
    grace, KILL, reap) and returns the PIDs it signalled.
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
    def stop(self, policy: KillPolicy) -> set[int]: ...


class Shell(ShellIdent):
    """A spawned ``bash -c`` as a ``Tree``: its facts (``exec.ident``), stopped and reaped here."""

    __slots__ = ()

    def lingering(self) -> set[int]:
        return reap_lingering(self)

    def stop(self, policy: KillPolicy) -> set[int]:
        return stop_tree(self, policy)


@dataclass(frozen=True, slots=True)
class Launch:
    """How to start a tree's root, given the write ends of its two output pipes."""

    argv: list[str]
    stdout: int
    stderr: int
    stdin: int = subprocess.DEVNULL
    pass_fds: tuple[int, ...] = ()
    # The program's path when known (``argv[0]`` stays what the program sees).
    executable: str | None = None


def spawn_shell(command: str, *, cwd: Path, keep_back: frozenset[bytes] = KEPT_BACK) -> Shell:
    """Start ``bash -c command`` in ``cwd`` as the root of a new tree.

    New session, stdin from /dev/null, all other descriptors closed, both
    pipes' write ends closed in the host once the child has them. The read
    ends are non-blocking so a reader can also wait for a stop signal. The
    variables named in ``keep_back`` are not in its environment.
    """
    bash = bash_path()
    return spawn_tree(
        lambda out, err: Launch(["bash", "-c", command], out, err, executable=bash),
        cwd=cwd,
        keep_back=keep_back,
    )


# PATH's value and the bash found on it: (None, None) until the first lookup.
_bash_found: tuple[str | None, str | None] = (None, None)


def bash_path() -> str | None:
    """The bash on PATH, looked up once per value of PATH (None: not found).

    Given its path, exec finds bash at once; given only the name, the child
    tries every PATH entry before it in turn (measured: about 50 us per spawn
    here, with eight entries before /usr/bin).
    """
    global _bash_found
    path = os.environ.get("PATH", os.defpath)
    seen, found = _bash_found
    if seen != path:
        found = shutil.which("bash", path=path)
        _bash_found = (path, found)
    return found


def _forget_bash() -> None:
    """bash could not be started from where it was found: look again next time."""
    global _bash_found
    _bash_found = (None, None)


def spawn_tree(
    launch_for: Callable[[int, int], Launch],
    *,
    cwd: Path,
    keep_back: frozenset[bytes] = KEPT_BACK,
) -> Shell:
    """Start ``launch_for(stdout_w, stderr_w)`` as the root of a new tree, as
    ``spawn_shell`` does; the sandbox hands its pipes to a wrapper this way."""
    become_subreaper()
    marker = next_marker()
    env = environment(keep_back)
    env[MARKER_VAR.encode()] = marker.encode()
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
            executable=launch.executable,
        )
    except BaseException as err:
        for fd in (out_r, err_r):
            os.close(fd)
        if isinstance(err, OSError) and launch.executable is not None:
            _forget_bash()
        raise
    finally:
        os.close(out_w)
        os.close(err_w)
    os.set_blocking(out_r, False)
    os.set_blocking(err_r, False)
    pipes = frozenset(f"pipe:[{os.fstat(fd).st_ino}]" for fd in (out_r, err_r))
    return Shell(proc, out_r, err_r, f"{MARKER_VAR}={marker}\0".encode(), pipes)


def environment(keep_back: frozenset[bytes] = KEPT_BACK) -> dict[bytes, bytes]:
    """A copy of the host's environment as bytes, as exec takes them (nothing to
    decode here or encode in Popen), without the variables named in ``keep_back``.

    ``dict(os.environb)`` goes through the mapping's Python methods, two calls
    per variable (34 us for 35 variables, timeit); CPython's ``os.environb``
    keeps the very bytes in a plain dict, copied here in C (0.4 us). Anything
    else falls back to the mapping. Keeping back costs one lookup per name kept.
    """
    data = getattr(os.environb, "_data", None)
    env = dict(data) if type(data) is dict else dict(os.environb)
    for name in keep_back:
        env.pop(name, None)
    return env


def _widen_pipe(fd: int) -> None:
    """Ask for a 1 MB pipe buffer: a fast writer then wakes the reader far less
    often (measured: about 1.4x the throughput of the 64 KB default). Optional."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_BYTES)
