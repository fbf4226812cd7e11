"""The sessions list's tokens: the ledger's total, read with the list in one query."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from toolbound.host import ToolHost
from toolbound.store import SessionStore

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_a_call_recorded_before_the_ledger_still_counts_in_its_sessions_tokens(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    (tmp_path / "ws").mkdir()
    async with ToolHost(tmp_path / "ws", data_dir=data, session_id="old") as host:
        await host.call("Bash", {"command": "seq 1 3000"}, tool_call_id="c1")
        await host.call("Bash", {"command": "echo hi"}, tool_call_id="c2")
        await host.end()  # an ended session's rows may be deleted
    with SessionStore(data) as store:
        (listed,) = store.summaries()
        total = store.session("old").ledger()["total"]["modelTokens"]
    assert listed.tokens == total > 0

    # c1 as a call recorded before migration 0004: no ledger row, measured from its result.
    with sqlite3.connect(data / "toolbound.db") as conn:
        conn.execute(
            "DELETE FROM tool_call_ledger WHERE call_id ="
            " (SELECT id FROM tool_calls WHERE tool_call_id = 'c1')"
        )
    with SessionStore(data) as store:
        (listed,) = store.summaries()
        assert store.session("old").ledger()["total"]["modelTokens"] == total
    assert listed.tokens == total
