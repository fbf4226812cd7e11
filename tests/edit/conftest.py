"""Fixtures for the edit core: roots with a workspace, and Reads recorded as the Read tool
would record them (the real Read window, its raw bytes hashed)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from toolbound.edit import ReadRecord, content_digest
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
        result = read_window(roots, path, offset=offset, limit=limit, limits=DEFAULT_LIMITS)
        real = roots.resolve(path).real
        data = real.read_bytes()
        lines = data.splitlines(keepends=True)
        start = sum(len(line) for line in lines[:offset])
        end = start + len(result.content.encode("utf-8"))
        record.saw_window(
            real,
            call_id=f"r{next(calls)}",
            offset=offset,
            limit=limit,
            line_count=result.line_count,
            start_byte=start,
            end_byte=end,
            at_eof=result.total_lines is not None,
            digest=content_digest(data, start, end),
        )
        return result.content

    return run
