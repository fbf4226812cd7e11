"""``toolbound session …``: one JSON document on stdout, exit 2 on usage errors.

The commands run ``cli.main`` in this process; a ``toolbound call`` whose events
are recorded runs as a process of its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support import run_main
from toolbound import SessionStore

Cli = Callable[..., subprocess.CompletedProcess[str]]
Doc = Callable[..., Any]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    """``toolbound session ARGS…`` by ``cli.main`` in this process (``env``: set over
    this process's environment)."""

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return run_main(capsys, "session", *args, env=env)

    return run


@pytest.fixture
def doc(cli: Cli) -> Doc:
    """The JSON document a ``toolbound session`` command that succeeds prints."""

    def document(*args: str, env: dict[str, str] | None = None) -> Any:
        done = cli(*args, env=env)
        assert (done.returncode, done.stderr) == (0, "")
        return json.loads(done.stdout)

    return document


def test_session_commands_show_compact_and_end_a_stored_session(
    doc: Doc, location: str, tmp_path: Path
) -> None:
    data = str(tmp_path / "data")
    store_args = ("--store", location)
    with SessionStore(location) as store:
        session = store.session("s1")
        session.append({"role": "user", "content": "fix the build"})
        session.append({"role": "assistant", "content": "done"})
    listed = doc("list", "--data-dir", data, *store_args)
    assert [(s["id"], s["messages"], s["endedAt"]) for s in listed["sessions"]] == [("s1", 2, None)]
    shown = doc("show", "s1", "--data-dir", data, *store_args)
    assert shown["transcript"] == [
        {"role": "user", "content": "fix the build"},
        {"role": "assistant", "content": "done"},
    ]
    assert (shown["checkpoints"], shown["toolCalls"]) == ([], [])
    record = doc("checkpoint", "s1", "--summary", "built it", "--data-dir", data, *store_args)[
        "checkpoint"
    ]
    assert (record["retained"], record["throughSeq"]) == (
        [{"role": "user", "content": "fix the build"}],
        1,
    )
    assert doc("context", "s1", "--provider", "openai", "--data-dir", data, *store_args) == {
        "sessionId": "s1",
        "provider": "openai",
        "messages": [
            {"role": "user", "content": "fix the build"},
            {"role": "user", "content": "built it"},
        ],
    }
    ended = doc("end", "s1", "--data-dir", data, *store_args)["session"]
    assert ended["endedAt"] is not None
    assert doc("show", "s1", "--data-dir", data, *store_args)["session"] == ended


def test_session_usage_errors_exit_2_with_nothing_on_stdout(cli: Cli, tmp_path: Path) -> None:
    for args in (
        ("show", "missing", "--data-dir", str(tmp_path)),
        ("checkpoint", "s1", "--data-dir", str(tmp_path)),
        ("end", "../x", "--data-dir", str(tmp_path)),
        ("frobnicate",),
    ):
        done = cli(*args)
        assert (done.returncode, done.stdout) == (2, ""), args
        assert done.stderr


def test_session_list_uses_the_store_from_the_environment(
    doc: Doc, location: str, tmp_path: Path
) -> None:
    with SessionStore(location) as store:
        store.session("from-env")
    listed = doc("list", env={"TOOLBOUND_STORE": location, "TOOLBOUND_DATA_DIR": str(tmp_path)})
    assert [s["id"] for s in listed["sessions"]] == ["from-env"]


def test_session_list_uses_the_default_data_dir_from_the_environment(
    doc: Doc, tmp_path: Path
) -> None:
    with SessionStore(tmp_path / "env-data") as store:
        store.session("from-env")
    listed = doc("list", env={"TOOLBOUND_DATA_DIR": str(tmp_path / "env-data")})
    assert [s["id"] for s in listed["sessions"]] == ["from-env"]


def test_call_records_into_the_store_it_is_given(location: str, tmp_path: Path) -> None:
    places = ["--workspace", str(tmp_path), "--data-dir", str(tmp_path / "data")]
    options = [*places, "--session", "c1", "--store", location, "--events"]
    done = subprocess.run(
        [sys.executable, "-m", "toolbound", "call", "Bash", '{"command": "echo hi"}', *options],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    with SessionStore(location) as store:
        (call,) = store.tool_calls("c1")
        assert store.events(call["toolCallId"], session_id="c1") == events


def test_session_commands_on_a_data_dir_without_a_store_create_nothing(
    cli: Cli, doc: Doc, tmp_path: Path
) -> None:
    empty = tmp_path / "nothing-here"
    assert doc("list", "--data-dir", str(empty)) == {"sessions": []}
    pruned = doc("prune", "--ended-before", "1", "--data-dir", str(empty))["pruned"]
    assert pruned == {"sessions": 0, "toolCalls": 0, "toolEvents": 0, "messages": 0}
    assert (cli("show", "s1", "--data-dir", str(empty)).returncode, empty.exists()) == (2, False)
