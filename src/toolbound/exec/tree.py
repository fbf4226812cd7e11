"""One command's process tree: spawn it as a new tree the host can find, stop and reap.

``bash -c COMMAND`` starts in its own session with stdin from /dev/null and
two fresh pipes, with the call's marker in its environment (``exec.guard``).
Its members are found in /proc (``exec.members``) and stopped and reaped there
(``exec.stopping``); the sandbox (``exec.sandbox``) starts its wrapper the same
way and drives its tree through the same ``Tree`` protocol.

Pieces:
    Tree              what the Bash tool drives: a Shell here, a sandboxed one in exec.sandbox
    Shell             a spawned shell (its facts: exec.ident.ShellIdent) as a Tree
    Stdio             a job's extras: its stdin, a pseudo-terminal, variables
    Workdir           a folder in the workspace a command starts in
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
import termios
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from toolbound.exec.guard import MARKER_VAR, become_subreaper, next_marker
from toolbound.exec.ident import ShellIdent
from toolbound.exec.members import members
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
    grace, KILL, reap) and returns the PIDs it signalled. ``running`` lists its
    members now (host PIDs), from any thread, changing nothing: what a bulk
    stream lowers (``exec.niceness``).
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
    def running(self) -> set[int]: ...


class Shell(ShellIdent):
    """A spawned ``bash -c`` as a ``Tree``: its facts (``exec.ident``), stopped and reaped here."""

    __slots__ = ()

    def lingering(self) -> set[int]:
        return reap_lingering(self)

    def stop(self, policy: KillPolicy) -> set[int]:
        return stop_tree(self, policy)

    def running(self) -> set[int]:
        return members(self, note=False)[1]


@dataclass(frozen=True, slots=True)
class Stdio:
    """What a tree's shell gets besides two fresh output pipes (a job's; a Bash call
    takes the default: stdin from /dev/null, nothing else).

    ``stdin`` is the descriptor its stdin reads (the read end of the job's input
    pipe); ``terminal`` a pseudo-terminal's (master, slave): stdin, stdout and
    stderr all go to the slave, a copy of the master becomes the tree's stdout
    (its stderr an empty pipe), and the slave becomes the shell's controlling
    terminal when ``ctty`` (not in the sandbox, whose wrapper would be its
    session). ``env`` adds variables to its environment. The caller keeps and
    closes its own descriptors, once the spawn returned or failed.
    """

    stdin: int = subprocess.DEVNULL
    terminal: tuple[int, int] | None = None
    ctty: bool = True
    env: Mapping[bytes, bytes] = field(default_factory=dict)


NO_STDIO = Stdio()


@dataclass(frozen=True, slots=True)
class Workdir:
    """A folder below the workspace a command starts in: ``fd_path`` is
    ``/proc/self/fd/N`` of a descriptor the host holds on it (a child started here
    changes into it), ``real`` its path (a sandbox's ``--chdir``), ``shown`` the
    workspace-relative name the model sees."""

    fd_path: str
    real: Path
    shown: str


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


def spawn_shell(
    command: str,
    *,
    cwd: Path | str,
    keep_back: frozenset[bytes] = KEPT_BACK,
    stdio: Stdio = NO_STDIO,
) -> Shell:
    """Start ``bash -c command`` in ``cwd`` as the root of a new tree.

    New session, stdin from /dev/null (``stdio`` gives a job its own), all other
    descriptors closed, both pipes' write ends closed in the host once the
    child has them. The read ends are non-blocking so a reader can also wait
    for a stop signal. The variables named in ``keep_back`` are not in its
    environment. ``cwd`` may be a folder descriptor's ``/proc/self/fd/N``: the
    child changes into it before it closes the descriptors it does not keep.
    """
    bash = bash_path()
    return spawn_tree(
        lambda out, err: Launch(["bash", "-c", command], out, err, executable=bash),
        cwd=cwd,
        keep_back=keep_back,
        stdio=stdio,
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
    cwd: Path | str,
    keep_back: frozenset[bytes] = KEPT_BACK,
    stdio: Stdio = NO_STDIO,
) -> Shell:
    """Start ``launch_for(stdout_w, stderr_w)`` as the root of a new tree, as
    ``spawn_shell`` does; the sandbox hands its pipes to a wrapper this way.
    With ``stdio.terminal`` both are the terminal's slave and stdin is too."""
    become_subreaper()
    marker = next_marker()
    env = environment(keep_back)
    env.update(stdio.env)
    env[MARKER_VAR.encode()] = marker.encode()
    terminal = stdio.terminal
    err_r, err_w = os.pipe()
    if terminal is None:
        out_r, out_w = os.pipe()
        _widen_pipe(out_r)
        _widen_pipe(err_r)
        launch = launch_for(out_w, err_w)
        stdin = launch.stdin if stdio.stdin == subprocess.DEVNULL else stdio.stdin
    else:
        # The tree reads its own copy of the master; the caller keeps (and closes) both.
        out_r, out_w = os.dup(terminal[0]), terminal[1]
        launch = launch_for(out_w, out_w)
        stdin = out_w
        # Whoever holds the terminal's slave is a member, as a pipe's holder is.
        slave_name = os.ttyname(out_w)
    try:
        proc = subprocess.Popen(
            launch.argv,
            cwd=cwd,
            env=env,
            stdin=stdin,
            stdout=launch.stdout,
            stderr=launch.stderr,
            pass_fds=launch.pass_fds,
            start_new_session=True,
            close_fds=True,
            executable=launch.executable,
            preexec_fn=_take_terminal if terminal is not None and stdio.ctty else None,
        )
    except BaseException as err:
        os.close(err_r)
        os.close(out_r)
        if isinstance(err, OSError) and launch.executable is not None:
            _forget_bash()
        raise
    finally:
        if terminal is None:
            os.close(out_w)
        os.close(err_w)
    os.set_blocking(out_r, False)
    os.set_blocking(err_r, False)
    if terminal is None:
        held = [f"pipe:[{os.fstat(fd).st_ino}]" for fd in (out_r, err_r)]
        if stdio.stdin != subprocess.DEVNULL:
            held.append(f"pipe:[{os.fstat(stdio.stdin).st_ino}]")
    else:
        held = [slave_name, f"pipe:[{os.fstat(err_r).st_ino}]"]
    return Shell(proc, out_r, err_r, f"{MARKER_VAR}={marker}\0".encode(), frozenset(held))


def _take_terminal() -> None:
    """In the child, after ``setsid``: its stdin, the terminal, becomes its controlling
    terminal (so the terminal's Ctrl-C reaches its foreground, and /dev/tty opens)."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


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
