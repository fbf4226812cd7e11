"""When a call's rows reach the store: a short call is written whole at its end,
a running one within the chunk interval, and every call in the order it started."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support import wait_for, wait_for_async
from toolbound import SessionStore, ToolHost
from toolbound.listeners import CallStart, answer_first
from toolbound.store.db import DB_NAME
from toolbound.store.recorder import _CHECKPOINT_EVERY

CALL_S = 30

# Prints "started", then waits (in bash, not in the test) until the file "go" exists.
GATED = "echo started; while [ ! -e go ]; do sleep 0.01; done; echo done"


async def _until_started(events: asyncio.Queue[dict[str, Any]]) -> None:
    while True:
        event = await events.get()
        if event["type"] == "chunk" and "started" in event["data"]:
            return


def _host(tmp_path: Path, location: str) -> ToolHost:
    return ToolHost(workspace=tmp_path, data_dir=tmp_path / "data", session_id="s1", store=location)


def _start_gated(
    host: ToolHost, call_id: str
) -> tuple[asyncio.Task[None], asyncio.Queue[dict[str, Any]]]:
    """The GATED command as a call of its own; its events go to the queue as they come."""
    events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def stream() -> None:
        async for event in host.stream("Bash", {"command": GATED}, tool_call_id=call_id):
            events.put_nowait(event)

    return asyncio.create_task(stream()), events


async def test_a_running_calls_start_and_chunks_are_recorded_while_it_runs(
    tmp_path: Path, location: str, open_store: Callable[..., SessionStore]
) -> None:
    async with _host(tmp_path, location) as host:
        running, events = _start_gated(host, "long")
        await asyncio.wait_for(_until_started(events), CALL_S)
        with open_store() as store:
            recorded = await wait_for_async(
                lambda: store.events("long", session_id="s1"), "the running call's chunk stored"
            )
            assert [c["toolCallId"] for c in store.tool_calls("s1")] == ["long"]
        assert recorded[0]["data"] == "started\n"
        (tmp_path / "go").touch()
        await asyncio.wait_for(running, CALL_S)


async def test_calls_are_listed_in_the_order_they_started_whichever_ends_first(
    tmp_path: Path, location: str, open_store: Callable[..., SessionStore]
) -> None:
    async with _host(tmp_path, location) as host:
        first, _ = _start_gated(host, "first")
        # Started (poll_s=0: each poll lets its task run once), but nowhere near its end.
        await wait_for_async(lambda: host.busy, "the first call started", poll_s=0)
        second = await host.call("Bash", {"command": "true"}, tool_call_id="second")
        (tmp_path / "go").touch()
        await asyncio.wait_for(first, CALL_S)
    assert second["exitCode"] == 0
    with open_store() as store:
        assert [c["toolCallId"] for c in store.tool_calls("s1")] == ["first", "second"]
        assert store.events("second", session_id="s1")[-1]["result"] == second


async def test_a_call_started_just_before_the_recorder_closes_is_recorded(
    open_store: Callable[..., SessionStore],
) -> None:
    with open_store() as store:
        recorder = store.recorder("s1")
        recorder.call_started(CallStart("s1", "late", "Bash", {"command": "sleep 9"}))
        # Closed at once, on the loop: the call is still held there.
        recorder.close()
        (recorded,) = store.tool_calls("s1")
    assert (recorded["toolCallId"], recorded["args"]) == ("late", {"command": "sleep 9"})


async def test_short_calls_written_on_the_loop_reach_the_database_file_itself(
    tmp_path: Path,
) -> None:
    """Their connection never checkpoints (it must not sync the disk on the
    event loop), so the writer thread does, and the WAL stays small."""
    data_dir = tmp_path / "data"
    async with ToolHost(workspace=tmp_path, data_dir=data_dir, session_id="s1") as host:
        for n in range(_CHECKPOINT_EVERY):
            await host.call("Frobnicate", {}, tool_call_id=f"c{n}")

        def calls_in_the_file_alone() -> int:
            # The database file without its WAL holds only what was checkpointed.
            copy = tmp_path / "copy.db"
            shutil.copyfile(data_dir / DB_NAME, copy)
            conn = sqlite3.connect(copy)
            try:
                (count,) = conn.execute("SELECT count(*) FROM tool_calls").fetchone()
            except sqlite3.DatabaseError:
                return 0  # copied in the middle of the checkpoint: look again
            finally:
                conn.close()
                copy.unlink()
            return int(count)

        wait_for(lambda: calls_in_the_file_alone() == _CHECKPOINT_EVERY, "a checkpoint")


async def test_a_call_answered_first_is_stored_once_its_consumer_answered(
    tmp_path: Path, location: str, open_store: Callable[..., SessionStore]
) -> None:
    async with _host(tmp_path, location) as host:
        with answer_first():
            result = await host.call("Bash", {"command": "true"}, tool_call_id="a")
            with open_store() as store:
                # Returned before its transaction: the consumer answers first.
                assert store.tool_calls("s1") == []
        with open_store() as store:
            await wait_for_async(lambda: store.tool_calls("s1"), "the answered call stored")
            assert store.events("a", session_id="s1")[-1]["result"] == result


async def test_a_call_started_after_one_answered_first_is_stored_after_it(
    tmp_path: Path, location: str, open_store: Callable[..., SessionStore]
) -> None:
    async with _host(tmp_path, location) as host:
        with answer_first():
            await host.call("Bash", {"command": "true"}, tool_call_id="first")
            await host.call("Bash", {"command": "true"}, tool_call_id="second")
    with open_store() as store:
        assert [c["toolCallId"] for c in store.tool_calls("s1")] == ["first", "second"]
        assert [len(store.events(c, session_id="s1")) for c in ("first", "second")] == [1, 1]


async def test_calls_answered_first_keep_their_start_order_beside_running_ones(
    tmp_path: Path, location: str, open_store: Callable[..., SessionStore]
) -> None:
    async with _host(tmp_path, location) as host:
        with answer_first():
            await host.call("Bash", {"command": "true"}, tool_call_id="quick")
            first, events = _start_gated(host, "running")
            await asyncio.wait_for(_until_started(events), CALL_S)
            await host.call("Bash", {"command": "true"}, tool_call_id="beside")
            (tmp_path / "go").touch()
            await asyncio.wait_for(first, CALL_S)
            await host.call("Bash", {"command": "true"}, tool_call_id="last")
    with open_store() as store:
        started = [c["toolCallId"] for c in store.tool_calls("s1")]
    assert started == ["quick", "running", "beside", "last"]
