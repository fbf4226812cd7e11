"""A small Read on local file systems runs on the event loop, anything that could
block takes a worker thread (``tools.read.runs_inline``), and an economy Read's
checkpoint count is then asked through the recorder's connection that never waits."""

from __future__ import annotations

import asyncio
from pathlib import Path

from toolbound import ToolHost, busy
from toolbound.arguments import ReadArgs
from toolbound.shrink import Budgets
from toolbound.store import SessionStore
from toolbound.tools import ToolContext
from toolbound.tools.read import INLINE_MAX_BYTES, all_local, local_mounts, runs_inline

LOCAL = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
23 22 0:21 / /proc rw,nosuid - proc proc rw
24 22 0:22 / /tmp rw - tmpfs tmpfs rw,size=1g
"""


def context(host: ToolHost) -> ToolContext:
    return ToolContext(
        limits=host.limits,
        roots=host.roots,
        scratch=host.scratch,
        tool_call_id="c1",
        emit=lambda _stream, _data: None,
        abort=asyncio.Event(),
        record=host.session.read_record,
        budgets=Budgets.for_call(host.limits, host.profile, gauge=host.gauge),
    )


def args(path: str, **more: object) -> ReadArgs:
    return ReadArgs.model_validate({"path": path, **more})


def test_only_a_mount_table_of_local_file_systems_is_all_local() -> None:
    assert all_local(LOCAL)
    nfs = "30 22 0:50 / /mnt/share rw - nfs4 server:/share rw,vers=4.2\n"
    sshfs = "31 22 0:51 / /mnt/remote rw - fuse.sshfs me@host: rw\n"
    automount = "32 22 0:52 / /net rw - autofs systemd-1 rw\n"
    for remote in (nfs, sshfs, automount):
        assert not all_local(LOCAL + remote), remote
    assert not all_local(LOCAL + "a line that is not a mount\n")


async def test_a_small_regular_file_runs_inline_where_every_mount_is_local(
    tmp_path: Path, ws: Path
) -> None:
    (ws / "small.txt").write_text("x\n" * 100)
    async with ToolHost(ws, data_dir=tmp_path / "data", session_id="s1") as host:
        ctx = context(host)
        assert busy.alone()
        assert runs_inline(args("small.txt"), ctx) == local_mounts()
        assert runs_inline(args(str(ws / "small.txt")), ctx) == local_mounts()


async def test_big_files_pdfs_pages_folders_and_missing_paths_take_the_thread(
    tmp_path: Path, ws: Path
) -> None:
    (ws / "big.txt").write_text("y" * (INLINE_MAX_BYTES + 1))
    (ws / "doc.pdf").write_bytes(b"%PDF-1.4\n")
    (ws / "folder").mkdir()
    async with ToolHost(ws, data_dir=tmp_path / "data", session_id="s1") as host:
        ctx = context(host)
        for path in ("big.txt", "doc.pdf", "folder", "missing.txt"):
            assert not runs_inline(args(path), ctx), path
        assert not runs_inline(args("doc.pdf", pages="1"), ctx)


async def test_a_checkpoint_count_that_would_wait_on_the_store_takes_the_thread(
    tmp_path: Path, ws: Path
) -> None:
    (ws / "small.txt").write_text("x\n")
    async with ToolHost(ws, data_dir=tmp_path / "data", session_id="s1") as host:
        ctx = context(host)
        ctx.record.counts_on_loop = False  # as with a PostgreSQL store
        assert ctx.record.checkpoint_count is not None
        assert not runs_inline(args("small.txt"), ctx)


async def test_an_economy_host_counts_checkpoints_on_the_loop_as_another_writer_adds_them(
    tmp_path: Path, ws: Path
) -> None:
    async with ToolHost(ws, data_dir=tmp_path / "data", session_id="s1", profile="economy") as host:
        record = host.session.read_record
        assert record.counts_on_loop
        assert record.checkpoint_count is not None
        assert record.checkpoint_count() == 0
        with SessionStore(tmp_path / "data") as other:
            other.session("s1").checkpoint(summary="one")
            other.session("s1").checkpoint(summary="two")
        assert record.checkpoint_count() == 2


async def test_beside_other_work_in_the_process_a_small_read_takes_the_thread(
    tmp_path: Path, ws: Path
) -> None:
    (ws / "small.txt").write_text("x\n")
    async with ToolHost(ws, data_dir=tmp_path / "data", session_id="s1") as host:
        ctx = context(host)
        busy.begin()  # the Read's own call
        try:
            assert runs_inline(args("small.txt"), ctx) == local_mounts()
            busy.begin()  # another call, or a recorder writing
            try:
                assert not runs_inline(args("small.txt"), ctx)
            finally:
                busy.end()
            assert runs_inline(args("small.txt"), ctx) == local_mounts()
        finally:
            busy.end()
