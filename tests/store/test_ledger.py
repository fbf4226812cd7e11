"""The context ledger through the store: what each recorded call cost the model's context.

Every figure is checked against what it must be, computed here from the events
the host streamed (the model text as sent) and from the tool's own output, on
both backends.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from toolbound import SessionStore, ToolHost, estimate_tokens
from toolbound.fit import Fit
from toolbound.limits import PROFILE_NAMES
from toolbound.listeners import CallStart
from toolbound.model_text import model_text
from toolbound.results import ResultEvent
from toolbound.store import is_url
from toolbound.store.postgres import PgConn
from toolbound.store.schema import MIGRATIONS, migrate

SEQ_OUT = "".join(f"{i}\n" for i in range(1, 300_001))
# One line of 3000 two-byte characters: Read clips it to 2000, leaving 2000 bytes out.
BUNDLE = "é" * 3000 + "\nx = 1\n"

FIGURES = ("modelTokens", "modelBytes", "elidedBytes", "spilledBytes")

CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("r1", "Read", {"path": "a.py"}),
    ("b1", "Bash", {"command": "seq 1 300000"}),
    ("r2", "Read", {"path": "bundle.min.js"}),
    ("g1", "Grep", {"pattern": "print", "headLimit": 1}),
    ("gl", "Glob", {"pattern": "*.py"}),
    ("b2", "Bash", {"command": "echo out; echo err >&2; exit 3"}),
    ("e1", "Read", {"path": "missing.py"}),
]


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("print('héllo')\n" * 3)
    (ws / "b.py").write_text("print(2)\n")
    (ws / "bundle.min.js").write_text(BUNDLE)
    return ws


def host_data(tmp_path: Path) -> Path:
    """The hosts' data dir (scratch, spills), apart from the test's store."""
    return tmp_path / "host-data"


async def record_calls(tmp_path: Path, location: str) -> dict[str, dict[str, Any]]:
    """Run CALLS in session s1, recorded in ``location``; each call's result event."""
    results: dict[str, dict[str, Any]] = {}
    async with ToolHost(
        workspace=workspace(tmp_path), data_dir=host_data(tmp_path), session_id="s1", store=location
    ) as host:
        for call_id, tool, args in CALLS:
            events = [e async for e in host.stream(tool, args, tool_call_id=call_id)]
            results[call_id] = events[-1]
    return results


def expected_elided(call_id: str, result: dict[str, Any]) -> int:
    """What each call of CALLS left out of its model text, from the tool's own output."""
    if call_id == "b1":
        assert result["totals"]["stdout"]["bytes"] == len(SEQ_OUT)
        return len(SEQ_OUT) - len(result["stdout"].encode())
    if call_id == "r2":
        assert result["content"] == "é" * 2000 + "\nx = 1\n"
        return 1000 * len("é".encode())
    return 0


def without_times(ledger: dict[str, Any]) -> dict[str, Any]:
    for call in ledger["calls"]:
        call.pop("at")
    return ledger


def expected_ledger(events: dict[str, dict[str, Any]], spilled: dict[str, int]) -> dict[str, Any]:
    """The ledger of ``events`` (call id -> result event) as the contract defines it."""
    tool_of = {call_id: tool for call_id, tool, _ in CALLS}
    calls: list[dict[str, Any]] = []
    running = 0
    for call_id, event in events.items():
        text = event["text"]
        running += estimate_tokens(text)
        calls.append(
            {
                "toolCallId": call_id,
                "tool": tool_of[call_id],
                "modelTokens": estimate_tokens(text),
                "modelBytes": len(text.encode("utf-8")),
                "elidedBytes": expected_elided(call_id, event["result"]),
                "spilledBytes": spilled.get(call_id, 0),
                "rereadAvoided": False,
                "client": None,
                "fitBytes": None,
                "runningTokens": running,
            }
        )

    def totals(rows: list[dict[str, Any]]) -> dict[str, int]:
        return {
            "calls": len(rows),
            **{k: sum(r[k] for r in rows) for k in FIGURES},
            "rereadsAvoided": sum(r["rereadAvoided"] for r in rows),
        }

    return {
        "sessionId": "s1",
        "calls": calls,
        "tools": {
            tool: totals([c for c in calls if c["tool"] == tool])
            for tool in sorted({c["tool"] for c in calls})
        },
        "total": totals(calls),
    }


def spill_of(event: dict[str, Any]) -> int:
    """The size of a Bash call's stdout spill, checked to hold the head of SEQ_OUT."""
    data = Path(event["result"]["spill"]["stdout"]).read_bytes()
    # Fuller than the excerpt it backs (the capture ceiling is the looser one).
    assert len(data) > len(event["result"]["stdout"].encode())
    assert data == SEQ_OUT.encode()[: len(data)]
    return len(data)


async def test_each_recorded_call_keeps_its_model_text_cost_and_what_was_left_out(
    tmp_path: Path, location: str, open_store: Callable[..., SessionStore]
) -> None:
    before = time.time()
    events = await record_calls(tmp_path, location)
    with open_store() as store:
        ledger = store.session("s1").ledger()
    starts = [datetime.fromisoformat(c["at"]).timestamp() for c in ledger["calls"]]
    assert starts == sorted(starts)
    assert before - 0.001 <= starts[0]
    assert starts[-1] <= time.time()
    expected = expected_ledger(events, {"b1": spill_of(events["b1"])})
    assert without_times(ledger) == expected
    # The figures that matter, spelled out once: the whole session's cost is its calls' sum.
    assert expected["total"]["modelTokens"] == expected["calls"][-1]["runningTokens"]
    kept = len(events["b1"]["result"]["stdout"].encode())
    assert expected["total"]["elidedBytes"] == (1_988_895 - kept) + 2000
    assert expected["tools"]["Read"]["calls"] == 3


async def test_a_reread_answered_unchanged_counts_as_avoided(
    tmp_path: Path, location: str, open_store: Callable[..., SessionStore]
) -> None:
    """A Read result with ``unchanged: true`` (the economy profile's re-read) is a re-read
    avoided and elides nothing; its model text is what the recorder was handed."""
    ws = workspace(tmp_path)
    async with ToolHost(workspace=ws, data_dir=host_data(tmp_path), session_id="s1") as host:
        first = await host.call("Read", {"path": "a.py"})
    unchanged = {**first, "content": "", "unchanged": True, "notice": "Unchanged since call r1."}
    with open_store() as store:
        recorder = store.recorder("s1")
        try:
            for call_id, result in (("r1", first), ("r2", unchanged)):
                call = CallStart("s1", call_id, "Read", {"path": "a.py"})
                recorder.call_started(call)
                event = ResultEvent.of("Read", call_id, 0, result)
                recorder.call_event(call, event)
                await recorder.settle(call)
                recorder.call_ended(call, None)
        finally:
            recorder.close()
        ledger = without_times(store.session("s1").ledger())
    text = model_text("Read", unchanged)
    assert ledger["calls"][1] == {
        "toolCallId": "r2",
        "tool": "Read",
        "modelTokens": estimate_tokens(text),
        "modelBytes": len(text.encode()),
        "elidedBytes": 0,
        "spilledBytes": 0,
        "rereadAvoided": True,
        "client": None,
        "fitBytes": None,
        "runningTokens": estimate_tokens(model_text("Read", first)) + estimate_tokens(text),
    }
    assert ledger["calls"][0]["rereadAvoided"] is False
    assert (ledger["tools"]["Read"]["rereadsAvoided"], ledger["total"]["rereadsAvoided"]) == (1, 1)


async def test_a_call_cut_to_its_clients_cap_keeps_the_client_and_the_cap_on_both_backends(
    tmp_path: Path,
    location: str,
    open_store: Callable[..., SessionStore],
    raw: Callable[[str], list[tuple[Any, ...]]],
) -> None:
    """The ledger names the client a result went to and the cap its text was kept
    within, and measures the text as cut for that cap, whichever engine records it."""
    fit = Fit("codex-mcp-client 0.169.0", 11_500, None)
    async with ToolHost(
        workspace=workspace(tmp_path), data_dir=host_data(tmp_path), session_id="s1", store=location
    ) as host:
        events = [e async for e in host.stream("Bash", {"command": "seq 1 300000"}, fit=fit)]
    text = events[-1]["text"]
    assert 0 < len(text.encode()) <= 11_500
    with open_store() as store:
        (call,) = without_times(store.session("s1").ledger())["calls"]
    assert raw("SELECT client, fit_bytes, fit_lines FROM tool_calls") == [
        ("codex-mcp-client 0.169.0", 11_500, None)
    ]
    assert (call["client"], call["fitBytes"]) == ("codex-mcp-client 0.169.0", 11_500)
    assert call["modelBytes"] == len(text.encode())
    assert call["modelTokens"] == estimate_tokens(text)


def test_an_empty_session_has_an_empty_ledger(store: SessionStore) -> None:
    zero = {
        "calls": 0,
        "modelTokens": 0,
        "modelBytes": 0,
        "elidedBytes": 0,
        "spilledBytes": 0,
        "rereadsAvoided": 0,
    }
    assert store.session("s1").ledger() == {
        "sessionId": "s1",
        "calls": [],
        "tools": {},
        "total": zero,
    }


@pytest.mark.parametrize("profile", PROFILE_NAMES)
async def test_each_call_keeps_its_profile_and_replays_its_text_as_sent(
    tmp_path: Path,
    location: str,
    open_store: Callable[..., SessionStore],
    raw: Callable[[str], list[tuple[Any, ...]]],
    profile: Any,
) -> None:
    ws = workspace(tmp_path)
    async with ToolHost(workspace=ws, data_dir=host_data(tmp_path), session_id="s1") as host:
        result = await host.call("Bash", {"command": "printf 'a\\rb\\n'"})
    text = model_text("Bash", result)
    with open_store() as store:
        recorder = store.recorder("s1")
        try:
            call = CallStart("s1", "b1", "Bash", {}, profile=profile)
            recorder.call_started(call)
            recorder.call_event(call, {**ResultEvent.of("Bash", "b1", 0, result), "text": text})
            await recorder.settle(call)
        finally:
            recorder.close()
        (replayed,) = store.events("b1")
        ledger = store.session("s1").ledger()
    assert raw("SELECT tool_call_id, profile FROM tool_calls") == [("b1", profile)]
    assert replayed["text"] == text
    assert ledger["calls"][0]["modelBytes"] == len(text.encode())


def _old_store(location: str) -> Any:
    """A connection to a store migrated up to 0003, the schema before the ledger."""
    if is_url(location):
        conn: Any = PgConn(psycopg.connect(location, autocommit=True))
        migrate(conn, MIGRATIONS[:3], dialect="postgresql")
        return conn
    Path(location).mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(Path(location) / "toolbound.db", isolation_level=None)
    migrate(conn, MIGRATIONS[:3])
    return conn


async def test_calls_recorded_before_the_ledger_are_measured_from_their_stored_results(
    tmp_path: Path, location: str, open_store: Callable[..., SessionStore]
) -> None:
    """A store recorded before migration 0004 gets the same ledger: the figures are
    measured from each stored result when read, the text rendered as it was sent."""
    events = await record_calls(tmp_path, str(tmp_path / "recorded-now"))
    old = _old_store(location)
    try:
        old.execute("INSERT INTO sessions (id, created_at) VALUES ('s1', 1.0)")
        for n, (call_id, tool, args) in enumerate(CALLS, start=1):
            old.execute(
                "INSERT INTO tool_calls (session_id, tool_call_id, tool, args, started_at)"
                " VALUES ('s1', ?, ?, ?, ?)",
                (call_id, tool, json.dumps(args), 1000.0 + n),
            )
            old.execute(
                "INSERT INTO tool_events (call_id, seq, type, result, created_at)"
                " SELECT id, 0, 'result', ?, 1.0 FROM tool_calls WHERE tool_call_id = ?",
                (json.dumps(events[call_id]["result"], ensure_ascii=False), call_id),
            )
    finally:
        old.close()
    with open_store() as store:
        ledger = store.session("s1").ledger()
        replayed = {call_id: store.events(call_id)[-1] for call_id, _, _ in CALLS}
    assert [c["at"] for c in ledger["calls"]][:2] == [
        "1970-01-01T00:16:41.000+00:00",
        "1970-01-01T00:16:42.000+00:00",
    ]
    assert without_times(ledger) == expected_ledger(events, {"b1": spill_of(events["b1"])})
    assert replayed == {call_id: {**event, "seq": 0} for call_id, event in events.items()}


async def test_ledger_rows_are_append_only_until_the_session_ends_and_pruned_with_it(
    tmp_path: Path,
    location: str,
    open_store: Callable[..., SessionStore],
    raw: Callable[[str], list[tuple[Any, ...]]],
) -> None:
    ws = workspace(tmp_path)
    async with ToolHost(
        workspace=ws, data_dir=host_data(tmp_path), session_id="s1", store=location
    ) as host:
        await host.call("Read", {"path": "a.py"}, tool_call_id="r1")
    refused = (sqlite3.IntegrityError, psycopg.errors.IntegrityConstraintViolation)
    for statement in (
        "UPDATE tool_call_ledger SET model_tokens = 0",
        "DELETE FROM tool_call_ledger",
    ):
        with pytest.raises(refused, match="append-only"):
            raw(statement)
    with open_store() as store:
        store.end("s1")
        report = store.prune(ended_before=time.time() + 1)
        assert report.tool_calls == 1
        assert store.session("s1").ledger()["calls"] == []
    assert raw("SELECT count(*) FROM tool_call_ledger") == [(0,)]


async def test_a_call_with_no_recorded_result_is_not_in_the_ledger(
    tmp_path: Path, open_store: Callable[..., SessionStore]
) -> None:
    """Still running, or its tool crashed: it sent the model nothing (yet)."""
    ws = workspace(tmp_path)
    async with ToolHost(workspace=ws, data_dir=host_data(tmp_path), session_id="s1") as host:
        result = await host.call("Glob", {"pattern": "*.py"})
    with open_store() as store:
        recorder = store.recorder("s1")
        try:
            for call_id in ("running", "done"):
                call = CallStart("s1", call_id, "Glob", {"pattern": "*.py"})
                recorder.call_started(call)
            recorder.call_event(call, ResultEvent.of("Glob", "done", 0, result))
            await recorder.settle(call)
        finally:
            recorder.close()
        ledger = store.session("s1").ledger()
        assert [c["toolCallId"] for c in store.tool_calls("s1")] == ["running", "done"]
    assert [c["toolCallId"] for c in ledger["calls"]] == ["done"]
    assert ledger["total"]["calls"] == 1
