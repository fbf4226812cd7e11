"""A job's input in the store (migration 0007): an event of the job's call, in seq order.

On both engines: a store recorded before 0007 keeps its rows and its
append-only rules through the migration, then takes ``input`` rows (and
refuses one shaped like a chunk); a real job answered through JobInput is
read back with its inputs where they came.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from toolbound import SessionStore, ToolHost
from toolbound.store import is_url
from toolbound.store.postgres import PgConn
from toolbound.store.schema import MIGRATIONS, migrate

REFUSED = (sqlite3.IntegrityError, psycopg.errors.IntegrityError)


def _store_before_0007(location: str) -> Any:
    """A connection to a store migrated up to 0006, with one call and its two events."""
    before = tuple(m for m in MIGRATIONS if m.version < 7)
    conn: Any
    if is_url(location):
        conn = PgConn(psycopg.connect(location, autocommit=True))
        migrate(conn, before, dialect="postgresql")
    else:
        Path(location).mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(Path(location) / "toolbound.db", isolation_level=None)
        migrate(conn, before)
    conn.execute("INSERT INTO sessions (id, created_at) VALUES ('s1', 1.0)")
    conn.execute(
        "INSERT INTO tool_calls (session_id, tool_call_id, tool, args, started_at)"
        " VALUES ('s1', 'b1', 'Bash', '{}', 1.0)"
    )
    conn.execute(
        "INSERT INTO tool_events (call_id, seq, type, stream, data, created_at)"
        " SELECT id, 0, 'chunk', 'stdout', 'hi\n', 1.0 FROM tool_calls"
    )
    result = json.dumps({"stdout": "hi\n", "stderr": "", "exitCode": 0})
    conn.execute(
        "INSERT INTO tool_events (call_id, seq, type, result, created_at)"
        " SELECT id, 1, 'result', ?, 1.0 FROM tool_calls",
        (result,),
    )
    return conn


def test_migration_0007_keeps_the_events_and_their_rules_and_takes_input_rows(
    location: str,
    open_store: Callable[..., SessionStore],
    raw: Callable[[str], list[tuple[Any, ...]]],
) -> None:
    _store_before_0007(location).close()
    with open_store():
        pass  # opening migrates
    assert raw("SELECT seq, type, stream, data FROM tool_events ORDER BY seq") == [
        (0, "chunk", "stdout", "hi\n"),
        (1, "result", None, None),
    ]
    for statement in ("UPDATE tool_events SET data = 'x'", "DELETE FROM tool_events"):
        with pytest.raises(REFUSED, match="append-only"):
            raw(statement)
    raw(
        "INSERT INTO tool_events (call_id, seq, type, data, result, created_at)"
        " SELECT id, 2, 'input', 'yes\n', '{\"close\": true}', 1.0 FROM tool_calls"
    )
    with pytest.raises(REFUSED):
        raw(
            "INSERT INTO tool_events (call_id, seq, type, stream, data, created_at)"
            " SELECT id, 3, 'input', 'stdout', 'no\n', 1.0 FROM tool_calls"
        )
    with open_store() as store:
        events = store.events("b1", session_id="s1")
    assert events[2] == {
        "type": "input",
        "toolCallId": "b1",
        "seq": 2,
        "data": "yes\n",
        "close": True,
    }


async def test_a_jobs_inputs_are_stored_in_seq_order_with_its_output(
    tmp_path: Path, location: str, open_store: Callable[..., SessionStore]
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with ToolHost(
        workspace=workspace, data_dir=tmp_path / "data", session_id="s1", store=location
    ) as host:
        started = await host.call("Bash", {"command": "cat", "background": True})
        job_id = started["jobId"]
        await host.call("JobInput", {"jobId": job_id, "input": "a\n"})
        await host.call("JobInput", {"jobId": job_id, "input": "b\n", "close": True})
        await host.call("JobOutput", {"jobId": job_id, "waitFor": "exit", "waitS": 10})
    with open_store() as store:
        events = store.events(job_id, session_id="s1")
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert [(e["type"], e.get("data"), e.get("close")) for e in events[:-1]] == [
        ("input", "a\n", False),
        ("chunk", "a\n", None),
        ("input", "b\n", True),
        ("chunk", "b\n", None),
    ]
    assert events[-1]["type"] == "result"
