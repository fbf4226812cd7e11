"""The sessions list of the web view: where each session runs, its calls, its last activity."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

from toolbound.host import ToolHost
from toolbound.store import SessionStore


async def test_a_host_notes_its_workspace_and_machine_when_it_opens_its_session(
    location: str, tmp_path: Path, open_store: Callable[..., SessionStore]
) -> None:
    workspaces = {name: tmp_path / name for name in ("older", "newer")}
    for folder in workspaces.values():
        folder.mkdir()
    before = time.time()
    async with ToolHost(
        workspaces["older"], data_dir=tmp_path / "data", session_id="older", store=location
    ) as host:
        await host.call("Bash", {"command": "true"}, tool_call_id="a")
        await host.call("Bash", {"command": "echo done"}, tool_call_id="b")
    async with ToolHost(
        workspaces["newer"], data_dir=tmp_path / "data", session_id="newer", store=location
    ):
        pass
    with open_store() as store:
        store.session("bare")
        summaries = [s.to_wire() for s in store.summaries()]
        last_event = store.events("b", session_id="older")[-1]

    assert [(s["id"], s["workspace"], s["host"], s["toolCalls"]) for s in summaries] == [
        ("bare", None, None, 0),
        ("newer", str(workspaces["newer"].resolve()), socket.gethostname(), 0),
        ("older", str(workspaces["older"].resolve()), socket.gethostname(), 2),
    ]
    older = summaries[2]
    assert before <= older["createdAt"] < older["lastActivity"]
    assert older["endedAt"] is None
    assert last_event["type"] == "result"


def test_a_session_that_ended_was_last_active_when_it_ended(store: SessionStore) -> None:
    store.note_origin("s", workspace="/w", host="machine-b")
    ended = store.end("s")
    (summary,) = store.summaries()
    assert summary.to_wire() == {
        "id": "s",
        "createdAt": ended.created_at,
        "endedAt": ended.ended_at,
        "workspace": "/w",
        "host": "machine-b",
        "toolCalls": 0,
        "lastActivity": ended.ended_at,
        "tokens": 0,
    }
