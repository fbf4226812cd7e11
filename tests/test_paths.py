"""Roots: workspace, scratch and external; anything else is refused before it is opened."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolbound.paths import Roots, default_data_dir
from toolbound.results import ToolError


@pytest.fixture
def roots(tmp_path: Path) -> Roots:
    for d in ("ws/src", "data/scratch/s1", "ext", "outside"):
        (tmp_path / d).mkdir(parents=True)
    return Roots.create(tmp_path / "ws", tmp_path / "data/scratch/s1", [tmp_path / "ext"])


def test_relative_paths_are_workspace_relative(roots: Roots, tmp_path: Path) -> None:
    r = roots.resolve("src/app.py")
    assert (r.real, r.root, r.shown) == (tmp_path / "ws/src/app.py", "workspace", "src/app.py")
    assert roots.resolve(None).shown == "."


def test_an_absolute_path_in_the_workspace_is_shown_relative(roots: Roots, tmp_path: Path) -> None:
    r = roots.resolve(str(tmp_path / "ws/src/x"))
    assert (r.root, r.shown) == ("workspace", "src/x")


def test_scratch_and_external_paths_are_absolute(roots: Roots, tmp_path: Path) -> None:
    s = roots.resolve(str(tmp_path / "data/scratch/s1/tool-output/a.log"))
    assert (s.root, s.shown) == ("scratch", str(tmp_path / "data/scratch/s1/tool-output/a.log"))
    e = roots.resolve(str(tmp_path / "ext/f"))
    assert (e.root, e.shown) == ("external", str(tmp_path / "ext/f"))


@pytest.mark.parametrize("path", ["../outside/f", "/etc/passwd", "src/../../outside"])
def test_escapes_are_refused_naming_allow_external(roots: Roots, path: str) -> None:
    with pytest.raises(ToolError) as err:
        roots.resolve(path)
    assert err.value.code == "TOOL_PATH_NOT_ALLOWED"
    assert "--allow-external" in err.value.message


def test_a_symlink_out_of_the_roots_is_refused(roots: Roots, tmp_path: Path) -> None:
    (tmp_path / "ws/link").symlink_to(tmp_path / "outside")
    with pytest.raises(ToolError) as err:
        roots.resolve("link/secret")
    assert err.value.code == "TOOL_PATH_NOT_ALLOWED"


def test_another_sessions_scratch_is_outside(roots: Roots, tmp_path: Path) -> None:
    (tmp_path / "data/scratch/s2").mkdir()
    with pytest.raises(ToolError):
        roots.resolve(str(tmp_path / "data/scratch/s2/x"))


def test_data_dir_default_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TOOLBOUND_DATA_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "x"))
    assert default_data_dir() == tmp_path / "a"
    monkeypatch.delenv("TOOLBOUND_DATA_DIR")
    assert default_data_dir() == tmp_path / "x" / "toolbound"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_data_dir() == tmp_path / "home/.local/share/toolbound"
