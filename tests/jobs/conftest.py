"""Fixtures for the background job tests: a workspace and a host serving it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from toolbound import ToolHost


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
async def host(tmp_path: Path, ws: Path) -> AsyncIterator[ToolHost]:
    async with ToolHost(ws, data_dir=tmp_path / "data", session_id="s1") as h:
        yield h
