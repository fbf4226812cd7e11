"""``toolbound session ledger ID``: real ``toolbound call`` runs, then their ledger, as JSON.

Each command runs ``cli.main`` in this process: a host of its own per call, as
a process would make, with the store between them.
"""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support import run_main
from toolbound import estimate_tokens

SEQ_BYTES = sum(len(f"{i}\n") for i in range(1, 300_001))


Toolbound = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def toolbound(capsys: pytest.CaptureFixture[str]) -> Toolbound:
    """``toolbound ARGS…`` by ``cli.main`` in this process."""
    return functools.partial(run_main, capsys)


def call(
    toolbound: Toolbound, ws: Path, places: tuple[str, ...], tool: str, args: str
) -> dict[str, Any]:
    """One ``toolbound call --events`` in session s1; its result event."""
    done = toolbound(
        "call", tool, args, "--workspace", str(ws), "--session", "s1", "--events", *places
    )
    assert done.returncode in (0, 1), done.stderr
    *_, result = (json.loads(line) for line in done.stdout.splitlines())
    assert result["type"] == "result"
    return result


def test_session_ledger_reports_the_calls_the_cli_recorded(
    toolbound: Toolbound, location: str, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("def main():\n    return 'ok'\n" + "#" * 2300 + "\n")
    places = ("--data-dir", str(tmp_path / "data"), "--store", location)
    read = call(toolbound, ws, places, "Read", '{"path": "app.py"}')
    bash = call(toolbound, ws, places, "Bash", '{"command": "seq 1 300000"}')
    grep = call(toolbound, ws, places, "Grep", '{"pattern": "return"}')
    done = toolbound("session", "ledger", "s1", *places)
    assert (done.returncode, done.stderr) == (0, "")
    ledger = json.loads(done.stdout)

    texts = [e["text"] for e in (read, bash, grep)]
    tokens = [estimate_tokens(t) for t in texts]
    spill = Path(bash["result"]["spill"]["stdout"]).stat().st_size
    kept = len(bash["result"]["stdout"].encode())
    assert bash["result"]["totals"]["stdout"]["bytes"] == SEQ_BYTES
    figures = [
        # The 2300-character line was clipped to 2000: 300 bytes left out.
        ("Read", 300, 0),
        ("Bash", SEQ_BYTES - kept, spill),
        ("Grep", 0, 0),
    ]
    assert [
        {k: v for k, v in c.items() if k not in ("at", "toolCallId")} for c in ledger["calls"]
    ] == [
        {
            "tool": tool,
            "modelTokens": tokens[i],
            "modelBytes": len(texts[i].encode()),
            "elidedBytes": elided,
            "spilledBytes": spilled,
            "rereadAvoided": False,
            "client": None,
            "fitBytes": None,
            "runningTokens": sum(tokens[: i + 1]),
        }
        for i, (tool, elided, spilled) in enumerate(figures)
    ]
    assert [c["toolCallId"] for c in ledger["calls"]] == [
        e["toolCallId"] for e in (read, bash, grep)
    ]
    assert ledger["total"] == {
        "calls": 3,
        "modelTokens": sum(tokens),
        "modelBytes": sum(len(t.encode()) for t in texts),
        "elidedBytes": 300 + SEQ_BYTES - kept,
        "spilledBytes": spill,
        "rereadsAvoided": 0,
    }
    assert ledger["tools"]["Bash"] == {
        "calls": 1,
        "modelTokens": tokens[1],
        "modelBytes": len(texts[1].encode()),
        "elidedBytes": SEQ_BYTES - kept,
        "spilledBytes": spill,
        "rereadsAvoided": 0,
    }
    assert sorted(ledger["tools"]) == ["Bash", "Grep", "Read"]
    assert ledger["sessionId"] == "s1"


def test_session_ledger_of_an_unknown_session_fails_as_session_show_does(
    toolbound: Toolbound, location: str, tmp_path: Path
) -> None:
    places = ("--data-dir", str(tmp_path / "data"), "--store", location)
    ws = tmp_path / "ws"
    ws.mkdir()
    call(toolbound, ws, places, "Glob", '{"pattern": "*"}')
    # The store that holds session s1, and a data dir that holds no store at all.
    for where in (places, ("--data-dir", str(tmp_path / "empty"))):
        for action in ("show", "ledger"):
            done = toolbound("session", action, "nope", *where)
            assert (done.returncode, done.stdout) == (2, ""), (action, where)
            assert done.stderr.startswith("toolbound: there is no session 'nope' in "), done.stderr
