"""A host's session: the store is a convenience, and a host without it says so once."""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
from pathlib import Path

import pytest

from toolbound import DEFAULT_LIMITS, SessionStore, ToolHost


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


async def test_a_store_that_fails_mid_session_costs_the_kept_read_record_until_it_recovers(
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
        assert any(
            said.startswith("toolbound: the read record of s1 is not kept: ")
            for said in warnings_of(caplog)
        )
        second = await host.call("Read", {"path": "b.txt"})
    assert [first["content"], second["content"]] == ["a.txt\n", "b.txt\n"]
    with SessionStore(data_dir) as store:
        saved = store.read_record("s1")
    assert saved is not None
    assert sorted(Path(p).name for p in json.loads(saved)["files"]) == ["a.txt", "b.txt"]
