"""The component walk from a root's descriptor: symlinks inside kept, leaving refused."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from toolbound import fsroot
from toolbound.fsroot import Outside, private_dir, walk
from toolbound.paths import Roots
from toolbound.results import ToolError


@pytest.fixture(params=["openat2", "per-component"])
def walk_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    mode = str(request.param)
    if mode == "per-component":
        monkeypatch.setattr(fsroot, "openat2_available", lambda: False)
    return mode


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "real" / "deep").mkdir(parents=True)
    (root / "real" / "deep" / "f.txt").write_text("f\n")
    (tmp_path / "outside").mkdir()
    return root


def test_a_plain_path_ends_at_its_folder_with_the_file_stat(ws: Path, walk_mode: str) -> None:
    with walk(ws, ["real", "deep", "f.txt"]) as spot:
        assert (spot.parts, spot.rest) == (["real", "deep"], ("f.txt",))
        assert spot.st is not None
        assert stat.S_ISREG(spot.st.st_mode)
        fd = spot.open(os.O_RDONLY)
        assert os.read(fd, 10) == b"f\n"
        os.close(fd)


def test_a_symlink_that_stays_inside_is_followed_component_by_component(
    ws: Path, walk_mode: str
) -> None:
    (ws / "hop").symlink_to("real/deep")
    (ws / "real" / "up").symlink_to("../hop")
    with walk(ws, ["real", "up", "f.txt"]) as spot:
        assert (spot.parts, spot.rest) == (["real", "deep"], ("f.txt",))


def test_dot_dot_after_a_symlink_is_the_physical_parent(ws: Path, walk_mode: str) -> None:
    (ws / "link").symlink_to("real/deep")
    with walk(ws, ["link", "..", "deep", "f.txt"]) as spot:
        assert (spot.parts, spot.rest) == (["real", "deep"], ("f.txt",))


def test_a_step_out_of_the_root_says_where_it_leads(ws: Path, walk_mode: str) -> None:
    (ws / "abs").symlink_to(ws.parent / "outside")
    (ws / "rel").symlink_to("../outside")
    with pytest.raises(Outside) as out:
        walk(ws, ["abs", "x"])
    assert out.value.path == str(ws.parent / "outside" / "x")
    with pytest.raises(Outside) as out:
        walk(ws, ["rel", "x"])
    assert out.value.path == str(ws.parent / "outside" / "x")
    with pytest.raises(Outside):
        walk(ws, ["real", "..", "..", "outside"])


def test_forty_symlinks_are_a_loop(ws: Path, walk_mode: str) -> None:
    (ws / "loop").symlink_to("loop")
    with pytest.raises(OSError, match="symbolic links") as err:
        walk(ws, ["loop", "x"])
    assert err.value.errno == errno.ELOOP


def test_a_strict_walk_refuses_any_symlink(ws: Path, walk_mode: str) -> None:
    (ws / "link").symlink_to("real")
    with pytest.raises(OSError, match="changed while it was being opened") as err:
        walk(ws, ["link", "deep", "f.txt"], follow_last=False, strict=True)
    assert err.value.errno == errno.EAGAIN


def test_missing_folders_are_named_and_made_with_mkdirat(ws: Path, walk_mode: str) -> None:
    with walk(ws, ["real", "new", "newer", "g.txt"]) as spot:
        assert (spot.parts, spot.rest, spot.st) == (["real"], ("new", "newer", "g.txt"), None)
        assert isinstance(spot.missing(), FileNotFoundError)
        spot.make_parents()
        assert (spot.parts, spot.rest) == (["real", "new", "newer"], ("g.txt",))
    assert (ws / "real" / "new" / "newer").is_dir()


def test_a_file_where_a_folder_should_be_is_not_a_directory(ws: Path, walk_mode: str) -> None:
    with walk(ws, ["real", "deep", "f.txt", "x"]) as spot:
        assert isinstance(spot.missing(), NotADirectoryError)


def test_a_planted_symlink_or_file_is_replaced_by_a_private_folder(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "tool-output").symlink_to(tmp_path / "outside")
    (tmp_path / "jobs").write_text("planted")
    parent = fsroot.open_dir(tmp_path)
    try:
        for name in ("tool-output", "jobs"):
            os.close(private_dir(parent, name))
            st = os.lstat(tmp_path / name)
            assert (stat.S_ISDIR(st.st_mode), stat.S_IMODE(st.st_mode)) == (True, 0o700)
    finally:
        os.close(parent)
    assert os.listdir(tmp_path / "outside") == []


def test_roots_refuse_a_symlink_chain_that_ends_outside(ws: Path, walk_mode: str) -> None:
    roots = Roots.create(ws, ws.parent / "scratch")
    (ws / "a").symlink_to("b")
    (ws / "b").symlink_to(ws.parent / "outside" / "secret")
    with pytest.raises(ToolError) as err:
        roots.resolve("a")
    assert err.value.code == "TOOL_PATH_NOT_ALLOWED"
    assert roots.resolve("real/./deep//f.txt").shown == "real/deep/f.txt"


def test_openat2_is_probed_once_and_answers_a_boolean() -> None:
    assert fsroot.openat2_available() in (True, False)
    assert fsroot.openat2_available.cache_info().currsize == 1
