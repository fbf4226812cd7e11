"""Fixtures for the edit core: roots with a workspace, and Reads recorded by the real Read
(its window's raw bytes hashed into the record)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from toolbound.edit import ReadRecord
from toolbound.limits import DEFAULT_LIMITS
from toolbound.paths import Roots
from toolbound.tools.read import read_window


@pytest.fixture
def roots(tmp_path: Path) -> Roots:
    for d in ("ws", "data/scratch/s1", "ext", "outside"):
        (tmp_path / d).mkdir(parents=True)
    return Roots.create(tmp_path / "ws", tmp_path / "data/scratch/s1", [tmp_path / "ext"])


@pytest.fixture
def ws(roots: Roots) -> Path:
    return roots.workspace


@pytest.fixture
def record() -> ReadRecord:
    return ReadRecord()


@pytest.fixture
def read(roots: Roots, record: ReadRecord) -> Callable[..., str]:
    """Read a window with the real Read and record it; returns the window's content."""
    calls = iter(range(1, 1_000_000))

    def run(path: str, *, offset: int = 0, limit: int = 2000) -> str:
        result = read_window(
            roots,
            path,
            offset=offset,
            limit=limit,
            limits=DEFAULT_LIMITS,
            record=record,
            call_id=f"r{next(calls)}",
        )
        return result.content

    return run
