"""The process tree outlives nothing: when the host process dies, its trees die too.
And the shell it starts is the bash on PATH as PATH is now."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from support import wait_for
from toolbound import ToolHost
from toolbound.exec.tree import environment

DEADLINE_S = 15.0

HOST = """
import asyncio, json, sys
from toolbound import ToolHost
from toolbound.exec.tree import environment

async def main():
    async with ToolHost(sys.argv[1], sys.argv[2], "doomed") as host:
        await host.call("Bash", json.loads(sys.argv[3]))

asyncio.run(main())
"""

# The shell, a setsid grandchild and a double-forked daemon, each noting its PID.
TREE = (
    "setsid bash -c 'echo $$ >> pids; exec sleep 600' & "
    "( setsid bash -c 'echo $$ >> pids; exec sleep 600' & ) ; "
    "echo $$ >> pids; sleep 600"
)


def is_dead(pid: int) -> bool:
    """Gone, or exited and only waiting for its parent (this process, as a subreaper,
    may be that parent: then reap it here)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def test_killing_the_host_kills_its_whole_tree(tmp_path: Path) -> None:
    pids_file = tmp_path / "pids"
    host = subprocess.Popen(
        [
            sys.executable,
            "-c",
            HOST,
            str(tmp_path),
            str(tmp_path / "data"),
            json.dumps({"command": TREE}),
        ]
    )
    try:
        wait_for(
            lambda: pids_file.exists() and len(pids_file.read_text().split()) == 3,
            "the tree to start",
        )
        pids = [int(p) for p in pids_file.read_text().split()]
        assert [pid for pid in pids if is_dead(pid)] == []
    finally:
        host.send_signal(signal.SIGKILL)
        host.wait(DEADLINE_S)
    wait_for(lambda: all(is_dead(pid) for pid in pids), "the orphaned tree to die")


async def test_a_changed_path_is_searched_again_for_bash(
    host: ToolHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = shutil.which("bash")
    assert real is not None
    first_on_path = tmp_path / "bin"
    first_on_path.mkdir()
    wrapper = first_on_path / "bash"
    wrapper.write_text(f'#!{real}\necho wrapped >&2\nexec {real} "$@"\n')
    wrapper.chmod(0o755)

    async def stderr_of_true() -> str:
        result = await asyncio.wait_for(host.call("Bash", {"command": "true"}), DEADLINE_S)
        return str(result["stderr"])

    before = await stderr_of_true()
    monkeypatch.setenv("PATH", f"{first_on_path}{os.pathsep}{os.environ['PATH']}")
    wrapped = await stderr_of_true()
    monkeypatch.undo()
    after = await stderr_of_true()
    assert (before, wrapped, after) == ("", "wrapped\n", "")


def test_the_environment_a_shell_gets_is_the_hosts_as_it_is_now(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Copied from os.environb's own dict: every change made through os.environ shows.
    monkeypatch.setenv("TOOLBOUND_TEST_VAR", "caf\u00e9")
    monkeypatch.delenv("HOME", raising=False)
    env = environment()
    assert env == dict(os.environb)
    assert env[b"TOOLBOUND_TEST_VAR"] == "caf\u00e9".encode()
    assert b"HOME" not in env
    env[b"ONLY_IN_THE_COPY"] = b"1"
    assert b"ONLY_IN_THE_COPY" not in os.environb
