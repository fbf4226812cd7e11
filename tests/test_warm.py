"""A host imports its tools as it starts (``warm``), so no call pays an import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from toolbound.tools.registry import SPECS

_CHILD = """
import asyncio, sys
from toolbound import ToolHost

async def main(warm):
    async with ToolHost(sys.argv[1], data_dir=sys.argv[2], warm=warm):
        print(",".join(sorted(m for m in sys.modules if m.startswith("toolbound.tools."))))

asyncio.run(main(sys.argv[3] == "1"))
"""


@pytest.mark.parametrize("warm", [True, False])
def test_a_started_host_has_imported_every_tool_unless_told_not_to(
    tmp_path: Path, warm: bool
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path), str(tmp_path / "d"), str(int(warm))],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    imported = set(done.stdout.strip().split(","))
    runners = {spec.module for spec in SPECS}
    if warm:
        assert runners <= imported
    else:
        assert not runners & imported
