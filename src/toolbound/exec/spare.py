"""A warm spare per session: the next confined command's sandbox, built before the call.

Building a sandbox (bwrap's user, mount, PID and network namespaces, the
private ``/tmp``, the pids group, the keeper) costs most of a confined
``true`` (bench/sandbox.py). None of it depends on the command, so each
session keeps one sandbox built ahead, in the background, whose shell waits
for its order; a call hands it the command and its folder and the shell
execs it. The call then pays little more than an unconfined spawn::

    call N:  take the spare ── hand it the order ── the command runs ── …
                             └─ build the next spare (in the background) ─┘
    call N+1: take that spare (or wait for it, when it is still being built)

When the next spare starts: a call that found its spare ready (paced, as an
agent calls) starts the next one once its own sandbox is gone, so the build
never takes a core from its command. A call that found none ready (calls back
to back: the spare still being built, or none yet) starts the next one as its
command starts: building it after the command would leave the next call
waiting for the whole build (bench/sandbox.py measures both).

What the order carries, and what the spare fixes at creation:

- **The order** (written to a memfd the shell reads with buffered reads, then
  a pipe closed to say go): the folder to start in (``cd -P`` inside the
  sandbox, as bwrap's ``--chdir`` did) and the command.
- **Fixed** (``SpareKey``): the policy, bwrap's options (the mounts: the
  workspace, this session's scratch dir, the masks), the bounds, the
  environment (the host's, secrets kept back, compared at each call), the
  identity of the workspace and scratch folders, the event loop. A call
  whose key differs discards the spare and builds its own, as before.

Each spare is used once: the command gets a fresh private ``/tmp``, its own
PID namespace and pids group, exactly as a sandbox built for the call. The
shell's exit status, the stopping and the teardown are ``SandboxedShell``'s.

Bounds and lifetime: at most one spare per session (``Scratch``), prepared
only after a confined call (a session that never runs Bash has none). An idle
spare is three processes (bwrap's monitor, the keeper ``sleep``, the waiting
bash: about 5 MiB resident in all, bench/sandbox.py), an empty tmpfs and a
pids group. It dies with its session (``release``, called as the host closes;
a host dropped unclosed: ``Spare.abandon``) and with the server: bwrap's
``--die-with-parent`` and the host's guard (``exec.guard``: the spare carries
the host's marker). A spare
whose preparation failed is dropped and the call builds its own sandbox,
failing as it would have (``TOOL_SANDBOX_UNAVAILABLE``). Jobs (a job's stdin
or terminal) keep building their sandbox at the call (``exec.sandbox.spawn``).
``spawn`` here is the one way a command starts, confined or not.

Pieces:
    SPARE_KEEPER  PID 1 of a spare: forks the waiting shell, becomes ``sleep``
    SpareKey      what a spare fixes at creation
    Spare         one prepared sandbox: ready, hand(), discard(), end(), abandon()
    spawn         start a command's tree: the one way in (Bash, jobs)
    take          a call's sandbox: the session's spare when it matches, else one built now
    release       discard a session's spare and wait out the teardowns (its host closes)
    drop          discard it, and wait them out, the session going on
    waiting, prepared  the session's spare's shell if built; once built (tests, the benchmark)
    counts        how many spares were built and handed out (tests, the benchmark)
    use_spares, enabled  turn spares off (the benchmark's anchor) and on
    build_beside  back to back, the next spare built beside the command (off: the anchor)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import subprocess
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from toolbound.exec import sandbox
from toolbound.exec.sandbox import SandboxedShell, SandboxPolicy
from toolbound.exec.stopping import send
from toolbound.exec.tree import NO_STDIO, Stdio, Tree, Workdir, environment
from toolbound.results import ToolError
from toolbound.scratch import Scratch

# PID 1 of a spare: KEEPER's gate, pids group and exit-status scheme ($1-$8:
# exec.sandbox), with the command arriving later. $9 is the read end of the go
# pipe, ${10} the order's memfd (NUL-terminated folder, then the command; bash
# reads a seekable file in blocks, a pipe a byte at a time).
# The shell waits for the keeper to become `sleep`, then for go (EOF), reads the
# order, changes into the folder (keeping OLDPWD as a sandbox started there would
# have it) and execs the command. An order cut short (the host gone) runs nothing.
SPARE_KEEPER = (
    "out=$2 err=$3 gr=$4 gw=$5 pg=$8 go=$9 od=${10}; "
    'if [[ $pg ]]; then echo 0 >&"$pg" || exit; exec {pg}>&-; fi; '
    'ulimit -u "$6"; ulimit -v "$7"; exec {in}<&0; '
    '{ trap - INT QUIT; exec {gw}>&-; read -r -u "$gr" _; '
    "exec {gr}<&-; until read -r c </proc/1/comm && [[ $c == sleep ]]; do :; done; "
    'read -r -u "$go" _; exec {go}<&-; '
    "IFS= read -r -d '' -u \"$od\" wd && IFS= read -r -d '' -u \"$od\" cmd || exit 125; "
    "exec {od}<&-; "
    'if [[ $wd ]]; then o=${OLDPWD-} s=${OLDPWD+x}; cd -P -- "$wd" 2>&"$err" || exit; '
    "if [[ $s ]]; then OLDPWD=$o; else unset OLDPWD; fi; fi; "
    'exec bash -c "$cmd" <&"$in" >&"$out" 2>&"$err" {in}<&- {out}>&- {err}>&-; } & '
    'exec {gr}<&- {go}<&- {od}<&-; echo "$!" >&2; '
    "exec sleep infinity </dev/null >/dev/null 2>&1 {in}<&- {out}>&- {err}>&- {gw}>&-"
)


@dataclass(frozen=True, slots=True)
class SpareKey:
    """What a spare fixes when it is built; a call takes it only when all are equal."""

    policy: SandboxPolicy
    options: tuple[str, ...]
    bounds: tuple[str, str]
    env: dict[bytes, bytes]
    # (st_dev, st_ino) of the workspace and the scratch dir: a folder removed and
    # made again is another folder, which the spare's mounts do not show.
    places: tuple[tuple[int, int] | None, ...]
    loop: asyncio.AbstractEventLoop

    @classmethod
    def of(cls, policy: SandboxPolicy, *, cwd: Path, scratch_dir: Path | None) -> SpareKey:
        """The key of a sandbox for ``policy`` in workspace ``cwd`` now (on the loop)."""
        options = sandbox.bwrap_args(policy, cwd=cwd, scratch=scratch_dir)
        return cls(
            policy,
            tuple(options[:-2]),  # without its --chdir: the shell changes folder itself
            sandbox.keeper_bounds(policy),
            environment(policy.keep_back),
            (_identity(cwd), None if scratch_dir is None else _identity(scratch_dir)),
            asyncio.get_running_loop(),
        )


def _identity(folder: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(folder)
    except OSError:
        return None
    return st.st_dev, st.st_ino


@dataclass(slots=True)
class Spare:
    """One sandbox built ahead: ``ready`` resolves to its waiting shell (or the
    reason it could not be built); ``hand`` gives it a command, once."""

    key: SpareKey
    launched: sandbox.Launched
    go_w: int
    order: int
    ready: asyncio.Task[SandboxedShell] = field(init=False)
    ended: bool = False
    orphaned: weakref.finalize[[], Scratch] | None = None

    @classmethod
    def build(cls, key: SpareKey, *, cwd: Path) -> Spare:
        """Start building a spare for ``key`` (bwrap is started now, on the loop's
        thread, which its ``--die-with-parent`` follows); TOOL_SANDBOX_UNAVAILABLE
        when bwrap cannot be run."""
        go_r, go_w = os.pipe()
        order = os.memfd_create("toolbound-order")
        try:
            options = [*key.options, "--chdir", str(cwd)]
            launched = sandbox.launch(
                key.policy,
                options,
                SPARE_KEEPER,
                "",
                cwd=cwd,
                extra_fds=(go_r, order),
            )
        except BaseException:
            os.close(go_w)
            os.close(order)
            raise
        finally:
            os.close(go_r)
        spare = cls(key, launched, go_w, order)
        spare.ready = key.loop.create_task(launched.settle(key.policy))
        # A spare discarded unused may never be awaited: its failure is not news.
        spare.ready.add_done_callback(_quiet)
        _counts["built"] += 1
        return spare

    def alive(self) -> bool:
        """Still being built, or built and its shell still waiting (not killed idle)."""
        if not self.ready.done():
            return True
        if self.ready.cancelled() or self.ready.exception() is not None:
            return False
        readable, _, _ = select.select([self.ready.result().pidfd], [], [], 0)
        return not readable

    def hand(self, command: str, workdir: Workdir | None) -> None:
        """Give the waiting shell its order: the folder (none: the workspace) and the
        command (no NUL in it: ``take`` refused that)."""
        folder = b"" if workdir is None else os.fsencode(workdir.real)
        os.pwrite(self.order, folder + b"\0" + os.fsencode(command) + b"\0", 0)
        self.ended = True
        self._close_fds()
        _counts["handed"] += 1

    def discard(self) -> None:
        """End the spare unused: its namespace killed and its monitor reaped in the
        background, once it is built if it is still being built."""
        if self.ready.done():
            self.end()
        else:
            self.ready.add_done_callback(lambda _: self.end())

    def end(self) -> None:
        """Kill a built, unused spare (once); one that failed left nothing behind."""
        if self.ended:
            return
        self.ended = True
        if not self.ready.cancelled() and self.ready.exception() is None:
            shell = self.ready.result()
            send(shell.keeper_pid, signal.SIGKILL)
            shell.torn_down = True
            os.close(shell.pidfd)
            pids = shell.pids
            then = None if pids is None else pids.remove
            if sandbox.running_loop() is self.key.loop:
                sandbox.reap_later(self.key.loop, shell.monitor, 1.0, then=then)
            else:  # built under another event loop (closed by now, perhaps): reap it here
                sandbox.reap_now(shell.monitor, 1.0)
                if then is not None:
                    then()
            for fd in (shell.stdout_fd, shell.stderr_fd):
                os.close(fd)
        self._close_fds()

    def abandon(self) -> None:
        """Its session was dropped, its host never closed (perhaps its event loop
        too): kill bwrap's monitor, whose ``--die-with-parent`` takes the sandbox,
        and reap it here, bounded."""
        if self.ended:
            return
        self.ended = True
        if self.ready.done() and not self.ready.cancelled() and not self.ready.exception():
            shell = self.ready.result()
            for fd in (shell.pidfd, shell.stdout_fd, shell.stderr_fd):
                os.close(fd)
        monitor = self.launched.monitor.proc
        monitor.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            monitor.wait(1.0)
        if self.launched.pids is not None:
            self.launched.pids.remove()
        self._close_fds()

    def _close_fds(self) -> None:
        if self.orphaned is not None:
            self.orphaned.detach()
        for fd in (self.go_w, self.order):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.go_w = self.order = -1


def _quiet(task: asyncio.Task[SandboxedShell]) -> None:
    if not task.cancelled():
        task.exception()


# The spare of each live session, and the sessions whose host has closed.
_spares: weakref.WeakKeyDictionary[Scratch, Spare] = weakref.WeakKeyDictionary()
_released: weakref.WeakSet[Scratch] = weakref.WeakSet()
# How many calls each session has taken a sandbox for.
_turns: weakref.WeakKeyDictionary[Scratch, int] = weakref.WeakKeyDictionary()
_counts = {"built": 0, "handed": 0}
_on = [True]
_beside = [True]


def waiting(scratch: Scratch) -> SandboxedShell | None:
    """The session's spare's waiting shell, once it is built (None: none, or not yet)."""
    spare = _spares.get(scratch)
    if spare is None or not spare.alive() or not spare.ready.done():
        return None
    return spare.ready.result()


async def prepared(scratch: Scratch) -> SandboxedShell | None:
    """The session's next spare's shell once it is built: waits out the sandboxes
    being torn down (the end of the last one starts it), then its build. None when
    there is none: no confined call yet, a build that failed, the host closed."""
    await sandbox.settle()
    await asyncio.sleep(0)  # the build the last teardown queued starts
    spare = _spares.get(scratch)
    if spare is not None:
        await asyncio.wait([spare.ready])
    return waiting(scratch)


def use_spares(on: bool) -> None:
    """Whether confined calls take spares (on by default; off, every call builds its
    sandbox as before 0.3's spares: the benchmark's side-by-side anchor)."""
    _on[0] = on


def enabled() -> bool:
    return _on[0]


def build_beside(on: bool) -> None:
    """Whether a call that found no spare ready (calls back to back) starts the next
    one as its command starts (on by default); off, once its sandbox is gone, as a
    paced call does (before 0.3's overlap: the benchmark's anchor)."""
    _beside[0] = on


def counts() -> dict[str, int]:
    """How many spares this process built and handed out so far."""
    return dict(_counts)


async def spawn(
    command: str,
    *,
    cwd: Path,
    policy: SandboxPolicy,
    scratch: Scratch,
    workdir: Workdir | None = None,
    stdio: Stdio = NO_STDIO,
) -> Tree:
    """Start ``bash -c command`` in ``cwd`` (the workspace; ``workdir`` when given)
    as a new tree under ``policy``: the one way a command starts (the Bash tool,
    background jobs), so no caller can skip the sandbox. A confined command with
    no job's ``stdio`` runs in its session's spare (``take``); the rest as
    ``exec.sandbox.spawn`` starts it. ``ToolError(TOOL_SANDBOX_UNAVAILABLE)``
    when the sandbox is requested but cannot be built; OSError when bash itself
    cannot start unconfined."""
    if not policy.confined or policy.bwrap is None or stdio != NO_STDIO or not _on[0]:
        return await sandbox.spawn(
            command, cwd=cwd, policy=policy, scratch=scratch, workdir=workdir, stdio=stdio
        )
    return await take(
        command,
        cwd=cwd,
        policy=policy,
        scratch=scratch,
        scratch_dir=scratch.dir if scratch.ensure() else None,
        workdir=workdir,
    )


async def take(
    command: str,
    *,
    cwd: Path,
    policy: SandboxPolicy,
    scratch: Scratch,
    scratch_dir: Path | None,
    workdir: Workdir | None,
) -> SandboxedShell:
    """``bash -c command`` in a sandbox for ``policy``: the session's spare when its
    key matches (waited for while it is still being built), else one built now;
    then the next spare starts building. A spare that failed or died is dropped
    and the call builds its own, with today's errors (TOOL_SANDBOX_UNAVAILABLE)."""
    if "\0" in command:
        raise ValueError("embedded null byte")  # as Popen says: never a command cut short
    key = SpareKey.of(policy, cwd=cwd, scratch_dir=scratch_dir)
    turn = _turns[scratch] = _turns.get(scratch, 0) + 1
    spare = _spares.pop(scratch, None)
    if spare is not None and (spare.key != key or not spare.alive()):
        spare.discard()
        spare = None
    # Paced: the spare was ready when the call came. Back to back it was not (still
    # being built, or none): then the next one is built from now on, beside this
    # command, rather than after it (which would leave the next call waiting).
    paced = spare is not None and spare.ready.done()
    shell = None if spare is None else await _settled(spare)
    if spare is None or shell is None:
        spare = Spare.build(key, cwd=cwd)
        shell = await _settled(spare)
        if shell is None:
            spare.ready.result()  # raises why it could not be built
    spare.hand(command, workdir)
    shell = cast(SandboxedShell, shell)
    if not paced and _beside[0]:
        _refill(scratch, key, cwd, turn)
        return shell
    loop = key.loop

    def refill() -> None:
        # Once this command's sandbox is gone: building the next one meanwhile
        # would take the cores from the command (measured: 2.4 ms -> 10.2 ms for `true`).
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody calls again
            loop.call_soon_threadsafe(_refill, scratch, key, cwd, turn)

    shell.on_gone = refill
    return shell


async def _settled(spare: Spare) -> SandboxedShell | None:
    """The spare's waiting shell, None when it could not be built; a call cancelled
    meanwhile discards it."""
    try:
        return await asyncio.shield(spare.ready)
    except ToolError:
        spare.end()
        return None
    except BaseException:
        spare.discard()
        raise


def _refill(scratch: Scratch, key: SpareKey, cwd: Path, turn: int) -> None:
    """Build the session's next spare, unless it has one, its host closed, or a
    call came since call ``turn`` (back to back: that call built its own sandbox,
    and will ask for the next spare when it is done; two builds at once would
    only slow each other)."""
    if scratch in _released or scratch in _spares or _turns.get(scratch) != turn:
        return
    try:
        spare = Spare.build(key, cwd=cwd)
    except ToolError:
        return  # the next call builds its own and says why
    _spares[scratch] = spare
    # A host dropped without being closed: its spare goes with its session's Scratch.
    spare.orphaned = weakref.finalize(scratch, spare.abandon)


async def release(scratch: Scratch) -> None:
    """The session's host closes: discard its spare, build no other, and wait
    (bounded) until every monitor reaped in the background is gone."""
    _released.add(scratch)
    await drop(scratch)


async def drop(scratch: Scratch) -> None:
    """Discard the session's spare now (the next call builds its own sandbox and
    the next spare after it) and wait until it and every sandbox being torn down
    in the background are gone: nothing of them is left, no process, no descriptor."""
    _turns[scratch] = _turns.get(scratch, 0) + 1  # a refill on its way is void
    spare = _spares.pop(scratch, None)
    if spare is not None:
        spare.discard()
        await asyncio.wait([spare.ready])
        spare.end()
    await sandbox.settle()
