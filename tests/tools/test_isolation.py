"""Isolation of commands from the server (CONTRACT section 16): no secret in a
command's environment, no store or other session inside the sandbox, no host
socket without the network, and bounds a fork bomb or a memory bomb meets.

Every test runs real commands through the real host (and a real bwrap); the
data dir lives under /var/tmp, outside the private /tmp of the sandbox, as the
default ``~/.local/share/toolbound`` does.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pgserver
from jobs_support import ended, start
from support import SANDBOX_PYTHON, run_cli
from toolbound import DEFAULT_LIMITS, ToolHost

LIMITS = DEFAULT_LIMITS.replace(kill_grace_s=0.3)
CALL_BOUND_S = 30.0
SECRETS = ("TOOLBOUND_TOKEN", "TOOLBOUND_STORE", "DEPLOY_KEY")

pg = pytest.fixture(scope="session")(pgserver.running)


@pytest.fixture
def places() -> Iterator[dict[str, Path]]:
    """A workspace and a data dir under /var/tmp (outside the sandbox's own /tmp)."""
    root = Path(tempfile.mkdtemp(prefix="toolbound-isolation-", dir="/var/tmp"))
    found = {name: root / name for name in ("ws", "data", "cache")}
    for path in found.values():
        path.mkdir()
    yield found
    shutil.rmtree(root)


async def bash(host: ToolHost, command: str, **args: Any) -> dict[str, Any]:
    return await asyncio.wait_for(host.call("Bash", {"command": command, **args}), CALL_BOUND_S)


def names_in(env_output: str) -> set[str]:
    return {line.partition("=")[0] for line in env_output.splitlines() if "=" in line}


# -- secrets ------------------------------------------------------------------------------


@pytest.mark.parametrize("sandbox", ["off", "workspace-write"])
async def test_no_command_gets_the_servers_secrets_in_its_environment(
    places: dict[str, Path], sandbox: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLBOUND_TOKEN", "the-bearer-token")
    monkeypatch.setenv("TOOLBOUND_STORE", str(places["data"]))
    monkeypatch.setenv("DEPLOY_KEY", "hunter2")
    monkeypatch.setenv("HARMLESS", "kept")
    async with ToolHost(
        places["ws"],
        places["data"],
        "s1",
        limits=LIMITS,
        sandbox=sandbox,
        keep_env_back=["DEPLOY_KEY"],
    ) as host:
        foreground = await bash(host, "env")
        job = await ended(host, (await start(host, "env"))["jobId"])
    for output in (foreground["stdout"], job["stdout"]):
        seen = names_in(output)
        assert {"HARMLESS", "PATH"} <= seen
        assert seen.isdisjoint(SECRETS)
        assert "the-bearer-token" not in output
        assert "hunter2" not in output


def test_call_keeps_back_the_variables_it_is_told_to(places: dict[str, Path]) -> None:
    env = {**os.environ, "DEPLOY_KEY": "hunter2", "OTHER_KEY": "s3cret", "HARMLESS": "kept"}
    done = run_cli(
        *("call", "Bash", json.dumps({"command": "env"})),
        *("--workspace", str(places["ws"]), "--data-dir", str(places["data"])),
        *("--keep-env-back", "DEPLOY_KEY", "--keep-env-back", "OTHER_KEY"),
        cwd=places["ws"],
        env=env,
    )
    assert done.returncode == 0, done.stderr
    seen = names_in(json.loads(done.stdout)["stdout"])
    assert "HARMLESS" in seen
    assert seen.isdisjoint({"DEPLOY_KEY", "OTHER_KEY"})


def test_a_name_that_cannot_be_a_variable_is_refused(places: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match="--keep-env-back takes a variable's name"):
        ToolHost(places["ws"], places["data"], keep_env_back=["A=B"])


# -- the data dir and the scratch dir -------------------------------------------------------


@pytest.mark.parametrize("sandbox", ["read-only", "workspace-write"])
async def test_a_confined_command_sees_only_its_own_scratch_dir_and_only_to_read(
    places: dict[str, Path], sandbox: str
) -> None:
    data = places["data"]
    many_lines = "seq 1 30000"
    async with ToolHost(places["ws"], data, "other", limits=LIMITS) as other:
        others_spill = (await bash(other, many_lines))["spill"]["stdout"]
    async with ToolHost(places["ws"], data, "s1", limits=LIMITS, sandbox=sandbox) as host:
        own_spill = (await bash(host, many_lines))["spill"]["stdout"]
        scratch = host.scratch.dir
        probe = (
            f"ls -A {data}; ls -A {data}/scratch; "
            f"test -e {data}/toolbound.db && echo store visible; "
            f"test -e {others_spill} && echo other session visible; "
            f"tail -n 1 {own_spill}; "
            f"ln -s {places['cache']} {scratch}/jobs 2>/dev/null && echo planted; "
            f"echo x > {scratch}/made 2>/dev/null && echo wrote scratch; "
            f"echo x > {data}/made 2>/dev/null && echo wrote data; true"
        )
        result = await bash(host, probe)
    assert result["stdout"] == "scratch\ns1\n30000\n"
    assert not (scratch / "jobs").exists()
    assert not (scratch / "made").exists()
    assert not (data / "made").exists()


async def test_a_data_dir_inside_the_workspace_stays_masked_and_the_rest_writable(
    places: dict[str, Path],
) -> None:
    ws = places["ws"]
    async with ToolHost(
        ws, ws / ".toolbound", "s1", limits=LIMITS, sandbox="workspace-write"
    ) as host:
        result = await bash(host, "ls -A .toolbound; echo x > made; echo y > .toolbound/x; true")
    assert result["stdout"] == "scratch\n"
    assert "Read-only file system" in result["stderr"]
    assert (ws / "made").read_text() == "x\n"
    assert not (ws / ".toolbound" / "x").exists()


@pytest.mark.parametrize(
    ("sandbox", "network"), [("read-only", True), ("workspace-write", True), ("off", False)]
)
async def test_a_confined_command_holds_no_capability_and_cannot_unmask_the_data_dir(
    places: dict[str, Path], sandbox: str, network: bool
) -> None:
    # Run as root, a command left with its user namespace's capabilities could
    # unmount the data dir's mask and read the store beneath it.
    data = places["data"]
    probe = (
        "grep -E '^Cap(Prm|Eff|Bnd|Amb)' /proc/self/status; "
        f"umount {data} 2>/dev/null && echo unmounted; "
        f"test -e {data}/toolbound.db && echo store visible; true"
    )
    async with ToolHost(
        places["ws"], data, "s1", limits=LIMITS, sandbox=sandbox, network=network
    ) as host:
        assert (data / "toolbound.db").exists()
        result = await bash(host, probe)
    assert result["stdout"].split() == [
        *("CapPrm:", "0" * 16, "CapEff:", "0" * 16),
        *("CapBnd:", "0" * 16, "CapAmb:", "0" * 16),
    ]


# -- host sockets -----------------------------------------------------------------------------

CONNECT = (
    "import socket, sys\n"
    "s = socket.socket(socket.AF_UNIX)\n"
    "try:\n"
    "    s.connect(sys.argv[1])\n"
    "    print('reached')\n"
    "except OSError as err:\n"
    "    print('unreachable', type(err).__name__)\n"
)


async def test_without_network_no_host_socket_is_reachable(
    places: dict[str, Path], pg: pgserver.PgServer
) -> None:
    url = pg.new_url()
    socket_path = next(pg.root.glob(".s.PGSQL.*"))
    command = f"{SANDBOX_PYTHON} -c {shlex.quote(CONNECT)} {socket_path}; ls -A /run | wc -l"
    async with ToolHost(places["ws"], places["data"], "s1", limits=LIMITS, store=url) as host:
        assert (await bash(host, command))["stdout"].startswith("reached\n")
    async with ToolHost(
        places["ws"], places["data"], "s2", limits=LIMITS, store=url, network=False
    ) as host:
        result = await bash(host, command)
    assert result["stdout"] == "unreachable FileNotFoundError\n0\n"


# -- bounds ---------------------------------------------------------------------------------

SMALL = LIMITS.replace(
    sandbox_max_processes=64,
    sandbox_memory_bytes=512 * 1024 * 1024,
    sandbox_tmp_bytes=8 * 1024 * 1024,
)


async def test_a_fork_bomb_meets_the_process_bound_and_the_host_goes_on(
    places: dict[str, Path],
) -> None:
    bomb = "b() { b | b & }; b; wait"
    async with ToolHost(
        places["ws"], places["data"], "s1", limits=SMALL, sandbox="workspace-write"
    ) as host:
        result = await bash(host, bomb, timeout=3)
        after = await bash(host, "echo still here")
    # It ends at its timeout, or earlier once its forks fail; either way it met the bound.
    assert (
        "the Bash sandbox's bound of at most 64 processes (sandbox_max_processes)"
        in (result["notice"])
    )
    assert after["stdout"] == "still here\n"


async def test_a_memory_bomb_meets_the_memory_bound(places: dict[str, Path]) -> None:
    bomb = f"{SANDBOX_PYTHON} -c 'x = bytearray(2 * 1024**3)'"
    async with ToolHost(
        places["ws"], places["data"], "s1", limits=SMALL, sandbox="workspace-write"
    ) as host:
        result = await bash(host, bomb)
    assert result["exitCode"] == 1
    assert result["stderr"].endswith("MemoryError\n")
    assert (
        "at most 512 MB of address space per process (sandbox_memory_bytes)" in (result["notice"])
    )


async def test_the_private_tmp_is_bounded(places: dict[str, Path]) -> None:
    fill = "head -c 16777216 /dev/zero > /tmp/fill"
    async with ToolHost(
        places["ws"], places["data"], "s1", limits=SMALL, sandbox="read-only"
    ) as host:
        result = await bash(host, fill)
    assert result["exitCode"] == 1
    assert "No space left on device" in result["stderr"]
    assert "a private /tmp of 8 MB (sandbox_tmp_bytes)" in result["notice"]


# -- what stays writable --------------------------------------------------------------------


async def test_allow_write_and_protect_git_shape_what_a_command_may_write(
    places: dict[str, Path],
) -> None:
    ws = places["ws"]
    await asyncio.to_thread(subprocess.run, ["git", "init", "-q", str(ws)], check=True)
    command = (
        'try() { if echo x >> "$1" 2>/dev/null; then echo "wrote $1"; '
        'else echo "refused $1"; fi; }; '
        f"try {places['cache']}/f; try .git/hooks/pre-commit; try .git/config; try .git/HEAD"
    )
    async with ToolHost(
        ws,
        places["data"],
        "s1",
        limits=LIMITS,
        sandbox="workspace-write",
        allow_write=[places["cache"]],
        protect_git=True,
    ) as host:
        result = await bash(host, command)
    assert result["stdout"] == (
        f"wrote {places['cache']}/f\nrefused .git/hooks/pre-commit\n"
        "refused .git/config\nwrote .git/HEAD\n"
    )
    assert not (ws / ".git/hooks/pre-commit").exists()


def test_the_sandbox_options_reach_call(places: dict[str, Path]) -> None:
    done = run_cli(
        *("call", "Bash", json.dumps({"command": f"echo x > {places['cache']}/f"})),
        *("--workspace", str(places["ws"]), "--data-dir", str(places["data"])),
        *("--sandbox", "workspace-write", "--allow-write", str(places["cache"])),
        cwd=places["ws"],
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (places["cache"] / "f").read_text() == "x\n"


def test_serve_refuses_a_writable_folder_that_is_not_one_at_start(
    places: dict[str, Path],
) -> None:
    missing = places["ws"] / "missing"
    done = run_cli(
        *("serve", "--stdio", "--workspace", str(places["ws"]), "--allow-write", str(missing)),
        cwd=places["ws"],
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"toolbound: --allow-write {missing} is not a folder\n"
