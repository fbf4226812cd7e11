"""Recording into PostgreSQL from the event loop: a short call's rows are sent from
the loop on a connection of their own, and whatever goes wrong there costs the
record of that call only, never a hang, and later calls are recorded still."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path

import psycopg
import pytest

import pgserver
from support import wait_for_async
from toolbound import SessionStore, ToolHost
from toolbound.listeners import CallStart, answer_first
from toolbound.results import ResultEvent
from toolbound.store.pg_loop import APPLICATION_NAME, THREAD_APPLICATION_NAME
from toolbound.store.recorder import _LOOP_WRITES_WAIT_S

HANG_S = 30
CLOSE_S = _LOOP_WRITES_WAIT_S / 3


def _connections(server: pgserver.PgServer, name: str | None = None) -> int:
    """The server's client connections (named ``name``), this query's own left out."""
    with psycopg.connect(server.url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
            " AND pid <> pg_backend_pid() AND application_name = coalesce(%s, application_name)",
            (name,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def _thread_connections(server: pgserver.PgServer) -> int:
    return _connections(server, THREAD_APPLICATION_NAME)


def _call_ids(url: str, tmp_path: Path, session_id: str = "s1") -> list[str]:
    with SessionStore(url, scratch_dir=tmp_path / "data") as store:
        return [c["toolCallId"] for c in store.tool_calls(session_id)]


async def test_the_writer_thread_holds_a_connection_only_while_a_call_runs_past_the_hold(
    tmp_path: Path, pg: pgserver.PgServer
) -> None:
    """Short calls are sent from the loop's connection; the writer thread's is opened
    by a call still running past the hold, and closed once the thread is idle."""
    url = pg.new_url()
    before = _connections(pg)
    async with ToolHost(
        workspace=tmp_path, data_dir=tmp_path / "data", session_id="s1", store=url
    ) as host:
        assert _connections(pg, APPLICATION_NAME) == 1
        for n in range(20):
            await host.call("Glob", {"pattern": "*"}, tool_call_id=f"c{n}")
        # (A call slower than the hold on a loaded machine goes to the thread too.)
        await wait_for_async(lambda: _thread_connections(pg) == 0, "no thread connection")
        gate = tmp_path / "go"
        running = asyncio.create_task(
            host.call(
                "Bash",
                {"command": f"echo started; while [ ! -e {gate.name} ]; do sleep 0.01; done"},
                tool_call_id="running",
            )
        )
        # Its start and chunks go to the thread, which connects to write them.
        await wait_for_async(lambda: _thread_connections(pg) == 1, "the thread's connection")
        gate.touch()
        await asyncio.wait_for(running, HANG_S)
        await wait_for_async(lambda: _thread_connections(pg) == 0, "the idle thread's close")
        await host.call("Glob", {"pattern": "*"}, tool_call_id="after")
    assert _connections(pg) == before
    assert _call_ids(url, tmp_path) == [*(f"c{n}" for n in range(20)), "running", "after"]


async def test_the_loops_connection_is_opened_again_after_the_server_cut_it(
    tmp_path: Path, pg: pgserver.PgServer
) -> None:
    """The loop's connection cut (a restarted server), short calls go through the
    writer thread, which opens a new one for the loop; from then on short calls are
    sent from the loop again, the thread's connection closes, and none is lost."""
    url = pg.new_url()
    async with ToolHost(
        workspace=tmp_path, data_dir=tmp_path / "data", session_id="s1", store=url
    ) as host:
        await host.call("Glob", {"pattern": "*"}, tool_call_id="before")
        with psycopg.connect(pg.url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                f" WHERE application_name = '{APPLICATION_NAME}'"
            )
        await wait_for_async(lambda: _connections(pg, APPLICATION_NAME) == 0, "the cut")
        # Calls go on meanwhile; the thread opens the loop's connection again after
        # one of them (at most a second after the last try).
        n = 0
        deadline = time.monotonic() + HANG_S
        while _connections(pg, APPLICATION_NAME) != 1:
            assert time.monotonic() < deadline, "the loop's connection was not opened again"
            await host.call("Glob", {"pattern": "*"}, tool_call_id=f"mid{n}")
            n += 1
        await wait_for_async(lambda: _thread_connections(pg) == 0, "the idle thread's close")
        for i in range(20):
            await host.call("Glob", {"pattern": "*"}, tool_call_id=f"after{i}")
        # Sent from the loop: the thread did not connect for them.
        assert _thread_connections(pg) == 0
    ids = _call_ids(url, tmp_path)
    # The first write on the cut connection is lost with it; nothing after.
    assert ids[0] == "before"
    assert ids[-20:] == [f"after{i}" for i in range(20)]
    assert set(ids[1:-20]) <= {f"mid{i}" for i in range(n)}
    assert len(ids) >= 1 + (n - 1) + 20


async def test_short_and_running_calls_keep_their_start_order_on_both_paths(
    tmp_path: Path, pg: pgserver.PgServer
) -> None:
    """A running call's rows go through the writer thread, the short ones beside it
    from the loop; the calls stay in the order they started."""
    url = pg.new_url()
    async with ToolHost(
        workspace=tmp_path, data_dir=tmp_path / "data", session_id="s1", store=url
    ) as host:
        await host.call("Glob", {"pattern": "*"}, tool_call_id="first")
        running = asyncio.create_task(
            host.call("Bash", {"command": "sleep 0.3; echo done"}, tool_call_id="running")
        )
        await asyncio.sleep(0.1)  # past the hold: its start goes to the thread
        await host.call("Glob", {"pattern": "*"}, tool_call_id="beside")
        result = await asyncio.wait_for(running, HANG_S)
        await host.call("Glob", {"pattern": "*"}, tool_call_id="last")
    assert result["stdout"] == "done\n"
    assert _call_ids(url, tmp_path) == ["first", "running", "beside", "last"]


async def test_lost_connections_cost_the_writes_on_them_and_later_ones_are_recorded(
    tmp_path: Path, pg: pgserver.PgServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Both recorder connections are cut (a restarted server) while a call runs: the
    first write on each is lost, then the thread connects again and records the rest,
    the running call's result included."""
    url = pg.new_url()
    gate = tmp_path / "go"
    ticking = f"while [ ! -e {gate.name} ]; do echo tick; sleep 0.1; done; echo done"
    async with ToolHost(
        workspace=tmp_path, data_dir=tmp_path / "data", session_id="s1", store=url
    ) as host:
        await host.call("Glob", {"pattern": "*"}, tool_call_id="before")
        running = asyncio.create_task(
            host.call("Bash", {"command": ticking}, tool_call_id="running")
        )
        # Ticking, it keeps the thread writing, and so connected; its row is written
        # (a connection is listed before its first write commits).
        await wait_for_async(lambda: _thread_connections(pg) == 1, "the thread's connection")
        await wait_for_async(
            lambda: "running" in _call_ids(url, tmp_path), "the running call's row"
        )
        with caplog.at_level(logging.WARNING, logger="toolbound.store.recorder"):
            with psycopg.connect(pg.url, autocommit=True) as admin:
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE application_name LIKE 'toolbound%'"
                )
            results = [
                await asyncio.wait_for(
                    host.call("Glob", {"pattern": "*"}, tool_call_id=f"after{n}"), HANG_S
                )
                for n in range(3)
            ]
            gate.touch()
            ran = await asyncio.wait_for(running, HANG_S)
    assert ran["stdout"].endswith("done\n")
    assert all("error" not in r for r in results)
    lost = [r for r in caplog.records if "could not be recorded" in r.getMessage()]
    assert len(lost) <= 1, "a loss is logged once"
    with SessionStore(url, scratch_dir=tmp_path / "data") as store:
        stored = [c["toolCallId"] for c in store.tool_calls("s1")]
        final = store.events("running", session_id="s1")[-1]
    assert stored[:2] == ["before", "running"]
    # The first write on each cut connection is lost with it (the loop's, the thread's:
    # after0, and after1 unless one of the running call's ticks took the thread's loss);
    # by then both found out, and what follows is recorded.
    assert stored[-1] == "after2"
    assert set(stored[2:]) <= {"after0", "after1", "after2"}
    assert final["type"] == "result"
    assert final["result"] == ran


def test_a_write_sent_as_its_loop_ends_is_finished_by_close(
    tmp_path: Path, pg: pgserver.PgServer
) -> None:
    """A call answered first is written by a timer on the loop; a loop that ends right
    after sending it leaves the answer to ``close``, which waits for it here."""
    url = pg.new_url()
    with SessionStore(url, scratch_dir=tmp_path / "data") as store:
        recorder = store.recorder("s1")

        async def record() -> None:
            call = CallStart("s1", "c1", "Glob", {"pattern": "*"})
            with answer_first():
                recorder.call_started(call)
                result = {"filenames": [], "numFiles": 0, "truncated": False}
                recorder.call_event(call, ResultEvent.of("Glob", "c1", 0, result))
                await recorder.settle(call)
            recorder.call_ended(call, None)
            recorder._write_deferred()  # the timer's write, sent now; the loop then ends

        asyncio.run(record())
        closing = threading.Thread(target=recorder.close)
        closing.start()
        # Well before the writer thread would give up waiting for the loop's answer.
        closing.join(CLOSE_S)
        assert not closing.is_alive(), "close waits for the loop's write itself"
        assert [c["toolCallId"] for c in store.tool_calls("s1")] == ["c1"]


def test_one_recorder_records_from_one_loop_and_then_another(
    tmp_path: Path, pg: pgserver.PgServer
) -> None:
    url = pg.new_url()
    with SessionStore(url, scratch_dir=tmp_path / "data") as store:
        recorder = store.recorder("s1")

        async def record(call_id: str) -> None:
            call = CallStart("s1", call_id, "Glob", {"pattern": "*"})
            recorder.call_started(call)
            result = {"filenames": [], "numFiles": 0, "truncated": False}
            recorder.call_event(call, ResultEvent.of("Glob", call_id, 0, result))
            await asyncio.wait_for(recorder.settle(call), HANG_S)
            recorder.call_ended(call, None)

        asyncio.run(record("first"))
        asyncio.run(record("second"))
        recorder.close()
        assert [c["toolCallId"] for c in store.tool_calls("s1")] == ["first", "second"]
