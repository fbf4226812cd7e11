"""A job runs under the host's sandbox like any Bash call, and JobStop stops the sandbox."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs_support import alive, start
from toolbound import DEFAULT_LIMITS, ToolHost


@pytest.fixture
def places() -> Iterator[dict[str, Path]]:
    """A workspace, a data dir and a folder outside both, under /var/tmp (the sandbox's
    /tmp is its own)."""
    root = Path(tempfile.mkdtemp(prefix="toolbound-jobs-", dir="/var/tmp"))
    found = {name: root / name for name in ("ws", "data", "outside")}
    for path in found.values():
        path.mkdir()
    yield found
    shutil.rmtree(root)


async def test_a_job_in_a_sandboxed_host_writes_only_the_workspace(
    places: dict[str, Path],
) -> None:
    limits = DEFAULT_LIMITS.replace(kill_grace_s=0.3)
    async with ToolHost(
        places["ws"], places["data"], "s1", limits=limits, sandbox="workspace-write"
    ) as host:
        outside, inside = places["outside"] / "f", places["ws"] / "f"
        command = (
            f"(echo x > {outside}) 2>/dev/null && echo wrote outside || echo refused outside; "
            f"echo x > {inside} && echo wrote inside; sleep 600"
        )
        started = await start(host, command)
        out = await host.call(
            "JobOutput", {"jobId": started["jobId"], "until": "inside$", "waitS": 30}
        )
        assert out["stdout"] == "refused outside\nwrote inside\n"
        stopped = await host.call("JobStop", {"jobId": started["jobId"]})
        assert stopped["state"] == "killed"
        assert not alive(started["pid"])
