"""Roots: workspace, scratch and external; anything else is refused before it is opened."""

from __future__ import annotations

import collections
import contextlib
import errno
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolbound.host import ToolHost
from toolbound.paths import Roots, default_data_dir, os_error, os_error_kind
from toolbound.results import ToolError

# How long the symlink-swapping race runs (about one Read in eight raised before).
SWAP_FOR_S = 1.5


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


# Swaps the symlink `link` (argv[1]) between pointing at a file, a folder, a chain and
# nothing, a plain file, and no file at all, as another process may at any moment, until
# its stdin closes. A process of its own, so the swaps interleave with the resolving.
SWAPPER = """
import os, sys, threading
link = sys.argv[1]
tmp = link + ".tmp"
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
print("swapping", flush=True)
while not done.is_set():
    for target in ("a.txt", "sub", "chain", "gone.txt"):
        os.symlink(target, tmp)
        os.replace(tmp, link)
    with open(tmp, "w") as f:
        f.write("plain\\n")
    os.replace(tmp, link)
    os.unlink(link)
"""


@contextlib.contextmanager
def swapping(link: Path) -> Iterator[None]:
    """The SWAPPER process swapping ``link`` for as long as the block runs."""
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(link)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert swapper.stdin is not None
    assert swapper.stdout is not None
    try:
        assert swapper.stdout.readline() == "swapping\n"
        yield
    finally:
        swapper.stdin.close()
        swapper.wait(timeout=10)
        swapper.stdout.close()
    assert swapper.returncode == 0


async def test_a_symlink_swapped_while_it_resolves_ends_in_a_result(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "a.txt").write_text("a\n")
    (ws / "sub" / "b.txt").write_text("b\n")
    os.symlink("a.txt", ws / "chain")
    calls = [
        ("Read", {"path": "link"}),
        ("Read", {"path": "link/b.txt"}),
        ("Glob", {"pattern": "*", "path": "link"}),
        ("Grep", {"pattern": ".", "path": "link"}),
    ]
    codes: collections.Counter[str] = collections.Counter()
    with swapping(ws / "link"):
        async with ToolHost(workspace=ws, data_dir=tmp_path / "data") as host:
            deadline = time.monotonic() + SWAP_FOR_S
            while time.monotonic() < deadline:
                for tool, args in calls:
                    result = await host.call(tool, args)
                    assert isinstance(result, dict)
                    code = result["error"]["code"] if "error" in result else "ok"
                    assert code == "ok" or code.startswith("TOOL_"), result
                    codes[code] += 1
    assert codes["ok"] > 0, codes
    assert sum(codes.values()) >= 40, codes


# -- the one OSError map -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("number", "code"),
    [
        (errno.EACCES, "TOOL_PERMISSION_DENIED"),
        (errno.EROFS, "TOOL_PERMISSION_DENIED"),
        (errno.ENOSPC, "TOOL_PERMISSION_DENIED"),
        (errno.ENOENT, "TOOL_NOT_FOUND"),
        (errno.ENAMETOOLONG, "TOOL_INVALID_ARGUMENT"),
        (errno.EIO, "TOOL_NOT_FOUND"),
    ],
)
def test_an_os_error_maps_to_one_code_whoever_words_it(number: int, code: str) -> None:
    err = OSError(number, os.strerror(number), "a/b.txt")
    general = os_error(err)
    worded = os_error(err, "b.txt", words=lambda kind: f"{kind} on b.txt")
    assert general.code == worded.code == code
    assert "a/b.txt" in general.message
    assert worded.message == f"{os_error_kind(err)} on b.txt"


def test_a_full_disk_says_so_not_that_the_path_vanished() -> None:
    err = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "out.log")
    assert os_error(err).message == (
        "out.log: No space left on device (no space left). Free some space, then call again."
    )
