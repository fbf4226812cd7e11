"""Retention: pruning ended sessions' tool events, and a call's stored events bounded."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from support import run_main
from toolbound import DEFAULT_LIMITS, SessionStore, ToolHost, model_text
from toolbound.store import PruneReport

Raw = Callable[[str], list[tuple[Any, ...]]]


async def record_calls(location: str, data_dir: Path, session_id: str, n: int) -> None:
    async with ToolHost(
        workspace=data_dir.parent, data_dir=data_dir, session_id=session_id, store=location
    ) as host:
        for i in range(n):
            await host.call("Bash", {"command": f"echo {session_id} {i}"}, tool_call_id=f"c{i}")


def counts(raw: Raw) -> dict[str, int]:
    return {
        table: raw(f"SELECT count(*) FROM {table}")[0][0]
        for table in ("tool_calls", "tool_events", "messages", "checkpoints")
    }


async def test_prune_removes_only_ended_sessions_tool_events(
    store: SessionStore, location: str, tmp_path: Path, raw: Raw
) -> None:
    for sid in ("old", "open"):
        await record_calls(location, tmp_path / "data", sid, 2)
        session = store.session(sid)
        session.append({"role": "user", "content": f"hello from {sid}"})
        session.checkpoint(summary="said hello")
    store.end("old")
    before = counts(raw)

    report = store.prune(ended_before=time.time() + 1)

    assert report == PruneReport(sessions=1, tool_calls=2, tool_events=4, messages=0)
    assert store.tool_calls("old") == []
    assert store.events("c0", session_id="old") == []
    assert [c["toolCallId"] for c in store.tool_calls("open")] == ["c0", "c1"]
    assert store.session("old").transcript() == [{"role": "user", "content": "hello from old"}]
    assert counts(raw) == {**before, "tool_calls": 2, "tool_events": 4}


def test_prune_spares_sessions_that_ended_after_the_cutoff(store: SessionStore) -> None:
    store.session("recent").append({"role": "user", "content": "hi"})
    store.end("recent")
    nothing = PruneReport(sessions=0, tool_calls=0, tool_events=0, messages=0)
    assert store.prune(ended_before=time.time() - 3600, transcripts=True) == nothing
    assert store.prune(ended_before=timedelta(days=1), transcripts=True) == nothing
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    assert store.prune(ended_before=an_hour_ago, transcripts=True) == nothing
    assert store.session("recent").transcript() == [{"role": "user", "content": "hi"}]


def test_prune_with_transcripts_removes_messages_and_checkpoints_too(
    store: SessionStore, raw: Raw
) -> None:
    session = store.session("old")
    session.append({"role": "user", "content": "hi"})
    session.checkpoint(summary="s")
    store.session("open").append({"role": "user", "content": "still here"})
    store.end("old")
    report = store.prune(ended_before=time.time() + 1, transcripts=True)
    assert report.messages == 1
    assert store.session("old").transcript() == []
    assert store.session("old").checkpoints() == []
    assert store.is_ended("old")
    assert counts(raw)["messages"] == 1


def test_rows_of_an_open_session_stay_append_only(store: SessionStore, raw: Raw) -> None:
    session = store.session("open")
    session.append({"role": "user", "content": "hi"})
    session.append({"role": "assistant", "content": "hello"})
    with pytest.raises((sqlite3.IntegrityError, psycopg.IntegrityError), match="append-only"):
        raw("DELETE FROM messages WHERE session_id = 'open'")
    store.end("open")
    raw("DELETE FROM messages WHERE seq = 0")  # ended: retention may remove its rows
    with pytest.raises((sqlite3.IntegrityError, psycopg.IntegrityError), match="append-only"):
        raw("UPDATE messages SET body = '{}'")  # but never rewrite them
    assert session.transcript() == [{"role": "assistant", "content": "hello"}]


def test_session_prune_command_prints_what_it_removed(
    location: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with SessionStore(location) as store:
        store.session("old").append({"role": "user", "content": "hi"})
        store.end("old")
    args = ["prune", "--ended-before", "0", "--transcripts", "--store", location]
    done = run_main(capsys, "session", *args, "--data-dir", str(tmp_path))
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)["pruned"] == {
        "sessions": 1,
        "toolCalls": 0,
        "toolEvents": 0,
        "messages": 1,
    }
    bad = run_main(capsys, "session", "prune", "--ended-before", "-1")
    assert (bad.returncode, bad.stdout) == (2, "")
    assert "--ended-before" in bad.stderr


async def test_a_calls_stored_chunks_stop_at_the_capture_ceiling_per_stream(
    open_store: Callable[..., SessionStore], location: str, tmp_path: Path
) -> None:
    limits = DEFAULT_LIMITS.replace(capture_max_bytes=200 * 1024)
    with open_store(limits=limits) as store:
        recorder = store.recorder("s1")
        handle = recorder.start("j1", "Bash", {"command": "yes"})
        chunk = "y\n" * 32 * 1024  # 64 KB
        events: list[dict[str, Any]] = []
        for seq in range(6):
            stream = "stdout" if seq < 5 else "stderr"
            events.append(
                {"type": "chunk", "toolCallId": "j1", "stream": stream, "seq": seq, "data": chunk}
            )
        events.append({"type": "result", "toolCallId": "j1", "seq": 6, "result": {"x": 1}})
        for event in events:
            handle.event(event)
        await handle.settled()
        await asyncio_to_thread(recorder.close)
        replayed = store.events("j1")
        assert [e["seq"] for e in replayed] == [0, 1, 2, 5, 6]
        # The replay gives the result event its model text, as the host does.
        result_event = {**events[6], "text": model_text("Bash", {"x": 1})}
        assert replayed == [*(events[i] for i in (0, 1, 2, 5)), result_event]
        assert store.dropped("j1") == {"stdout": {"chunks": 2, "bytes": 2 * 64 * 1024}}


async def asyncio_to_thread(fn: Callable[[], None]) -> None:
    import asyncio

    await asyncio.to_thread(fn)
