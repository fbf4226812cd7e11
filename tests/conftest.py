"""Shared fixtures, and the slow tier.

The slow tier (``@pytest.mark.slow``; ``make unit-quick`` runs ``-m "not slow"``):
the tests that drive a browser, a real PostgreSQL server or a real harness are
marked here by what they use (``pytest_collection_modifyitems``); a big-data
test carries the marker itself.
"""

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

# What makes a test slow (measured with --durations): Chromium, a PostgreSQL
# server, the TypeScript SDK client from npm, the real harnesses.
SLOW_FIXTURES = frozenset({"chromium", "pg", "ts_client"})
SLOW_PARAMS = {"backend": "postgresql"}
SLOW_DIRS = frozenset({"harness"})


def is_slow(item: pytest.Item) -> bool:
    """Whether ``item`` uses what makes the slow tier slow (see SLOW_FIXTURES)."""
    fixtures = set(getattr(item, "fixturenames", ()))
    callspec = getattr(item, "callspec", None)
    params: dict[str, object] = callspec.params if callspec is not None else {}
    under = item.path.relative_to(Path(__file__).parent).parts[:-1]
    return (
        bool(fixtures & SLOW_FIXTURES)
        or any(params.get(name) == value for name, value in SLOW_PARAMS.items())
        or bool(SLOW_DIRS.intersection(under))
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)


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
