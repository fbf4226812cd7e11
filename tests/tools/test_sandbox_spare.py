"""The sandbox's warm spare (``exec.spare``): a confined call runs in a sandbox its
session built before the call, which still gives it everything a sandbox built
for it would: an empty private /tmp of its own, its folder, its environment
without the server's secrets; a spare whose configuration no longer matches is
not used; spares leave no process behind when the session or the server ends.

A spare is recognised by its PID namespace: the namespace of its waiting shell
exists before the call, and the command reports the namespace it runs in.
Real bwrap, real processes throughout.
"""

from __future__ import annotations

import asyncio
import gc
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from jobs_support import ended, start
from support import wait_for_async
from toolbound import DEFAULT_LIMITS, ToolHost
from toolbound.exec import spare
from toolbound.exec.members import children_of
from toolbound.exec.sandbox import BWRAP_VAR, SandboxedShell, find_bwrap

LIMITS = DEFAULT_LIMITS.replace(kill_grace_s=0.3)
CALL_BOUND_S = 30.0
NS = "readlink /proc/self/ns/pid"


@pytest.fixture
def places() -> Iterator[dict[str, Path]]:
    """A workspace (with a folder ``sub``) and a data dir under /var/tmp, outside
    the sandbox's own /tmp."""
    root = Path(tempfile.mkdtemp(prefix="toolbound-spare-", dir="/var/tmp"))
    found = {name: root / name for name in ("ws", "data")}
    for path in found.values():
        path.mkdir()
    (found["ws"] / "sub").mkdir()
    yield found
    shutil.rmtree(root)


@pytest.fixture
async def host(places: dict[str, Path]) -> AsyncIterator[ToolHost]:
    async with ToolHost(
        places["ws"], places["data"], "s1", limits=LIMITS, sandbox="workspace-write"
    ) as h:
        yield h


async def bash(host: ToolHost, command: str, **args: Any) -> dict[str, Any]:
    return await asyncio.wait_for(host.call("Bash", {"command": command, **args}), CALL_BOUND_S)


async def ready_spare(host: ToolHost) -> SandboxedShell:
    """The session's spare once it is built (a confined call ran before)."""
    shell = await asyncio.wait_for(spare.prepared(host.scratch), CALL_BOUND_S)
    assert shell is not None, "the session has no spare"
    return shell


def namespace(shell: SandboxedShell) -> str:
    return os.readlink(f"/proc/{shell.keeper_pid}/ns/pid")


def plant(shell: SandboxedShell) -> None:
    """Leave a file in a spare's private /tmp (reached through its keeper's root):
    a command that ran in that spare would list it."""
    keeper_root = Path("/proc", str(shell.keeper_pid), "root")
    (keeper_root / "tmp" / "planted-in-the-spare").write_text("x")


def sandbox_pids(shell: SandboxedShell) -> list[int]:
    return [shell.monitor.pid, shell.keeper_pid, shell.shell_pid]


def monitors(before: list[int] | None = None) -> list[int]:
    """This process's children that are bwrap (a sandbox's monitor), but those in
    ``before`` (other tests' hosts may keep their spares for their session's life)."""
    found = []
    for pid in children_of(os.getpid()):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "bwrap" and pid not in (
                before or []
            ):
                found.append(pid)
        except OSError:
            continue
    return found


def wait_exited(pids: list[int]) -> list[int]:
    """Wait (bounded) for ``pids`` to exit; the ones still running then."""
    fds = []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
        except ProcessLookupError:
            continue
    try:
        deadline = time.monotonic() + CALL_BOUND_S
        pending = list(fds)
        while pending and time.monotonic() < deadline:
            ready, _, _ = select.select(pending, [], [], deadline - time.monotonic())
            pending = [fd for fd in pending if fd not in ready]
        return [pids[fds.index(fd)] for fd in pending]
    finally:
        for fd in fds:
            os.close(fd)


def gone(pid: int) -> bool:
    """Exited and reaped, or a zombie nobody will run again."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2] == "Z"


# -- a spare is used, and gives the command what a fresh sandbox would ---------------------


async def test_a_paced_call_runs_in_the_spare_built_before_it(host: ToolHost) -> None:
    await bash(host, "true")
    waiting = await ready_spare(host)
    waiting_ns = namespace(waiting)
    plant(waiting)
    handed = spare.counts()["handed"]
    result = await bash(host, f"{NS}; ls -A /tmp; pwd")
    ns, planted, folder = result["stdout"].splitlines()
    assert (ns, planted, folder) == (
        waiting_ns,
        "planted-in-the-spare",
        str(host.workspace),
    )
    assert result["exitCode"] == 0
    assert ns != os.readlink("/proc/self/ns/pid")
    assert spare.counts()["handed"] == handed + 1


async def test_a_spare_starts_the_command_in_its_workdir_with_a_fresh_sandboxs_environment(
    host: ToolHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Everything the command sees of its shell: variables, exported or not.
    command = f"{NS}; pwd; env | sort; set | sort"
    monkeypatch.setenv("TOOLBOUND_TOKEN", "secret-token")
    spare.use_spares(False)
    try:
        fresh = await bash(host, command, workdir="sub")
    finally:
        spare.use_spares(True)
    await bash(host, "true")
    waiting_ns = namespace(await ready_spare(host))
    warm = await bash(host, command, workdir="sub")
    warm_ns, *warm_rest = warm["stdout"].splitlines()
    _, *fresh_rest = fresh["stdout"].splitlines()
    assert warm_ns == waiting_ns
    assert warm_rest[0] == str(host.workspace / "sub")
    # Only the call's marker differs (each call has its own).
    assert [line for line in warm_rest if "TOOLBOUND_CALL=" not in line] == [
        line for line in fresh_rest if "TOOLBOUND_CALL=" not in line
    ]
    assert "secret-token" not in warm["stdout"]
    assert sum("TOOLBOUND_CALL=" in line for line in warm_rest) == 2  # env and set


# What a command can do and see: write the workspace, its network interfaces, the
# data dir (masked: only the session's scratch dir in it).
PROBE = (
    "(echo x > made) 2>/dev/null && echo wrote || echo refused; rm -f made; "
    "grep -c : /proc/net/dev; ls -A {data}"
)


@pytest.mark.parametrize(
    ("mode", "network"), [("read-only", True), ("workspace-write", False), ("off", False)]
)
async def test_a_spare_confines_its_command_as_a_sandbox_built_for_it_would(
    places: dict[str, Path], mode: str, network: bool
) -> None:
    probe = PROBE.format(data=places["data"])
    async with ToolHost(places["ws"], places["data"], "s1", sandbox=mode, network=network) as host:
        spare.use_spares(False)
        try:
            fresh = await bash(host, probe)
        finally:
            spare.use_spares(True)
        await bash(host, "true")
        waiting_ns = namespace(await ready_spare(host))
        warm = await bash(host, f"{NS}; {probe}")
    ns, *seen = warm["stdout"].splitlines()
    assert ns == waiting_ns
    assert seen == fresh["stdout"].splitlines()
    # Without the network its loopback is its only interface.
    assert seen[1:] == [("1" if not network else seen[1]), "scratch"]


@pytest.mark.parametrize("paced", [True, False])
async def test_two_calls_in_a_row_each_get_an_empty_tmp_of_their_own(
    host: ToolHost, paced: bool
) -> None:
    await bash(host, "true")
    said = []
    for _ in range(3):
        if paced:
            await ready_spare(host)
        result = await bash(host, "ls -A /tmp; echo mine > /tmp/left; ls /tmp")
        said.append(result["stdout"].splitlines())
    assert said == [["left"]] * 3


async def test_a_spare_sees_its_sessions_scratch_dir_read_only_and_nothing_else_of_the_data_dir(
    host: ToolHost, places: dict[str, Path]
) -> None:
    await bash(host, "true")
    host.scratch.ensure()
    (host.scratch.dir / "note").write_text("for the command\n")
    other = places["data"] / "scratch" / "other-session"
    other.mkdir(parents=True)
    (other / "secret").write_text("not yours\n")
    await ready_spare(host)
    result = await bash(
        host,
        f"cat {host.scratch.dir}/note; cat {other}/secret 2>/dev/null || echo hidden; "
        f"touch {host.scratch.dir}/w 2>/dev/null || echo refused",
    )
    assert result["stdout"] == "for the command\nhidden\nrefused\n"


# -- when the next spare is built ----------------------------------------------------------

# Says it started, then waits until the test opens and closes the fifo ``gate``.
BLOCKED = "echo started > started; read -r _ < gate; echo done"


async def blocked_call(host: ToolHost) -> tuple[asyncio.Future[dict[str, Any]], Path]:
    """A Bash call whose command is running (it said so) and waits for its gate."""
    gate = host.workspace / "gate"
    os.mkfifo(gate)
    call = asyncio.ensure_future(bash(host, BLOCKED))
    await wait_for_async(lambda: (host.workspace / "started").exists(), "the command to start")
    return call, gate


async def release(call: asyncio.Future[dict[str, Any]], gate: Path) -> dict[str, Any]:
    os.close(os.open(gate, os.O_WRONLY))  # its reader is there: the open does not wait
    result = await call
    os.unlink(gate)
    os.unlink(gate.parent / "started")
    return result


async def test_back_to_back_the_next_spare_is_built_while_the_command_runs(
    host: ToolHost,
) -> None:
    # The session's first call finds no spare ready, as a call right after another does.
    call, gate = await blocked_call(host)
    built = await wait_for_async(
        lambda: spare.waiting(host.scratch), "a spare built while the command runs"
    )
    built_ns = namespace(built)
    assert not call.done()
    result = await release(call, gate)
    assert (result["stdout"], result["exitCode"]) == ("done\n", 0)
    after = await bash(host, NS)
    assert after["stdout"].strip() == built_ns


async def test_a_paced_call_builds_the_next_spare_only_once_its_sandbox_is_gone(
    host: ToolHost,
) -> None:
    await bash(host, "true")
    await ready_spare(host)
    built = spare.counts()["built"]
    call, gate = await blocked_call(host)
    # Its command runs in the spare it took; nothing else is being built meanwhile.
    assert spare.counts()["built"] == built
    assert spare.waiting(host.scratch) is None
    result = await release(call, gate)
    assert result["stdout"] == "done\n"
    await ready_spare(host)
    assert spare.counts()["built"] == built + 1


# -- a spare that does not match, or is gone, is not used ------------------------------------


async def test_a_spare_built_for_another_environment_is_not_used(
    host: ToolHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    await bash(host, "true")
    stale = await ready_spare(host)
    plant(stale)
    monkeypatch.setenv("TOOLBOUND_SPARE_TEST", "changed")
    result = await bash(host, "ls -A /tmp; echo $TOOLBOUND_SPARE_TEST")
    assert result["stdout"] == "changed\n"
    # The stale spare was discarded, not left waiting.
    assert wait_exited(sandbox_pids(stale)) == []


async def test_a_spare_built_before_the_mounts_changed_is_not_used(
    places: dict[str, Path],
) -> None:
    # protect_git binds .git/hooks read-only only where it exists when the sandbox is built.
    async with ToolHost(
        places["ws"], places["data"], "s1", sandbox="workspace-write", protect_git=True
    ) as host:
        await bash(host, "true")
        stale = await ready_spare(host)
        plant(stale)
        (places["ws"] / ".git" / "hooks").mkdir(parents=True)
        result = await bash(host, "ls -A /tmp; touch .git/hooks/pre-commit 2>/dev/null || echo no")
    assert result["stdout"] == "no\n"
    assert not (places["ws"] / ".git" / "hooks" / "pre-commit").exists()


async def test_a_spare_killed_while_idle_is_replaced_by_a_fresh_sandbox(host: ToolHost) -> None:
    await bash(host, "true")
    killed = await ready_spare(host)
    os.kill(killed.keeper_pid, signal.SIGKILL)
    assert wait_exited([killed.shell_pid]) == []
    result = await bash(host, f"{NS}; echo ran")
    assert result["stdout"].splitlines()[1:] == ["ran"]
    assert result["exitCode"] == 0


def flaky_bwrap(tmp_path: Path, refused: str) -> Path:
    """A bwrap that refuses the starts whose number (1, 2, …) matches the shell
    pattern ``refused`` and runs the real one otherwise."""
    count = tmp_path / "starts"
    count.write_text("0")
    flaky = tmp_path / "flaky-bwrap"
    flaky.write_text(
        f"#!/bin/sh\nn=$(($(cat {count}) + 1)); echo $n > {count}\n"
        f'case $n in {refused}) echo "bwrap: refused start $n" >&2; exit 1;; esac\n'
        f'exec {find_bwrap()} "$@"\n'
    )
    flaky.chmod(0o755)
    return flaky


async def test_a_spare_whose_build_failed_gives_way_to_a_sandbox_built_for_the_call(
    places: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first call's sandbox is built, the spare after it is refused, the
    # second call builds its own.
    monkeypatch.setenv(BWRAP_VAR, str(flaky_bwrap(tmp_path, "2")))
    async with ToolHost(places["ws"], places["data"], "s1", sandbox="workspace-write") as host:
        first = await bash(host, "echo one")
        assert await asyncio.wait_for(spare.prepared(host.scratch), CALL_BOUND_S) is None
        second = await bash(host, "echo two")
    assert (first["stdout"], second["stdout"]) == ("one\n", "two\n")
    # The first call's, the refused spare's, the second call's (and maybe the next spare's).
    assert int((tmp_path / "starts").read_text()) >= 3


async def test_when_bwrap_stops_working_the_next_call_fails_as_one_without_a_spare_would(
    places: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every start after the first is refused: the spare's, then the call's own.
    monkeypatch.setenv(BWRAP_VAR, str(flaky_bwrap(tmp_path, "[!1]*")))
    async with ToolHost(places["ws"], places["data"], "s1", sandbox="workspace-write") as host:
        first = await bash(host, "echo one")
        # The spare's start is refused (start 2); then the call's own (start 3).
        assert await asyncio.wait_for(spare.prepared(host.scratch), CALL_BOUND_S) is None
        second = await bash(host, "touch ran")
    assert first["stdout"] == "one\n"
    assert second == {
        "error": {
            "code": "TOOL_SANDBOX_UNAVAILABLE",
            "message": "The Bash sandbox (workspace-write, network) was requested but is not "
            "available: bwrap could not create the sandbox (bwrap: refused start 3). The "
            "command was not run. Fix: install bubblewrap (apt-get install bubblewrap; "
            "$TOOLBOUND_BWRAP may name the binary) and allow user namespaces, or run "
            "toolbound with --sandbox off (and without --no-network) to run commands "
            "unconfined.",
        }
    }
    assert not (places["ws"] / "ran").exists()


async def test_a_background_job_builds_its_own_sandbox(host: ToolHost) -> None:
    await bash(host, "true")
    waiting = await ready_spare(host)
    waiting_ns = namespace(waiting)
    handed = spare.counts()["handed"]
    started = await start(host, NS)
    output = await ended(host, started["jobId"])
    assert output["stdout"].startswith("pid:[")
    assert output["stdout"].strip() != waiting_ns
    assert spare.counts()["handed"] == handed
    # The spare waits on for the next call.
    assert spare.waiting(host.scratch) is waiting


# -- bounded, and gone with the session and the server ----------------------------------------


async def test_a_session_holds_at_most_one_spare_and_its_end_leaves_no_process(
    places: dict[str, Path],
) -> None:
    before = monitors()
    host = ToolHost(places["ws"], places["data"], "s1", sandbox="workspace-write")
    async with host:
        for _ in range(3):
            await bash(host, "true")
        waiting = await ready_spare(host)
        assert monitors(before) == [waiting.monitor.pid]
        pids = sandbox_pids(waiting)
    assert [pid for pid in pids if not gone(pid)] == []
    assert monitors(before) == []
    assert spare.waiting(host.scratch) is None


async def test_a_host_dropped_without_closing_takes_its_spare_with_it(
    places: dict[str, Path],
) -> None:
    before = monitors()
    host = ToolHost(places["ws"], places["data"], "s1", sandbox="workspace-write")
    await host.__aenter__()
    await bash(host, "true")
    pids = sandbox_pids(await ready_spare(host))
    # The session's lock is let go of by hand; the spare is left to the garbage collector.
    host.session._live.release()
    del host
    gc.collect()
    assert wait_exited(pids) == []
    assert monitors(before) == []


# A server in a child process: one confined call, then it prints its spare's
# processes and waits to be killed.
DYING_SERVER = """
import asyncio, sys
from toolbound import ToolHost
from toolbound.exec import spare

async def main(ws, data):
    async with ToolHost(ws, data, "dying", sandbox="workspace-write") as host:
        await host.call("Bash", {"command": "true"})
        shell = await spare.prepared(host.scratch)
        print(shell.monitor.pid, shell.keeper_pid, shell.shell_pid, flush=True)
        await asyncio.sleep(600)

asyncio.run(main(*sys.argv[1:]))
"""


def test_when_the_server_is_killed_its_spares_die_with_it(places: dict[str, Path]) -> None:
    server = subprocess.Popen(
        [sys.executable, "-c", DYING_SERVER, str(places["ws"]), str(places["data"])],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        ready, _, _ = select.select([server.stdout], [], [], CALL_BOUND_S)
        assert ready, "the server never built its spare"
        pids = [int(pid) for pid in server.stdout.readline().split()]
        assert len(pids) == 3
        assert [pid for pid in pids if gone(pid)] == []
        server.kill()
        server.wait(CALL_BOUND_S)
        assert wait_exited(pids) == []
    finally:
        server.kill()
        server.communicate()
