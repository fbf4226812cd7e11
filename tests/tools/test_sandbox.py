"""The Bash sandbox (CONTRACT section 11): where a command may write, its network,
its tree, and failing closed when bubblewrap cannot build it.

Each test drives the real host and a real bwrap (or a real stand-in for a
broken one); the Bash behaviour shared with unconfined calls is in test_bash.py,
which runs under ``workspace-write`` too.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from support import SANDBOX_PYTHON, run_cli
from toolbound import DEFAULT_LIMITS, ToolHost
from toolbound.exec.sandbox import BWRAP_VAR, SandboxPolicy

LIMITS = DEFAULT_LIMITS.replace(kill_grace_s=0.3)
CALL_BOUND_S = 20.0

# Writes a file at $1 and says whether it worked.
TRY_WRITE = (
    'try() { if echo x > "$1" 2>/dev/null; then echo "wrote $1"; else echo "refused $1"; fi; }'
)


@pytest.fixture
def places() -> Iterator[dict[str, Path]]:
    """A workspace, a data dir, and a folder outside both that the host can write.

    Under /var/tmp, not /tmp: inside the sandbox /tmp is its own, so a write
    below the host's /tmp would land there and prove nothing.
    """
    root = Path(tempfile.mkdtemp(prefix="toolbound-sandbox-", dir="/var/tmp"))
    found = {name: root / name for name in ("ws", "data", "outside")}
    for path in found.values():
        path.mkdir()
    yield found
    shutil.rmtree(root)


@pytest.fixture(params=["read-only", "workspace-write"])
async def host(request: pytest.FixtureRequest, places: dict[str, Path]) -> AsyncIterator[ToolHost]:
    async with ToolHost(
        places["ws"], places["data"], "s1", limits=LIMITS, sandbox=request.param
    ) as h:
        yield h


async def bash(host: ToolHost, command: str, **args: Any) -> dict[str, Any]:
    return await asyncio.wait_for(host.call("Bash", {"command": command, **args}), CALL_BOUND_S)


def tmp_name(tmp_path: Path) -> Path:
    """A name in the host's /tmp that this test owns."""
    return Path("/tmp") / f"toolbound-sandbox-{tmp_path.name}-{os.getpid()}"


# -- writes -----------------------------------------------------------------------------


async def test_writes_reach_only_the_allowed_places(
    host: ToolHost, places: dict[str, Path], tmp_path: Path
) -> None:
    in_tmp = tmp_name(tmp_path)
    targets = {
        "workspace": host.workspace / "made-in-ws",
        "scratch": host.scratch.dir / "made-in-scratch",
        "tmp": in_tmp,
        "outside": places["outside"] / "made-outside",
        "data dir": places["data"] / "made-in-data",
        "home": Path.home() / f".toolbound-sandbox-{tmp_path.name}",
    }
    command = TRY_WRITE + "".join(f"; try {path}" for path in targets.values())
    command += f"; cat {in_tmp}"
    result = await bash(host, command)
    # The scratch dir is the host's to write (CONTRACT section 16): read-only inside.
    writable = {"tmp"} | ({"workspace"} if host.sandbox.mode == "workspace-write" else set())
    said = {
        name: f"{'wrote' if name in writable else 'refused'} {path}"
        for name, path in targets.items()
    }
    assert result["stdout"] == "".join(f"{line}\n" for line in said.values()) + "x\n"
    assert result["exitCode"] == 0
    # What was written outside the sandbox's own /tmp is there; nothing else is.
    assert {name for name, path in targets.items() if path.exists()} == writable - {"tmp"}


async def test_the_private_tmp_is_empty_and_gone_after_the_call(
    host: ToolHost, tmp_path: Path
) -> None:
    mine = tmp_name(tmp_path)
    mine.write_text("host's own\n")
    try:
        first = await bash(host, f"ls -A /tmp; echo in-sandbox > {mine}")
        second = await bash(host, f"cat {mine} 2>&1 || true")
    finally:
        host_copy = mine.read_text()
        mine.unlink()
    # The host's file is not visible inside; the sandbox's is not visible outside or later.
    assert (first["stdout"], first["exitCode"]) == ("", 0)
    assert second["stdout"] == f"cat: {mine}: No such file or directory\n"
    assert host_copy == "host's own\n"


# -- network ----------------------------------------------------------------------------

# Connects to the host's server on port $PORT, then serves and reaches its own loopback.
NET_PROBE = """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close()
    print("host: reached")
except OSError as err:
    print("host:", type(err).__name__)
with socket.create_server(("127.0.0.1", 0)) as server:
    with socket.create_connection(server.getsockname(), timeout=5) as client:
        peer, _ = server.accept()
        client.sendall(b"ping")
        print("own loopback:", peer.recv(4).decode())
        peer.close()
"""


@pytest.fixture
def host_server() -> Iterator[int]:
    """A TCP server on the host's 127.0.0.1 (the kernel completes connections to it)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


@pytest.mark.parametrize("mode", ["off", "read-only", "workspace-write"])
@pytest.mark.parametrize("network", [False, True])
async def test_without_network_only_the_sandboxs_own_loopback_answers(
    places: dict[str, Path], host_server: int, mode: str, network: bool
) -> None:
    async with ToolHost(places["ws"], places["data"], "s1", sandbox=mode, network=network) as host:
        command = f"{SANDBOX_PYTHON} -I -c '{NET_PROBE}' {host_server}"
        result = await bash(host, command)
    reached = "reached" if network else "ConnectionRefusedError"
    assert (result["stdout"], result["stderr"]) == (
        f"host: {reached}\nown loopback: ping\n",
        "",
    )


# -- the tree ---------------------------------------------------------------------------

# A setsid, double-forked daemon ignoring SIGTERM, and the shell ignoring it too.
ESCAPEE = (
    "readlink /proc/self/ns/pid; "
    "( setsid bash -c 'trap \"\" TERM; echo daemon $$; exec sleep 600' & ); "
    "trap '' TERM; sleep 600"
)


def in_namespace(ns: str) -> list[int]:
    """Host PIDs of the processes in PID namespace ``ns`` (``pid:[…]``)."""
    found: list[int] = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.readlink(f"/proc/{name}/ns/pid") == ns:
                    found.append(int(name))
            except OSError:
                continue
    return found


def state(pid: int) -> str:
    """A process's state letter (``Z`` for a zombie); empty once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat[stat.rfind(")") + 2 :][:1]


async def test_a_setsid_double_forked_escapee_is_gone_at_timeout(host: ToolHost) -> None:
    result = await bash(host, ESCAPEE, timeout=1)
    ns, daemon = result["stdout"].splitlines()
    assert ns.startswith("pid:[")
    assert daemon.startswith("daemon ")
    assert ns != os.readlink("/proc/self/ns/pid")
    assert in_namespace(ns) == []
    assert (result["timedOut"], result["exitCode"], result["signal"]) == (True, None, "SIGKILL")


# A host in a child process: it prints the sandbox's PID namespace once the
# command runs, then waits for the command (which never ends).
DYING_HOST = """
import asyncio, sys
from toolbound import ToolHost

async def main(ws, data):
    async with ToolHost(ws, data, "dying", sandbox="workspace-write") as host:
        command = "(setsid sleep 600 &); readlink /proc/self/ns/pid; exec sleep 600"
        async for event in host.stream("Bash", {"command": command}):
            print(event["data"], end="", flush=True)

asyncio.run(main(*sys.argv[1:]))
"""


def test_when_the_host_dies_its_sandboxes_die_with_it(places: dict[str, Path]) -> None:
    host = subprocess.Popen(
        [sys.executable, "-c", DYING_HOST, str(places["ws"]), str(places["data"])],
        stdout=subprocess.PIPE,
        text=True,
    )
    members: list[int] = []
    try:
        assert host.stdout is not None
        ready, _, _ = select.select([host.stdout], [], [], CALL_BOUND_S)
        assert ready, "the host never started its command"
        ns = host.stdout.readline().strip()
        members = [os.pidfd_open(pid) for pid in in_namespace(ns)]
        assert len(members) >= 3  # the keeper, the shell, the daemon
        host.kill()
        host.wait(CALL_BOUND_S)
        # Every member's pidfd turns readable when it exits: no sleep, one bound.
        deadline = time.monotonic() + CALL_BOUND_S
        pending = list(members)
        while pending and time.monotonic() < deadline:
            ready, _, _ = select.select(pending, [], [], deadline - time.monotonic())
            pending = [fd for fd in pending if fd not in ready]
        assert pending == []
        # Exited: a zombie waits for whoever inherits it (the host is gone).
        assert [pid for pid in in_namespace(ns) if state(pid) != "Z"] == []
    finally:
        host.kill()
        host.communicate()
        for fd in members:
            os.close(fd)


async def test_exit_codes_and_signals_are_told_apart(host: ToolHost) -> None:
    # bwrap alone reports a signal as 128+n; the sandbox reads the shell's real status.
    outcomes = [
        (r["exitCode"], r["signal"])
        for r in [
            await bash(host, "exit 137"),
            await bash(host, "kill -KILL $$"),
            await bash(host, "exit 143"),
            await bash(host, "kill -TERM $$"),
            await bash(host, "sleep 30 & kill -KILL $!; wait $!"),
        ]
    ]
    assert outcomes == [(137, None), (None, "SIGKILL"), (143, None), (None, "SIGTERM"), (137, None)]


async def test_the_command_keeps_default_interrupt_handling(host: ToolHost) -> None:
    # A background job of bash ignores SIGINT and SIGQUIT; the sandbox's shell must not.
    result = await bash(host, "grep SigIgn /proc/self/status; kill -INT $$; echo survived")
    ignored = int(result["stdout"].removeprefix("SigIgn:\t"), 16)
    assert ignored & (1 << (signal.SIGINT - 1) | 1 << (signal.SIGQUIT - 1)) == 0
    assert (result["exitCode"], result["signal"]) == (None, "SIGINT")


# -- failing closed ---------------------------------------------------------------------


def stand_in(tmp_path: Path, message: str) -> Path:
    """An executable that fails like a bwrap refused its namespaces."""
    path = tmp_path / "fake-bwrap"
    path.write_text(f"#!/bin/sh\necho '{message}' >&2\nexit 1\n")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(
    ("bwrap", "reason"),
    [
        ("missing", "could not be run (No such file or directory)"),
        (
            "refusing",
            "bwrap could not create the sandbox "
            "(bwrap: No permissions to create new namespace, likely because the kernel does "
            "not allow non-privileged user namespaces.)",
        ),
    ],
)
@pytest.mark.parametrize(("mode", "network"), [("workspace-write", True), ("off", False)])
async def test_an_unavailable_sandbox_fails_every_bash_call_and_runs_nothing(
    places: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bwrap: str,
    reason: str,
    mode: str,
    network: bool,
) -> None:
    path = (
        tmp_path / "no-such-bwrap"
        if bwrap == "missing"
        else stand_in(
            tmp_path,
            "bwrap: No permissions to create new namespace, likely because the kernel does "
            "not allow non-privileged user namespaces.",
        )
    )
    monkeypatch.setenv(BWRAP_VAR, str(path))
    async with ToolHost(places["ws"], places["data"], "s1", sandbox=mode, network=network) as host:
        results = [await bash(host, "touch ran") for _ in range(2)]
        (places["ws"] / "a.txt").write_text("hello\n")
        read = await host.call("Read", {"path": "a.txt"})
    if bwrap == "missing":
        reason = f"{path} {reason}"
    policy = SandboxPolicy.create(mode, network=network)
    expected = {
        "error": {
            "code": "TOOL_SANDBOX_UNAVAILABLE",
            "message": f"The Bash sandbox ({policy.describe()}) was requested but is not "
            f"available: {reason}. The command was not run. Fix: install bubblewrap "
            "(apt-get install bubblewrap; $TOOLBOUND_BWRAP may name the binary) and allow "
            "user namespaces, or run toolbound with --sandbox off (and without --no-network) "
            "to run commands unconfined.",
        }
    }
    assert results == [expected, expected]
    assert not (places["ws"] / "ran").exists()
    # Only Bash is confined: the other tools work as ever.
    assert read["content"] == "hello\n"


async def test_off_never_needs_bubblewrap(
    places: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(BWRAP_VAR, str(tmp_path / "no-such-bwrap"))
    async with ToolHost(places["ws"], places["data"], "s1") as host:
        result = await bash(host, "touch ran; echo ok")
    assert (result["stdout"], result["exitCode"]) == ("ok\n", 0)
    assert (places["ws"] / "ran").exists()


def test_a_mode_that_does_not_exist_is_refused(places: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match="sandbox must be one of off, read-only, workspace-write"):
        ToolHost(places["ws"], places["data"], "s1", sandbox="strict")


# -- command line -----------------------------------------------------------------------


def test_call_takes_the_sandbox_and_no_network(places: dict[str, Path]) -> None:
    command = TRY_WRITE + "; try made; cat /proc/net/dev | grep -c :"
    proc = run_cli(
        "call",
        "Bash",
        json.dumps({"command": command}),
        "--workspace",
        str(places["ws"]),
        "--data-dir",
        str(places["data"]),
        "--sandbox",
        "read-only",
        "--no-network",
        cwd=places["ws"],
        timeout_s=CALL_BOUND_S,
    )
    assert proc.returncode == 0, proc.stderr
    # Refused in the workspace, and one network interface: lo.
    assert json.loads(proc.stdout)["stdout"] == "refused made\n1\n"


@pytest.mark.parametrize(
    ("args", "bwrap", "said"),
    [
        (
            ["--sandbox", "off"],
            None,
            "toolbound: Bash sandbox: off (commands run unconfined, with the network)",
        ),
        ([], None, "toolbound: Bash sandbox: workspace-write, network (bubblewrap "),
        (
            [],
            "/no/such/bwrap",
            "toolbound: Bash sandbox: OFF, commands run UNCONFINED with the network: the "
            "default workspace-write sandbox cannot be built here (/no/such/bwrap could not "
            "be run (",
        ),
        (
            ["--sandbox", "workspace-write", "--no-network"],
            None,
            "toolbound: Bash sandbox: workspace-write, no network (bubblewrap ",
        ),
        (
            ["--sandbox", "read-only"],
            "/no/such/bwrap",
            "toolbound: Bash sandbox: read-only, network requested but UNAVAILABLE: "
            "/no/such/bwrap could not be run (",
        ),
    ],
)
def test_serve_prints_the_sandbox_in_force(
    places: dict[str, Path], args: list[str], bwrap: str | None, said: str
) -> None:
    env = dict(os.environ)
    if bwrap is not None:
        env[BWRAP_VAR] = bwrap
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "toolbound", "serve", "--stdio"),
            *("--workspace", str(places["ws"]), "--data-dir", str(places["data"]), *args),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        # stdin closed: the server stops once it has started.
        _out, err = proc.communicate("", timeout=CALL_BOUND_S)
    finally:
        proc.kill()
        proc.wait()
    assert err.splitlines()[0].startswith(said)
