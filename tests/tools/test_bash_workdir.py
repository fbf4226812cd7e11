"""Bash ``workdir``: a command starts in a workspace folder, reached like any path.

The folder is resolved from the workspace's descriptor a component at a time
(``toolbound.fsroot``); one outside the workspace, or a symlink leading out,
is refused before anything runs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs_support import ended, start
from toolbound import ToolHost
from toolbound.model_text import model_text


async def test_a_command_starts_in_a_workdir_with_spaces_and_the_text_names_it(
    host: ToolHost, ws: Path
) -> None:
    (ws / "sub dir" / "deeper").mkdir(parents=True)
    (ws / "sub dir" / "here.txt").write_text("x\n")
    out = await host.call("Bash", {"command": "pwd; ls", "workdir": "sub dir"})
    assert out["stdout"] == f"{ws / 'sub dir'}\ndeeper\nhere.txt\n"
    assert out["workdir"] == "sub dir"
    assert model_text("Bash", out).startswith("[exit status 0]\n[in sub dir]\n")
    nested = await host.call("Bash", {"command": "pwd", "workdir": "./sub dir/deeper/"})
    assert (nested["stdout"], nested["workdir"]) == (
        f"{ws / 'sub dir' / 'deeper'}\n",
        "sub dir/deeper",
    )


async def test_the_workspace_root_as_workdir_is_not_named(host: ToolHost, ws: Path) -> None:
    out = await host.call("Bash", {"command": "pwd", "workdir": "."})
    assert out["stdout"] == f"{ws}\n"
    assert "workdir" not in out
    assert "[in " not in model_text("Bash", out)


async def test_a_workdir_symlink_out_of_the_workspace_is_refused_and_nothing_runs(
    host: ToolHost, ws: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "out").symlink_to(outside)
    (ws / "in").mkdir()
    (ws / "in" / "back").symlink_to(outside)
    for workdir in ("out", "in/back", "..", str(outside)):
        refused = await host.call("Bash", {"command": "touch ran", "workdir": workdir})
        assert refused["error"]["code"] == "TOOL_PATH_NOT_ALLOWED", workdir
    assert not (outside / "ran").exists()
    assert not (tmp_path / "ran").exists()


async def test_a_symlink_to_a_folder_inside_the_workspace_is_followed(
    host: ToolHost, ws: Path
) -> None:
    (ws / "real").mkdir()
    (ws / "alias").symlink_to("real")
    out = await host.call("Bash", {"command": "pwd -P", "workdir": "alias"})
    assert (out["stdout"], out["workdir"]) == (f"{ws / 'real'}\n", "real")


async def test_a_workdir_that_is_missing_or_a_file_is_a_clear_error(
    host: ToolHost, ws: Path
) -> None:
    (ws / "a.txt").write_text("x\n")
    missing = await host.call("Bash", {"command": "true", "workdir": "nope"})
    assert missing["error"]["code"] == "TOOL_NOT_FOUND"
    assert "workdir nope does not exist" in missing["error"]["message"]
    deeper = await host.call("Bash", {"command": "true", "workdir": "nope/deeper"})
    assert deeper["error"]["code"] == "TOOL_NOT_FOUND"
    a_file = await host.call("Bash", {"command": "true", "workdir": "a.txt"})
    assert a_file["error"]["code"] == "TOOL_INVALID_ARGUMENT"
    assert "workdir a.txt is a file, not a folder" in a_file["error"]["message"]


async def test_a_scratch_folder_is_no_workdir(host: ToolHost) -> None:
    assert host.scratch.ensure()
    refused = await host.call("Bash", {"command": "true", "workdir": str(host.scratch.dir)})
    assert refused["error"]["code"] == "TOOL_PATH_NOT_ALLOWED"


async def test_a_job_starts_in_its_workdir(host: ToolHost, ws: Path) -> None:
    (ws / "srv").mkdir()
    started = await start(host, "pwd", workdir="srv")
    assert started["workdir"] == "srv"
    assert ", in srv]" in model_text("Bash", started)
    out = await ended(host, started["jobId"])
    assert out["stdout"] == f"{ws / 'srv'}\n"


async def test_the_command_starts_in_the_folder_the_descriptor_holds(
    host: ToolHost, ws: Path
) -> None:
    # The folder is held open from its walk to the start: the shell's cwd is that
    # very folder (same device and inode), not whatever the name leads to later.
    (ws / "held").mkdir()
    st = (ws / "held").stat()
    out = await host.call("Bash", {"command": "stat -c '%d %i' .", "workdir": "held"})
    assert out["stdout"] == f"{st.st_dev} {st.st_ino}\n"


@pytest.fixture
def places() -> Iterator[dict[str, Path]]:
    """A workspace and a data dir under /var/tmp (the sandbox's /tmp is its own)."""
    root = Path(tempfile.mkdtemp(prefix="toolbound-workdir-", dir="/var/tmp"))
    found = {name: root / name for name in ("ws", "data", "outside")}
    for path in found.values():
        path.mkdir()
    yield found
    shutil.rmtree(root)


async def test_a_sandboxed_command_and_job_start_in_their_workdir(
    places: dict[str, Path],
) -> None:
    ws = places["ws"]
    (ws / "sub dir").mkdir()
    (ws / "away").symlink_to(places["outside"])
    async with ToolHost(ws, places["data"], "s1", sandbox="workspace-write") as host:
        out = await host.call("Bash", {"command": "pwd; touch made", "workdir": "sub dir"})
        assert (out["stdout"], out["exitCode"]) == (f"{ws / 'sub dir'}\n", 0)
        assert (ws / "sub dir" / "made").exists()
        started = await start(host, "pwd", workdir="sub dir")
        assert (await ended(host, started["jobId"]))["stdout"] == f"{ws / 'sub dir'}\n"
        refused = await host.call("Bash", {"command": "touch ran", "workdir": "away"})
        assert refused["error"]["code"] == "TOOL_PATH_NOT_ALLOWED"
    assert os.listdir(places["outside"]) == []
