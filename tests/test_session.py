"""A host's session: the store is a convenience, and a host without it says so once."""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
from pathlib import Path

import pytest

from toolbound import DEFAULT_LIMITS, SessionStore, ToolHost
from toolbound.listeners import answer_first


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("toolbound")
    ]


async def test_a_host_whose_store_cannot_open_says_so_once_and_serves_every_call(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    data_dir = tmp_path / "data"
    (data_dir / "toolbound.db").mkdir(parents=True)
    caplog.set_level(logging.WARNING)
    host = ToolHost(ws, data_dir, "s1", profile="economy", context_window=1000)
    await host.__aenter__()
    wrote = await host.call("Write", {"path": "a.txt", "content": "one\n"})
    read = await host.call("Read", {"path": "a.txt"})
    edited = await host.call("Edit", {"path": "a.txt", "oldString": "one", "newString": "two"})
    await host.end()
    assert ["error" in r for r in (wrote, read, edited)] == [False, False, False]
    assert (ws / "a.txt").read_text() == "two\n"
    [said] = warnings_of(caplog)
    assert said.startswith(f"toolbound: tool calls are not recorded ({data_dir}): ")


async def test_a_store_that_fails_mid_session_keeps_the_read_record_with_the_next_write(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("a.txt", "b.txt"):
        (ws / name).write_text(f"{name}\n")
    data_dir = tmp_path / "data"
    limits = DEFAULT_LIMITS.replace(store_busy_timeout_s=0.2)
    caplog.set_level(logging.WARNING)
    async with ToolHost(ws, data_dir, "s1", limits=limits) as host:
        with contextlib.closing(
            sqlite3.connect(data_dir / "toolbound.db", isolation_level=None)
        ) as lock:
            lock.execute("BEGIN EXCLUSIVE")
            first = await host.call("Read", {"path": "a.txt"})
            lock.execute("ROLLBACK")
        # The read record goes with the call's recording: that write failed, and said so.
        assert any(
            said.startswith("toolbound: some tool calls could not be recorded in ")
            for said in warnings_of(caplog)
        )
        second = await host.call("Read", {"path": "b.txt"})
    assert [first["content"], second["content"]] == ["a.txt\n", "b.txt\n"]
    with SessionStore(data_dir) as store:
        saved = store.read_record("s1")
    assert saved is not None
    assert sorted(Path(p).name for p in json.loads(saved)["files"]) == ["a.txt", "b.txt"]


def count_record_writes(data_dir: Path) -> None:
    """From now on, every write of a read record in the store adds a row to record_writes."""
    with SessionStore(data_dir):
        pass  # the schema
    with contextlib.closing(sqlite3.connect(data_dir / "toolbound.db")) as db, db:
        db.execute("CREATE TABLE record_writes (session_id TEXT)")
        for when in ("INSERT", "UPDATE"):
            db.execute(
                f"CREATE TRIGGER counted_{when.lower()} AFTER {when} ON read_records"
                " BEGIN INSERT INTO record_writes VALUES (new.session_id); END"
            )


def record_writes(data_dir: Path) -> tuple[int, int]:
    """How many times a read record was written, and how many calls are recorded."""
    with contextlib.closing(sqlite3.connect(data_dir / "toolbound.db")) as db:
        (writes,) = db.execute("SELECT count(*) FROM record_writes").fetchone()
        (calls,) = db.execute("SELECT count(*) FROM tool_calls").fetchone()
    return writes, calls


async def test_the_read_record_is_written_with_each_call_that_changed_it_and_no_other(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("a.txt", "b.txt"):
        (ws / name).write_text(f"{name}\n")
    data_dir = tmp_path / "data"
    count_record_writes(data_dir)
    async with ToolHost(ws, data_dir, "s1") as host:
        await host.call("Read", {"path": "a.txt"})
        await host.call("Read", {"path": "b.txt"})
        await host.call("Read", {"path": "a.txt", "offset": 1})
        after_reads = record_writes(data_dir)
        await host.call("Glob", {"pattern": "*.txt"})
        await host.call("Bash", {"command": "true"})
        after_others = record_writes(data_dir)
        kept = host.session.read_record.to_json()
    # Each Read's record went with its call's recording; calls that changed nothing
    # wrote none, and closing had nothing left to write.
    assert after_reads == (3, 3)
    assert after_others == (3, 5)
    assert record_writes(data_dir) == (3, 5)
    with SessionStore(data_dir) as store:
        assert store.read_record("s1") == kept


async def test_reads_answered_first_keep_their_record_for_the_sessions_next_host(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("a.txt", "b.txt"):
        (ws / name).write_text(f"{name}\n")
    data_dir = tmp_path / "data"
    count_record_writes(data_dir)
    async with ToolHost(ws, data_dir, "s1") as host:
        with answer_first():
            for name in ("a.txt", "b.txt"):
                assert "error" not in await host.call("Read", {"path": name})
    # Written after their answers, with their recording, at the latest on close: once each at most.
    writes, calls = record_writes(data_dir)
    assert calls == 2
    assert 1 <= writes <= 2
    async with ToolHost(ws, data_dir, "s1") as host:
        edited = await host.call("Edit", {"path": "b.txt", "oldString": "b", "newString": "c"})
    assert "error" not in edited, edited
    assert (ws / "b.txt").read_text() == "c.txt\n"
