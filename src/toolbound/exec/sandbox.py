"""The Bash sandbox: a command's tree inside bubblewrap's namespaces (CONTRACT section 11).

Modes (``SandboxPolicy``):

- ``off``: no confinement; the tree tracking of ``exec.members`` finds the
  tree and ``exec.stopping`` stops it.
- ``read-only``: the whole file system read-only, a private ``/tmp`` (a tmpfs
  that dies with the call), a minimal ``/dev`` and the sandbox's own ``/proc``.
- ``workspace-write``: the same, plus the workspace and this session's scratch
  dir writable.
- ``network=False`` (with any mode) adds a new network namespace whose only
  interface is its own loopback, up. Even with ``off`` that needs bubblewrap,
  so the command then also gets the PID namespace (no file confinement).

Why bubblewrap and not Landlock: Landlock (ABI 7 on this kernel) can deny
writes outside a few folders, but not give a private ``/tmp``, its own
loopback (its network rules are per port, so a server inside would be refused
too) or a PID namespace, and it must be applied by the process itself: a
``preexec_fn`` leaves the ``vfork`` path, and a helper interpreter costs more
than all of bwrap. bwrap is a small, well-kept setuid-free tool that gives new
user, mount, PID and network namespaces in one exec (figures: bench/sandbox.py).

How a confined call runs::

    host ── bwrap (monitor, host's namespaces)
              └── keeper: PID 1 of the new namespace (bash, then `sleep infinity`)
                    └── the shell: bash -c COMMAND ── its descendants …

- **Exit status.** bwrap reports a signal as 128+n, so ``exit 137`` and a
  SIGKILL would look alike. The keeper forks the shell and then execs
  ``sleep``, which never reaps: after the shell exits it stays a zombie, and the
  host reads its exact wait status from ``/proc/PID/stat`` (``exit_code``).
  The shell starts the command only once the keeper has become ``sleep`` (a
  pipe the keeper closes as it execs, then its ``comm``), so bash's own
  reaping can never take the status first.
- **No escapee, by construction.** Every process of the namespace descends from
  the keeper or is reparented to it (``setsid`` and double forks included), so
  the walk from the keeper finds them all; SIGKILL to the keeper makes the
  kernel kill the whole namespace at once. ``--die-with-parent`` and the host's
  guard (``exec.guard``) kill it when the host dies.
- **Stopping.** SIGTERM to every member but the keeper, a grace in which they
  exit, then SIGKILL to the keeper; the monitor then exits and is reaped.
  ``--die-with-parent`` follows the thread that spawned bwrap: spawn from a
  thread that lives as long as the call (the event loop's, as Bash does).
- **Fails closed.** bwrap's own error messages and the keeper's "started" line
  (the shell's PID) share one pipe: anything but a PID there means bwrap could
  not build the sandbox, and the call is ``TOOL_SANDBOX_UNAVAILABLE`` with that
  reason; the command never ran, confined or not.

Pieces:
    SandboxMode, SANDBOX_MODES, SandboxPolicy, UNCONFINED   the mode and the network, one value
    find_bwrap      $TOOLBOUND_BWRAP, else ``bwrap`` on PATH
    bwrap_args      policy -> bwrap's options (pure)
    SandboxedShell  a confined tree (``exec.tree.Tree``)
    spawn           start a command's tree, confined or not: the one way in (Bash, jobs)
    probe, describe what ``serve`` announces
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

from toolbound.exec.members import children_of, read_proc
from toolbound.exec.stopping import send
from toolbound.exec.tree import Launch, Shell, Tree, spawn_shell, spawn_tree
from toolbound.results import ErrorCode, ToolError
from toolbound.scratch import Scratch

SandboxMode = Literal["off", "read-only", "workspace-write"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("off", "read-only", "workspace-write")

BWRAP_VAR = "TOOLBOUND_BWRAP"
INSTALL_HINT = "apt-get install bubblewrap"

# How long bwrap may take to build the namespaces before the call gives up.
SETUP_TIMEOUT_S = 30.0

# PID 1 of the sandbox. $1 the command; $2 $3 the stdout and stderr pipes; $4 $5
# the gate, a pipe whose write end only the keeper holds. The shell blocks on
# the gate until the keeper closes it as it execs `sleep` (a non-reaper), then
# waits out that exec, so bash's own reaping never takes the shell's status
# (blocking first: a spin alone measured 30.7 ms against 21.6 ms per call on a
# loaded machine). `trap -` undoes the SIGINT/SIGQUIT ignoring of `&` jobs.
# Why bash, at 1-2 ms of CPU per call with `sleep` (measured against a
# throwaway C keeper, which saved 1.6-1.9 ms of CPU but only 1.5 ms of the
# elapsed time at load 9-10): bwrap's own PID 1 and --json-status-fd report a
# signal as 128+n too (0.8 to 0.11); dash, a third of bash's start-up, reaps
# nothing it does not wait for, but knows only fds 0-9 by number (the pipes
# come above 2, where bwrap's monitor closes its copies, so often above 9) and
# cannot undo the `&` ignoring (`env --default-signal` would cost an exec).
KEEPER = (
    'out=$2 err=$3 gr=$4 gw=$5; { trap - INT QUIT; exec {gw}>&-; read -r -u "$gr" _; '
    "exec {gr}<&-; until read -r c </proc/1/comm && [[ $c == sleep ]]; do :; done; "
    'exec bash -c "$1" </dev/null >&"$out" 2>&"$err" {out}>&- {err}>&-; } & '
    'exec {gr}<&-; echo "$!" >&2; '
    "exec sleep infinity </dev/null >/dev/null 2>&1 {out}>&- {err}>&- {gw}>&-"
)


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """Where a Bash command may write and whether it has a network.

    ``bwrap`` is the bubblewrap binary found when the policy was made (None:
    not found); it is only used when ``confined``.
    """

    mode: SandboxMode = "off"
    network: bool = True
    bwrap: str | None = None

    @classmethod
    def create(cls, mode: str = "off", *, network: bool = True) -> SandboxPolicy:
        """A policy for ``mode``; ValueError for a mode that does not exist."""
        if mode not in SANDBOX_MODES:
            raise ValueError(f"sandbox must be one of {', '.join(SANDBOX_MODES)} (got {mode!r})")
        policy = cls(mode, network)
        return cls(policy.mode, network, find_bwrap()) if policy.confined else policy

    @property
    def confined(self) -> bool:
        """True when commands run under bubblewrap."""
        return self.mode != "off" or not self.network

    def describe(self) -> str:
        """``workspace-write, no network`` …"""
        return f"{self.mode}, {'network' if self.network else 'no network'}"


# The default: commands run as they are.
UNCONFINED = SandboxPolicy()


def find_bwrap() -> str | None:
    """``$TOOLBOUND_BWRAP`` when set (even naming a missing file), else ``bwrap`` on PATH."""
    return os.environ.get(BWRAP_VAR) or shutil.which("bwrap")


def bwrap_args(policy: SandboxPolicy, *, cwd: Path, places: Sequence[Path]) -> list[str]:
    """bwrap's options for ``policy`` (before ``--`` and the command); ``places``
    are the workspace and the scratch dir, writable under ``workspace-write``."""
    args = ["--unshare-user", "--unshare-pid", "--die-with-parent", "--as-pid-1"]
    if not policy.network:
        args.append("--unshare-net")
    if policy.mode == "off":
        # Only the network and the PID namespace: the files as they are.
        args += ["--bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc"]
    else:
        # A fresh /dev holds null, zero, random, tty…, never the host's disks.
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        # After the tmpfs, so a workspace under /tmp is still there: writable
        # under workspace-write, read-only under read-only.
        bind = "--bind" if policy.mode == "workspace-write" else "--ro-bind"
        for path in places:
            args += [bind, str(path), str(path)]
    return [*args, "--chdir", str(cwd)]


def unavailable(policy: SandboxPolicy, reason: str) -> ToolError:
    """The error of every Bash call whose sandbox cannot be built: the reason and the fix."""
    return ToolError(
        ErrorCode.SANDBOX_UNAVAILABLE,
        f"The Bash sandbox ({policy.describe()}) was requested but is not available: "
        f"{reason}. The command was not run. Fix: install bubblewrap ({INSTALL_HINT}; "
        f"${BWRAP_VAR} may name the binary) and allow user namespaces, or run toolbound "
        "with --sandbox off (and without --no-network) to run commands unconfined.",
    )


@dataclass(slots=True)
class SandboxedShell:
    """A command's tree inside bubblewrap (``exec.tree.Tree``); see the module docstring."""

    monitor: Shell
    keeper_pid: int
    shell_pid: int
    pidfd: int
    status: int | None = None
    torn_down: bool = False

    @property
    def stdout_fd(self) -> int:
        return self.monitor.stdout_fd

    @property
    def stderr_fd(self) -> int:
        return self.monitor.stderr_fd

    @property
    def pid(self) -> int:
        return self.shell_pid

    @property
    def returncode(self) -> int | None:
        if self.status is None:
            return None
        if os.WIFSIGNALED(self.status):
            return -os.WTERMSIG(self.status)
        return os.waitstatus_to_exitcode(self.status)

    def wait(self) -> int:
        """Block until the shell exited; its exact status then."""
        select.select([self.pidfd], [], [])
        self._take_status()
        return cast(int, self.returncode)

    def _take_status(self) -> None:
        if self.status is not None:
            return
        stat = read_proc(f"/proc/{self.shell_pid}/stat")
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 49 and fields[0] in (b"Z", b"X"):
            self.status = int(fields[49])

    def _alive(self) -> set[int]:
        """Members still running: every descendant of the keeper but zombies."""
        found: set[int] = set()
        todo = [self.keeper_pid]
        while todo:
            for child in children_of(todo.pop()):
                if child not in found:
                    found.add(child)
                    todo.append(child)
        return {pid for pid in found if _state(pid) not in (b"Z", b"X", b"")}

    def lingering(self) -> set[int]:
        """The members still running; with none left the namespace is torn down.
        (procfs reads and a wait for an exiting monitor: cheap enough for the loop.)"""
        alive = self._alive()
        if not alive:
            self._tear_down(grace_s=1.0)
        return alive

    def stop(self, *, grace_s: float, poll_s: float) -> set[int]:
        """SIGTERM to every member, ``grace_s`` for them to exit, then SIGKILL to
        the whole namespace (its PID 1); blocks, bounded. Returns the PIDs signalled."""
        signalled: set[int] = set()
        term_until = time.monotonic() + grace_s
        while not self.torn_down:
            alive = self._alive()
            if not alive or time.monotonic() >= term_until:
                signalled |= alive
                break
            for pid in alive - signalled:
                send(pid, signal.SIGTERM)
                send(pid, signal.SIGCONT)
            signalled |= alive
            time.sleep(poll_s)
        self._tear_down(grace_s=grace_s)
        return signalled

    def _tear_down(self, *, grace_s: float) -> None:
        """Read the shell's status if it has one, kill the namespace, reap the monitor."""
        if self.torn_down:
            return
        self.torn_down = True
        self._take_status()
        if self.status is None:
            # Still running: the namespace's SIGKILL is what ends it.
            self.status = signal.SIGKILL.value
        send(self.keeper_pid, signal.SIGKILL)
        _reap(self.monitor, grace_s)
        os.close(self.pidfd)


def _state(pid: int) -> bytes:
    stat = read_proc(f"/proc/{pid}/stat")
    return stat[stat.rfind(b")") + 2 :][:1]


def _ns_pid(pid: int) -> int | None:
    """The PID a process has in its innermost PID namespace (``NSpid``)."""
    for line in read_proc(f"/proc/{pid}/status").splitlines():
        if line.startswith(b"NSpid:"):
            return int(line.split()[-1])
    return None


def _reap(monitor: Shell, grace_s: float) -> None:
    """Reap the monitor, which exits as soon as the namespace is gone; SIGKILL it
    after ``grace_s``. Waits on a pidfd: ``Popen.wait(timeout)`` polls with
    sleeps, which cost a confined ``true`` 7.5 ms here."""
    try:
        pidfd = os.pidfd_open(monitor.pid)
    except OSError:  # already reaped, or no pidfd: wait plainly
        pidfd = None
    if pidfd is not None:
        try:
            ready, _, _ = select.select([pidfd], [], [], grace_s)
        finally:
            os.close(pidfd)
        if not ready:
            monitor.proc.kill()
    monitor.proc.wait()


async def spawn(command: str, *, cwd: Path, policy: SandboxPolicy, scratch: Scratch) -> Tree:
    """Start ``bash -c command`` in ``cwd`` as a new tree under ``policy``.

    The one way a command starts (the Bash tool; background jobs later), so no
    caller can skip the sandbox. ``ToolError(TOOL_SANDBOX_UNAVAILABLE)`` when
    the sandbox is requested but cannot be built; OSError when bash itself
    cannot start unconfined.
    """
    if not policy.confined:
        return spawn_shell(command, cwd=cwd)
    bwrap = policy.bwrap
    if bwrap is None:
        raise unavailable(policy, "bubblewrap (bwrap) is not installed (not found on PATH)")
    places = [cwd, scratch.dir] if scratch.ensure() else [cwd]
    options = bwrap_args(policy, cwd=cwd, places=places)
    said_r, said_w = os.pipe()
    gate = os.pipe()

    def launch(out: int, err: int) -> Launch:
        fds = (out, err, *gate)
        argv = [bwrap, *options, "--", "bash", "-c", KEEPER, "toolbound-sandbox", command]
        return Launch([*argv, *map(str, fds)], subprocess.DEVNULL, said_w, pass_fds=fds)

    try:
        monitor = spawn_tree(launch, cwd=cwd)
    except OSError as err:
        os.close(said_r)
        raise unavailable(policy, f"{bwrap} could not be run ({err.strerror or err})") from err
    finally:
        for fd in (said_w, *gate):
            os.close(fd)
    try:
        said = await _first_line(said_r, SETUP_TIMEOUT_S)
        return _attach(monitor, said, policy)
    except BaseException:
        _abandon(monitor)
        raise
    finally:
        os.close(said_r)


async def _first_line(fd: int, timeout_s: float) -> bytes:
    """What arrives on ``fd`` up to its first newline or EOF, bounded."""
    loop = asyncio.get_running_loop()
    os.set_blocking(fd, False)
    data = bytearray()
    done: asyncio.Future[None] = loop.create_future()

    def on_readable() -> None:
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            return
        data.extend(chunk)
        if (not chunk or b"\n" in data) and not done.done():
            done.set_result(None)

    loop.add_reader(fd, on_readable)
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done, timeout_s)
    finally:
        loop.remove_reader(fd)
    return bytes(data)


def _attach(monitor: Shell, said: bytes, policy: SandboxPolicy) -> SandboxedShell:
    """The started sandbox's shell, found by the PID its keeper announced."""
    text = said.decode(errors="replace").strip()
    if not text.isdigit():
        why = text.splitlines()[0] if text else "bwrap exited without saying why"
        raise unavailable(policy, f"bwrap could not create the sandbox ({why})")
    ns_pid = int(text)
    for keeper in children_of(monitor.pid):
        for child in children_of(keeper):
            if _ns_pid(child) == ns_pid:
                try:
                    pidfd = os.pidfd_open(child)
                except OSError as err:
                    raise unavailable(policy, "this kernel has no pidfd_open (Linux 5.3+)") from err
                return SandboxedShell(monitor, keeper, child, pidfd)
    raise unavailable(policy, "the sandbox's shell vanished as it started")


def _abandon(monitor: Shell) -> None:
    """A sandbox that failed or was cancelled while starting: kill it, reap it."""
    for keeper in children_of(monitor.pid):
        send(keeper, signal.SIGKILL)
    send(monitor.pid, signal.SIGKILL)
    _reap(monitor, 1.0)
    for fd in (monitor.stdout_fd, monitor.stderr_fd):
        os.close(fd)


def probe(policy: SandboxPolicy) -> str | None:
    """Why ``policy``'s sandbox cannot be built here, or None when it can (runs ``true``)."""
    if not policy.confined:
        return None
    if policy.bwrap is None:
        return "bubblewrap (bwrap) is not installed (not found on PATH)"
    cwd = Path.cwd()
    try:
        proc = subprocess.run(
            [policy.bwrap, *bwrap_args(policy, cwd=cwd, places=[cwd]), "--", "true"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=SETUP_TIMEOUT_S,
            check=False,
        )
    except OSError as err:
        return f"{policy.bwrap} could not be run ({err.strerror or err})"
    except subprocess.TimeoutExpired:
        return f"bwrap did not start the sandbox within {SETUP_TIMEOUT_S:g} s"
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines()
        return f"bwrap could not create the sandbox ({lines[0] if lines else proc.returncode})"
    return None


def describe(policy: SandboxPolicy) -> str:
    """The line ``serve`` prints: the sandbox in force, or why the requested one is not."""
    if not policy.confined:
        return "Bash sandbox: off (commands run unconfined, with the network)"
    reason = probe(policy)
    if reason is not None:
        return (
            f"Bash sandbox: {policy.describe()} requested but UNAVAILABLE: {reason}; every "
            "Bash call fails with TOOL_SANDBOX_UNAVAILABLE"
        )
    return f"Bash sandbox: {policy.describe()} (bubblewrap {policy.bwrap})"
