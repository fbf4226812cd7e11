"""The host records every tool call and its events through the store, replayable by seq."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from toolbound import DEFAULT_LIMITS, SessionStore, ToolHost, model_text
from toolbound.listeners import answer_first
from toolbound.store import CallRecorder, StoreUnavailable, is_url


async def test_an_invalid_read_call_is_recorded_with_its_result(
    tmp_path: Path, location: str, open_store: Callable[..., SessionStore]
) -> None:
    async with ToolHost(
        workspace=tmp_path, data_dir=tmp_path / "data", session_id="s1", store=location
    ) as host:
        events = [e async for e in host.stream("Read", {"path": 5}, tool_call_id="c1")]
        with open_store() as store:
            assert store.events("c1") == events
            (recorded,) = store.tool_calls("s1")
    assert isinstance(recorded.pop("startedAt"), float)
    assert recorded == {
        "toolCallId": "c1",
        "tool": "Read",
        "args": {"path": 5},
        "result": events[-1]["result"],
    }
    assert events[-1]["result"]["error"]["code"] == "TOOL_INVALID_ARGUMENT"


async def test_an_unknown_tool_call_is_recorded_too(
    tmp_path: Path, location: str, open_store: Callable[..., SessionStore]
) -> None:
    async with ToolHost(
        workspace=tmp_path, data_dir=tmp_path, session_id="s1", store=location
    ) as host:
        result = await host.call("Frobnicate", {}, tool_call_id="c2")
    with open_store() as store:
        assert store.events("c2") == [
            {
                "type": "result",
                "toolCallId": "c2",
                "seq": 0,
                "result": result,
                "text": model_text("Edit", result),
            }
        ]
        assert store.events("c2", session_id="other") == []


async def test_a_bash_calls_chunks_replay_with_the_same_seq_values(
    tmp_path: Path, location: str, open_store: Callable[..., SessionStore]
) -> None:
    command = (
        "for i in $(seq 300); do echo out $i; echo err $i >&2; "
        "[ $((i % 100)) = 0 ] && sleep 0.1; done; echo 'done ✓'"
    )
    async with ToolHost(
        workspace=tmp_path, data_dir=tmp_path, session_id="s1", store=location
    ) as host:
        events = [e async for e in host.stream("Bash", {"command": command}, tool_call_id="b1")]
        # Recorded before the result was handed out: replayable while the host lives.
        with open_store() as store:
            replayed = store.events("b1")
    assert replayed == events
    assert [e["seq"] for e in events] == list(range(len(events)))
    chunks = [e for e in events if e["type"] == "chunk"]
    assert {c["stream"] for c in chunks} == {"stdout", "stderr"}
    stdout = "".join(c["data"] for c in chunks if c["stream"] == "stdout")
    assert stdout == "".join(f"out {i}\n" for i in range(1, 301)) + "done ✓\n"
    assert events[-1]["type"] == "result"
    assert events[-1]["result"]["exitCode"] == 0


async def test_host_start_sweeps_scratch_dirs_of_ended_sessions(
    tmp_path: Path, location: str
) -> None:
    with SessionStore(location, scratch_dir=tmp_path) as store:
        store.session("old")
        store.session("open")
        store.end("old")
    for sid in ("old", "open"):
        # A straggler wrote into the ended session's dir after it ended.
        (tmp_path / "scratch" / sid / "tool-output").mkdir(parents=True)
    async with ToolHost(workspace=tmp_path, data_dir=tmp_path, session_id="new", store=location):
        pass
    assert sorted(p.name for p in (tmp_path / "scratch").iterdir()) == ["open"]


@pytest.mark.parametrize("spoil", ["file_in_the_way", "database_is_a_directory"])
async def test_an_unusable_data_dir_costs_the_recording_not_the_call(
    tmp_path: Path, spoil: str
) -> None:
    if spoil == "file_in_the_way":
        (tmp_path / "blocker").write_text("not a directory")
        data_dir = tmp_path / "blocker" / "data"
    else:
        data_dir = tmp_path / "data"
        (data_dir / "toolbound.db").mkdir(parents=True)
    async with ToolHost(workspace=tmp_path, data_dir=data_dir, session_id="s1") as host:
        result = await host.call("Glob", {"limit": 0})
    assert result["error"]["code"] == "TOOL_INVALID_ARGUMENT"


@pytest.mark.parametrize(
    "spoil", ["file_in_the_way", "database_is_a_directory", "not_a_database", "newer_schema"]
)
def test_every_way_a_store_fails_to_open_is_one_store_unavailable(
    tmp_path: Path, spoil: str
) -> None:
    data_dir = tmp_path / "data"
    if spoil == "file_in_the_way":
        (tmp_path / "blocker").write_text("not a directory")
        data_dir = tmp_path / "blocker" / "data"
    elif spoil == "database_is_a_directory":
        (data_dir / "toolbound.db").mkdir(parents=True)
    elif spoil == "not_a_database":
        data_dir.mkdir()
        (data_dir / "toolbound.db").write_bytes(b"not sqlite " * 100)
    else:
        SessionStore(data_dir).close()
        with sqlite3.connect(data_dir / "toolbound.db") as conn:
            conn.execute("INSERT INTO schema_migrations VALUES (99, '0099_future', 0)")
    with pytest.raises(StoreUnavailable) as err:
        SessionStore(data_dir)
    if spoil == "newer_schema":
        assert "0099_future" in str(err.value)
    else:
        assert str(err.value).startswith(f"cannot open the store {data_dir / 'toolbound.db'}: ")


async def test_an_unreachable_postgresql_store_costs_the_recording_not_the_call(
    tmp_path: Path,
) -> None:
    nowhere = f"postgresql://toolbound@/toolbound?host={tmp_path / 'no-server'}"
    async with ToolHost(
        workspace=tmp_path, data_dir=tmp_path, session_id="s1", store=nowhere
    ) as host:
        result = await host.call("Glob", {"limit": 0})
    assert result["error"]["code"] == "TOOL_INVALID_ARGUMENT"


def lock_out_writers(location: str) -> Callable[[], None]:
    """Hold the lock every writer of the store needs; the returned function lets go."""
    if is_url(location):
        pg_conn = psycopg.connect(location, autocommit=True)
        pg_conn.execute("BEGIN")
        pg_conn.execute("LOCK TABLE tool_calls IN ACCESS EXCLUSIVE MODE")

        def release_pg() -> None:
            pg_conn.execute("ROLLBACK")
            pg_conn.close()

        return release_pg
    conn = sqlite3.connect(Path(location) / "toolbound.db", isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")

    def release() -> None:
        conn.execute("ROLLBACK")
        conn.close()

    return release


async def test_a_store_that_stays_locked_delays_the_result_at_most_the_busy_timeout(
    tmp_path: Path, location: str, open_store: Callable[..., SessionStore]
) -> None:
    limits = DEFAULT_LIMITS.replace(store_busy_timeout_s=0.2)
    async with ToolHost(
        workspace=tmp_path, data_dir=tmp_path, session_id="s1", limits=limits, store=location
    ) as host:
        release = lock_out_writers(location)
        try:
            result = await asyncio.wait_for(host.call("Frobnicate", {}, tool_call_id="c1"), 10)
        finally:
            release()
        later = await host.call("Frobnicate", {}, tool_call_id="c2")
    assert result["error"]["code"] == "TOOL_UNKNOWN"
    with open_store() as store:
        assert store.events("c1") == []
        assert store.events("c2") == [
            {
                "type": "result",
                "toolCallId": "c2",
                "seq": 0,
                "result": later,
                "text": model_text("Edit", later),
            }
        ]


def test_a_burst_of_calls_and_a_call_continued_later_are_stored_whole(
    open_store: Callable[..., SessionStore],
) -> None:
    """The writer takes whatever is queued as one batch (on PostgreSQL several calls
    pipelined in one transaction); a call whose start an earlier batch wrote gets its
    later events under the same row."""
    with open_store() as store:
        store.session("s1")
        recorder = CallRecorder(store.backend, "s1")
        try:
            early = recorder.start("early", "Bash", {"command": "x"})
            first = recorder.start("first", "Glob", {"pattern": "*"})
            first.event({"type": "result", "seq": 0, "result": {"matches": []}})
            first.done.result(timeout=30)  # so "early"'s start is written by now
            burst = [recorder.start(f"b{i}", "Glob", {"pattern": "*"}) for i in range(40)]
            for handle in burst:
                chunk = {"type": "chunk", "seq": 0, "stream": "stdout", "data": "x\n"}
                handle.event(chunk)
                handle.event({"type": "result", "seq": 1, "result": {"matches": []}})
            early.event({"type": "chunk", "seq": 0, "stream": "stdout", "data": "late\n"})
            early.event({"type": "result", "seq": 1, "result": {"exitCode": 0}})
        finally:
            recorder.close()
        assert [c["tool"] for c in store.tool_calls("s1")] == ["Bash", "Glob"] + ["Glob"] * 40
        assert [e["type"] for e in store.events("b39")] == ["chunk", "result"]
        replayed = [{k: v for k, v in e.items() if k != "text"} for e in store.events("early")]
        assert replayed == [
            {
                "type": "chunk",
                "toolCallId": "early",
                "seq": 0,
                "stream": "stdout",
                "data": "late\n",
            },
            {"type": "result", "toolCallId": "early", "seq": 1, "result": {"exitCode": 0}},
        ]
        assert len(store.session("s1").ledger()["calls"]) == 42


async def test_the_read_record_goes_with_the_recording_to_the_sessions_next_host(
    tmp_path: Path, location: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    async with ToolHost(ws, tmp_path / "data", "s1", store=location) as host:
        assert "error" not in await host.call("Read", {"path": "a.txt"})
        with answer_first():  # as the stdio wire answers: recorded after the answer
            assert "error" not in await host.call("Read", {"path": "a.txt", "offset": 1})
    async with ToolHost(ws, tmp_path / "data", "s1", store=location) as host:
        loaded = host.session.read_record.seen((ws / "a.txt").resolve())
        edited = await host.call("Edit", {"path": "a.txt", "oldString": "one", "newString": "two"})
    assert [(s.by, s.offset) for s in loaded] == [("Read", 0), ("Read", 1)]
    assert "error" not in edited, edited
    assert (ws / "a.txt").read_text() == "two\n"
