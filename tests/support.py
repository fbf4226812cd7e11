"""Helpers shared by test modules (importable: ``tests`` is on pytest's pythonpath)."""

from __future__ import annotations

import os
from pathlib import Path

T0 = 1_700_000_000  # a fixed epoch second; files get T0 - age as their mtime


def write(root: Path, rel: str, data: str | bytes = "x\n", *, age: int | None = None) -> Path:
    """Write a file; ``age`` n sets its mtime to T0 - n (bigger is older)."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    if age is not None:
        os.utime(path, (T0 - age, T0 - age))
    return path
