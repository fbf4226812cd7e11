"""Shared fixtures."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from toolbound import ToolHost

# Root reads any file (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH). Without those two
# capabilities root obeys file modes like any user, while still owning its paths.
_NO_DAC = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]

# A child that calls one tool through a real ToolHost and prints its result.
CALL_ONE_TOOL = """
import asyncio, json, sys
from toolbound import ToolHost

async def main(ws, data, tool, args):
    async with ToolHost(ws, data_dir=data, session_id="unprivileged") as host:
        print(json.dumps(await host.call(tool, json.loads(args))))

asyncio.run(main(*sys.argv[1:]))
"""

Unprivileged = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture
def unprivileged() -> Unprivileged:
    """Run ``python -c CALL_ONE_TOOL ws data tool args`` where file modes bind.

    As root the child loses the capabilities that bypass file modes (so a
    ``chmod 0`` file is really unreadable); as any other user it runs as is.
    """
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.fail("running as root needs setpriv (util-linux) to test file modes")
        prefix = _NO_DAC

    def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*prefix, sys.executable, "-c", CALL_ONE_TOOL, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    return run


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """An empty workspace folder."""
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
async def host(tmp_path: Path, ws: Path) -> AsyncIterator[ToolHost]:
    """A started host serving ``ws``, session ``s1``, its data dir beside it."""
    async with ToolHost(ws, data_dir=tmp_path / "data", session_id="s1") as h:
        yield h
