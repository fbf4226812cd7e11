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
  After a clean exit (no member left) the monitor is reaped in the background,
  on the loop (``reap_later``): the kernel's teardown of the namespaces is off
  the call's path; ``settle`` waits for those reaps.
- **Built ahead.** A Bash call takes its session's warm spare
  (``exec.spare``, whose ``spawn`` is the one way a command starts): the same
  sandbox, built before the call, whose shell waits for its command. Jobs
  build theirs at the call (``spawn`` here).
- **Fails closed.** bwrap's own error messages and the keeper's "started" line
  (the shell's PID) share one pipe: anything but a PID there means bwrap could
  not build the sandbox, and the call is ``TOOL_SANDBOX_UNAVAILABLE`` with that
  reason; the command never ran, confined or not.

What a confined command sees (CONTRACT sections 11 and 16):

- **Never the server's own files.** The data dir (and a store kept elsewhere)
  is masked by an empty read-only tmpfs wherever it lives, then this session's scratch
  dir alone is bound back, read-only: the command reads its spill files and
  job logs, only the host writes them.
- **No host socket without the network.** With ``network=False`` the usual
  socket folders (``/run``, ``/var/run``, ``/tmp/.X11-unix``, a PostgreSQL
  store's socket folder) are masked too; abstract sockets belong to the host's
  network namespace, which the command has left.
- **Bounded.** ``Limits.sandbox_max_processes`` (``ulimit -u``, and a pids
  cgroup where the host may make one: ``exec.pids``), ``sandbox_memory_bytes``
  (``ulimit -v``, per process) and ``sandbox_tmp_bytes`` (the private /tmp's
  size); ``bound_notice`` tells the model which one a failed command met.
- **Mounts nest by depth.** Binds and masks are applied shallowest first, so
  a workspace inside the data dir (or the data dir inside the workspace) ends
  up as the deeper one says.

Pieces:
    SandboxMode, SANDBOX_MODES, SandboxPolicy, UNCONFINED   what a command may see and do, one value
    SOCKET_DIRS     the socket folders masked without the network
    store_socket_dirs  the socket folder a postgresql:// URL names
    find_bwrap      $TOOLBOUND_BWRAP, else ``bwrap`` on PATH
    bwrap_args      policy -> bwrap's options (pure)
    bound_notice    which bound a failed confined command met, for its result
    SandboxedShell  a confined tree (``exec.tree.Tree``)
    spawn           start a command's tree, confined or not, its sandbox built at the call
    launch, Launched  start bwrap with a keeper; settle() waits for its "started" line
    reap_later, reap_now, settle  reap a monitor in the background or now; wait for those
    running_loop    the event loop running in this thread, if any
    probe, describe what ``serve`` announces
    serve_default   ``serve``'s mode when none is asked for
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import resource
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, cast
from urllib.parse import parse_qs, unquote, urlsplit

from toolbound.exec.members import children_of, read_proc
from toolbound.exec.pids import PidsGroup, pids_group
from toolbound.exec.stopping import KillPolicy, send
from toolbound.exec.tree import (
    KEPT_BACK,
    NO_STDIO,
    Launch,
    Shell,
    Stdio,
    Tree,
    Workdir,
    spawn_shell,
    spawn_tree,
)
from toolbound.limits import DEFAULT_LIMITS, human_size
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
# $6 $7 are the process and memory bounds (``ulimit -u``, ``ulimit -v`` in KiB), $8
# a descriptor on its pids group's `tasks` (empty without one): writing 0 there
# moves the keeper into the group first, so all it forks is born inside.
# The command's stdin is the keeper's own (/dev/null, or a job's input), kept
# as {in} since a `&` job's stdin would be /dev/null.
KEEPER = (
    'out=$2 err=$3 gr=$4 gw=$5 pg=$8; if [[ $pg ]]; then echo 0 >&"$pg" || exit; '
    'exec {pg}>&-; fi; ulimit -u "$6"; ulimit -v "$7"; exec {in}<&0; '
    '{ trap - INT QUIT; exec {gw}>&-; read -r -u "$gr" _; '
    "exec {gr}<&-; until read -r c </proc/1/comm && [[ $c == sleep ]]; do :; done; "
    'exec bash -c "$1" <&"$in" >&"$out" 2>&"$err" {in}<&- {out}>&- {err}>&-; } & '
    'exec {gr}<&-; echo "$!" >&2; '
    "exec sleep infinity </dev/null >/dev/null 2>&1 {in}<&- {out}>&- {err}>&- {gw}>&-"
)


# Folders that hold the host's UNIX sockets (D-Bus, docker, PostgreSQL, systemd,
# X11): masked for a command without the network.
SOCKET_DIRS: tuple[Path, ...] = (Path("/run"), Path("/var/run"), Path("/tmp/.X11-unix"))


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """What a Bash command may see and do: where it may write, whether it has a
    network, what it never sees, and its bounds.

    ``bwrap`` is the bubblewrap binary found when the policy was made (None:
    not found); it is only used when ``confined``. ``keep_back`` names the
    environment variables no command gets, confined or not. ``hidden`` are the
    folders masked inside the sandbox (the data dir, the store's folder, a
    PostgreSQL store's socket folder); ``allow_write`` folders stay writable
    beside the workspace; ``protect_git`` keeps the workspace's ``.git/hooks``
    and ``.git/config`` read-only under ``workspace-write``.
    """

    mode: SandboxMode = "off"
    network: bool = True
    bwrap: str | None = None
    keep_back: frozenset[bytes] = KEPT_BACK
    hidden: tuple[Path, ...] = ()
    allow_write: tuple[Path, ...] = ()
    protect_git: bool = False
    max_processes: int = DEFAULT_LIMITS.sandbox_max_processes
    memory_bytes: int = DEFAULT_LIMITS.sandbox_memory_bytes
    tmp_bytes: int = DEFAULT_LIMITS.sandbox_tmp_bytes

    @classmethod
    def create(
        cls,
        mode: str = "off",
        *,
        network: bool = True,
        keep_env_back: Sequence[str] = (),
        hidden: Sequence[Path] = (),
        allow_write: Sequence[str | Path] = (),
        protect_git: bool = False,
        max_processes: int = DEFAULT_LIMITS.sandbox_max_processes,
        memory_bytes: int = DEFAULT_LIMITS.sandbox_memory_bytes,
        tmp_bytes: int = DEFAULT_LIMITS.sandbox_tmp_bytes,
    ) -> SandboxPolicy:
        """A policy for ``mode``; ValueError for a mode that does not exist, a
        variable name that cannot be one, or a writable folder that is not one."""
        if mode not in SANDBOX_MODES:
            raise ValueError(f"sandbox must be one of {', '.join(SANDBOX_MODES)} (got {mode!r})")
        for name in keep_env_back:
            if not name or "=" in name or "\0" in name:
                raise ValueError(f"--keep-env-back takes a variable's name (got {name!r})")
        writable = tuple(Path(d).resolve() for d in allow_write)
        for folder in writable:
            if not folder.is_dir():
                raise ValueError(f"--allow-write {folder} is not a folder")
        policy = cls(
            mode,
            network,
            None,
            KEPT_BACK | {os.fsencode(name) for name in keep_env_back},
            tuple(dict.fromkeys(Path(h).absolute() for h in hidden)),
            writable,
            protect_git,
            max_processes,
            memory_bytes,
            tmp_bytes,
        )
        if not policy.confined:
            return policy
        return dataclasses.replace(policy, bwrap=find_bwrap())

    @property
    def confined(self) -> bool:
        """True when commands run under bubblewrap."""
        return self.mode != "off" or not self.network

    def describe(self) -> str:
        """``workspace-write, no network`` …"""
        return f"{self.mode}, {'network' if self.network else 'no network'}"


# The default: commands run as they are.
UNCONFINED = SandboxPolicy()


def store_socket_dirs(store: str | Path) -> tuple[Path, ...]:
    """The folder of the UNIX socket a ``postgresql://`` store URL connects through
    (``?host=/dir`` or a percent-encoded path as the host); none for a data dir."""
    if not isinstance(store, str) or "://" not in store:
        return ()
    parts = urlsplit(store)
    hosts = parse_qs(parts.query).get("host", [])
    netloc_host = unquote(parts.netloc.rpartition("@")[2])
    found = [h for h in [*hosts, netloc_host] if h.startswith("/")]
    return tuple(Path(h) for h in found)


def find_bwrap() -> str | None:
    """``$TOOLBOUND_BWRAP`` when set (even naming a missing file), else ``bwrap`` on PATH."""
    return os.environ.get(BWRAP_VAR) or shutil.which("bwrap")


def bwrap_args(
    policy: SandboxPolicy, *, cwd: Path, scratch: Path | None, chdir: Path | None = None
) -> list[str]:
    """bwrap's options for ``policy`` (before ``--`` and the command): ``cwd`` is the
    workspace, writable under ``workspace-write``; ``scratch`` this session's
    scratch dir, bound back read-only inside the masked data dir; ``chdir`` the
    folder the command starts in (default: ``cwd``)."""
    # --cap-drop ALL: run as root, bwrap would leave the command every capability in
    # its user namespace, enough to unmount the masks and read the store beneath.
    args = ["--unshare-user", "--unshare-pid", "--die-with-parent", "--as-pid-1"]
    args += ["--cap-drop", "ALL"]
    if not policy.network:
        args.append("--unshare-net")
    # (path, options) pairs, applied shallowest path first (see the module docstring).
    mounts: list[tuple[Path, list[str]]] = []
    if policy.mode == "off":
        # Only the network and the PID namespace: the files as they are.
        args += ["--bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc"]
    else:
        # A fresh /dev holds null, zero, random, tty…, never the host's disks.
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        mounts.append((Path("/tmp"), ["--size", str(policy.tmp_bytes), "--tmpfs", "/tmp"]))
        bind = "--bind" if policy.mode == "workspace-write" else "--ro-bind"
        mounts.append((cwd, [bind, str(cwd), str(cwd)]))
        mounts += [(d, ["--bind", str(d), str(d)]) for d in policy.allow_write]
        if policy.protect_git and policy.mode == "workspace-write":
            for name in ("hooks", "config"):
                kept = cwd / ".git" / name
                if kept.exists():
                    mounts.append((kept, ["--ro-bind", str(kept), str(kept)]))
    masked = list(policy.hidden)
    sealed: list[Path] = []
    if not policy.network:
        masked += SOCKET_DIRS
    for folder in masked:
        # A symlink (/var/run -> /run) is masked through its target; what is missing
        # cannot be mounted on and holds nothing to hide.
        if folder.is_dir() and not folder.is_symlink():
            mounts.append((folder, ["--tmpfs", str(folder)]))
            # Read-only once everything below it is mounted (bwrap makes mount points).
            sealed.append(folder)
    if scratch is not None:
        mounts.append((scratch, ["--ro-bind", str(scratch), str(scratch)]))
    for _path, options in sorted(mounts, key=lambda m: len(m[0].parts)):
        args += options
    for folder in sealed:
        args += ["--remount-ro", str(folder)]
    return [*args, "--chdir", str(cwd if chdir is None else chdir)]


def keeper_bounds(policy: SandboxPolicy) -> tuple[str, str]:
    """The keeper's ``ulimit -u`` and ``ulimit -v`` (KiB) values: the policy's,
    never above the host's own hard limits (which ``ulimit`` could not raise)."""

    def capped(which: int, value: int) -> int:
        hard = resource.getrlimit(which)[1]
        return value if hard == resource.RLIM_INFINITY else min(value, hard)

    processes = capped(resource.RLIMIT_NPROC, policy.max_processes)
    memory = capped(resource.RLIMIT_AS, policy.memory_bytes)
    return str(processes), str(memory // 1024)


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
    # The tree's pids group (``exec.pids``) and whether a fork met its bound.
    pids: PidsGroup | None = None
    pids_hit: bool = False
    # Called (in any thread) once the whole sandbox is gone: the next spare's cue.
    on_gone: Callable[[], None] | None = None

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

    def running(self) -> set[int]:
        """The members running now (host PIDs); changes nothing."""
        return self._alive()

    def lingering(self) -> set[int]:
        """The members still running; with none left the namespace is torn down.
        (procfs reads and a wait for an exiting monitor: cheap enough for the loop.)"""
        alive = self._alive()
        if not alive:
            self._tear_down(grace_s=1.0, later=True)
        return alive

    def stop(self, policy: KillPolicy) -> set[int]:
        """``policy.term`` to every member, ``grace_s`` for them to exit, then SIGKILL
        to the whole namespace (its PID 1); blocks, bounded. Returns the PIDs signalled."""
        grace_s, poll_s = policy.grace_s, policy.poll_s
        signalled: set[int] = set()
        term_until = time.monotonic() + grace_s
        while not self.torn_down:
            alive = self._alive()
            if not alive or time.monotonic() >= term_until:
                signalled |= alive
                break
            for pid in alive - signalled:
                send(pid, policy.term)
                send(pid, signal.SIGCONT)
            signalled |= alive
            time.sleep(poll_s)
        self._tear_down(grace_s=grace_s)
        return signalled

    def _tear_down(self, *, grace_s: float, later: bool = False) -> None:
        """Read the shell's status if it has one, kill the namespace, reap the monitor.

        With ``later`` (every member gone, on the event loop's thread) the
        monitor is reaped in the background (``reap_later``): the kernel's
        teardown of the namespaces, 1.5 ms, is then off the call's path.
        """
        if self.torn_down:
            return
        self.torn_down = True
        self._take_status()
        if self.status is None:
            # Still running: the namespace's SIGKILL is what ends it.
            self.status = signal.SIGKILL.value
        send(self.keeper_pid, signal.SIGKILL)
        os.close(self.pidfd)
        if self.pids is not None:
            # No member is left to fork: the count is final before the group goes.
            self.pids_hit = self.pids.hit()
        loop = running_loop() if later else None
        if loop is not None:
            reap_later(loop, self.monitor, grace_s, then=self._gone)
            return
        reap_now(self.monitor, grace_s)
        self._gone()

    def _gone(self) -> None:
        """The monitor is reaped: remove the pids group, then say so (``on_gone``)."""
        if self.pids is not None:
            self.pids.remove()
        if self.on_gone is not None:
            self.on_gone()


def _state(pid: int) -> bytes:
    stat = read_proc(f"/proc/{pid}/stat")
    return stat[stat.rfind(b")") + 2 :][:1]


def _ns_pid(pid: int) -> int | None:
    """The PID a process has in its innermost PID namespace (``NSpid``)."""
    for line in read_proc(f"/proc/{pid}/status").splitlines():
        if line.startswith(b"NSpid:"):
            return int(line.split()[-1])
    return None


def reap_now(monitor: Shell, grace_s: float) -> None:
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


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop running in this thread, if one is."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


# Background reaps not yet done, per process (``settle`` waits for them).
_reaping: set[asyncio.Future[None]] = set()


def reap_later(
    loop: asyncio.AbstractEventLoop,
    monitor: Shell,
    grace_s: float,
    *,
    then: Callable[[], None] | None = None,
) -> None:
    """Reap ``monitor`` (already told to end) once it exited, on ``loop``: a pidfd
    watched by the loop, no thread; SIGKILL to it after ``grace_s``; ``then``
    after the reap. Without a pidfd it is reaped now."""
    try:
        pidfd = os.pidfd_open(monitor.pid)
    except OSError:
        reap_now(monitor, grace_s)
        if then is not None:
            then()
        return
    done: asyncio.Future[None] = loop.create_future()

    def reap() -> None:
        loop.remove_reader(pidfd)
        os.close(pidfd)
        overdue.cancel()
        monitor.proc.wait()
        if then is not None:
            then()
        if not done.done():
            done.set_result(None)

    loop.add_reader(pidfd, reap)
    overdue = loop.call_later(grace_s, monitor.proc.kill)
    _reaping.add(done)
    done.add_done_callback(_reaping.discard)


async def settle(timeout_s: float = SETUP_TIMEOUT_S) -> None:
    """Wait (bounded) for the background reaps of this loop: then no monitor is left."""
    loop = asyncio.get_running_loop()
    mine = [f for f in _reaping if f.get_loop() is loop]
    if mine:
        await asyncio.wait(mine, timeout=timeout_s)


async def spawn(
    command: str,
    *,
    cwd: Path,
    policy: SandboxPolicy,
    scratch: Scratch,
    workdir: Workdir | None = None,
    stdio: Stdio = NO_STDIO,
) -> Tree:
    """Start ``bash -c command`` in ``cwd`` (the workspace; ``workdir``, a folder in
    it, when given) as a new tree under ``policy``, with a job's ``stdio``.
    Unconfined, the shell starts in the folder ``workdir``'s descriptor holds;
    confined, the shell changes into its path inside the sandbox, which sees the
    workspace alone (a folder swapped for a symlink meanwhile leads nowhere else).

    The sandbox built at the call, for whatever ``exec.spare.spawn`` (the one
    way a command starts: the Bash tool, background jobs, so no caller can
    skip the sandbox) does not hand to a warm spare.
    ``ToolError(TOOL_SANDBOX_UNAVAILABLE)`` when the sandbox is requested but
    cannot be built; OSError when bash itself cannot start unconfined.
    """
    if not policy.confined:
        start = cwd if workdir is None else workdir.fd_path
        return spawn_shell(command, cwd=start, keep_back=policy.keep_back, stdio=stdio)
    if policy.bwrap is None:
        raise unavailable(policy, "bubblewrap (bwrap) is not installed (not found on PATH)")
    options = bwrap_args(
        policy,
        cwd=cwd,
        scratch=scratch.dir if scratch.ensure() else None,
        chdir=None if workdir is None else workdir.real,
    )
    started = launch(policy, options, KEEPER, command, cwd=cwd, stdio=stdio)
    return await started.settle(policy)


@dataclass(slots=True)
class Launched:
    """A bwrap just started: its monitor, its pids group, and the read end of the pipe
    where bwrap's errors or the keeper's "started" line arrive."""

    monitor: Shell
    pids: PidsGroup | None
    said_r: int

    async def settle(self, policy: SandboxPolicy) -> SandboxedShell:
        """The sandbox's shell once the keeper said it started; TOOL_SANDBOX_UNAVAILABLE
        with bwrap's reason when it did not (then nothing of it is left)."""
        try:
            said = await _first_line(self.said_r, SETUP_TIMEOUT_S)
            shell = _attach(self.monitor, said, policy)
            shell.pids = self.pids
            return shell
        except BaseException:
            _abandon(self.monitor)
            if self.pids is not None:
                self.pids.remove()
            raise
        finally:
            os.close(self.said_r)


def launch(
    policy: SandboxPolicy,
    options: Sequence[str],
    keeper: str,
    command: str,
    *,
    cwd: Path,
    stdio: Stdio = NO_STDIO,
    extra_fds: tuple[int, ...] = (),
) -> Launched:
    """Start bwrap with ``options`` and ``keeper`` as its PID 1, in a pids group of
    its own where one can be made; TOOL_SANDBOX_UNAVAILABLE when bwrap cannot be
    run. Does not wait for the sandbox: ``Launched.settle`` does.

    The keeper's arguments: ``$1`` the command, ``$2``-``$7`` its pipes, gate
    and bounds, ``$8`` a descriptor on its pids group's ``tasks`` (empty: no
    group), then ``extra_fds``. The keeper joins the group itself before it
    forks anything (``PidsGroup.joining_fd``), so the host's thread never
    migrates between groups: each migration waits for an RCU grace period,
    measured at 4 ms on the event loop at load 1.3."""
    bwrap = cast(str, policy.bwrap)
    bounds = keeper_bounds(policy)
    pids = pids_group(policy.max_processes)
    joining = pids.joining_fd() if pids is not None else None
    joins = () if joining is None else (joining,)
    said_r, said_w = os.pipe()
    gate = os.pipe()

    def launch_for(out: int, err: int) -> Launch:
        fds = (out, err, *gate)
        argv = [bwrap, *options, "--", "bash", "-c", keeper, "toolbound-sandbox", command]
        argv += [*map(str, fds), *bounds, "" if joining is None else str(joining)]
        argv += map(str, extra_fds)
        return Launch(argv, subprocess.DEVNULL, said_w, pass_fds=(*fds, *joins, *extra_fds))

    try:
        monitor = spawn_tree(
            launch_for, cwd=cwd, keep_back=policy.keep_back, stdio=replace(stdio, ctty=False)
        )
    except OSError as err:
        os.close(said_r)
        if pids is not None:
            pids.remove()
        raise unavailable(policy, f"{bwrap} could not be run ({err.strerror or err})") from err
    finally:
        for fd in (said_w, *gate, *joins):
            os.close(fd)
    return Launched(monitor, pids, said_r)


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
    reap_now(monitor, 1.0)
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
            [policy.bwrap, *bwrap_args(policy, cwd=cwd, scratch=None), "--", "true"],
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


def serve_default(*, network: bool) -> tuple[SandboxMode, str | None]:
    """``serve``'s mode when none is asked for: ``workspace-write`` where bubblewrap
    builds it here, else ``off`` and the reason it could not (CONTRACT section 11)."""
    reason = probe(SandboxPolicy.create("workspace-write", network=network))
    return ("workspace-write", None) if reason is None else ("off", reason)


def describe(policy: SandboxPolicy, *, fallback: str | None = None) -> str:
    """The line ``serve`` prints (and its MCP instructions may say): the sandbox in
    force, or why the requested one is not; ``fallback`` is why the default
    ``workspace-write`` could not be built, when ``off`` stands in for it."""
    if not policy.confined and fallback is not None:
        return (
            "Bash sandbox: OFF, commands run UNCONFINED with the network: the default "
            f"workspace-write sandbox cannot be built here ({fallback}). Install bubblewrap "
            f"({INSTALL_HINT}), or pass --sandbox off to choose this"
        )
    if not policy.confined:
        return "Bash sandbox: off (commands run unconfined, with the network)"
    reason = probe(policy)
    if reason is not None:
        return (
            f"Bash sandbox: {policy.describe()} requested but UNAVAILABLE: {reason}; every "
            "Bash call fails with TOOL_SANDBOX_UNAVAILABLE"
        )
    return f"Bash sandbox: {policy.describe()} (bubblewrap {policy.bwrap})"


# What a command's stderr says when it met a bound that only an rlimit or the
# /tmp size enforces (the kernel counts no such refusal for the host to read).
_MEMORY_SIGNS = ("Cannot allocate memory", "MemoryError", "out of memory", "bad_alloc")
_FORK_SIGNS = ("fork: retry", "fork: Resource temporarily unavailable")
_TMP_FULL_SIGN = "No space left on device"


def bound_notice(tree: Tree, policy: SandboxPolicy, stderr: str) -> str | None:
    """The sentence saying which sandbox bound a confined command met, or None.

    A pids group counts its refused forks, so that bound is known whatever the
    outcome; the others are told by what a command that failed printed.
    """
    if not isinstance(tree, SandboxedShell):
        return None
    if not tree.returncode and not tree.pids_hit:
        return None
    if not tree.returncode:
        stderr = ""
    met: list[str] = []
    if tree.pids_hit or any(sign in stderr for sign in _FORK_SIGNS):
        met.append(f"at most {policy.max_processes} processes (sandbox_max_processes)")
    if any(sign in stderr for sign in _MEMORY_SIGNS):
        met.append(
            f"at most {human_size(policy.memory_bytes, exact=False)} of address space per process "
            "(sandbox_memory_bytes)"
        )
    if policy.mode != "off" and _TMP_FULL_SIGN in stderr:
        met.append(
            f"a private /tmp of {human_size(policy.tmp_bytes, exact=False)} (sandbox_tmp_bytes)"
        )
    if not met:
        return None
    # Only the counted refusal is certain; the rest is read from the command's words.
    verb = "met" if tree.pids_hit and len(met) == 1 else "may have met"
    return (
        f"The command {verb} the Bash sandbox's bound of {' and '.join(met)}. Do the work "
        "in smaller pieces, or ask the user to raise the bound (toolbound's Limits)."
    )
