"""A fresh store in a temporary data dir."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from toolbound.store import SessionStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(tmp_path / "data") as s:
        yield s
