"""Four real agent harnesses, headless, with ``toolbound serve`` (its defaults) as their only tools.

Each of Claude Code, Codex CLI, Gemini CLI and opencode (pinned in
``package-lock.json``, installed from the npm registry on first use) runs one
short bug-fixing session (``session.SCRIPT``) against the scripted model
server, once with ``toolbound serve --stdio`` and once with ``toolbound serve
--http`` and its bearer token. The tests read the request bodies the harness
sent its model and assert that each fact of each result arrived
(``session.CHECKS``): the exit status, toolbound's marker, stderr's failing
test, the spill path, Read's next offset, errors flagged where the API has a
flag, and whole texts equal to toolbound's own where they are small.

A harness that cannot run here fails with the reason; none is skipped.
The whole matrix (4 harnesses x 2 transports, a few minutes) runs with
``make harness`` (``TOOLBOUND_HARNESSES=all``); ``make test`` runs the smoke:
Claude Code over stdio, every check.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness import harnesses
from harness.model_server import ModelServer, offered_tools
from harness.session import CHECKS, SCRIPT, STEP_NAMES, Delivered, Recorded, make_project, unwrap
from mcp_client import read_announcement, serve_process
from toolbound import model_text

ALL = [
    (h, t)
    for h in (harnesses.CLAUDE, harnesses.CODEX, harnesses.GEMINI, harnesses.OPENCODE)
    for t in ("stdio", "http")
]
SMOKE = [(harnesses.CLAUDE, "stdio")]
RUNS = ALL if os.environ.get("TOOLBOUND_HARNESSES") == "all" else SMOKE
TOOLBOUND_TOOLS = ["Read", "Glob", "Grep", "Bash", "Edit", "Write", "JobOutput", "JobStop"]
# Each harness's own tools that overlap toolbound's: none may be offered.
OWN_TOOLS = {
    "claude-code": {"Bash", "Read", "Edit", "Write", "Glob", "Grep"},
    "codex": {"shell", "exec_command", "shell_command", "local_shell"},
    "gemini-cli": set(harnesses.GEMINI_BUILTINS),
    "opencode": set(harnesses.OPENCODE_BUILTINS),
}
SESSION_TIMEOUT_S = 400


@dataclass
class Session:
    """One harness's run of the script over one transport, and what toolbound recorded."""

    harness: harnesses.Harness
    transport: str
    process: subprocess.CompletedProcess[str] | None
    failure: str
    offered: list[str]
    delivered: list[Delivered]
    recorded: list[Recorded | None]


def _toolbound_argv(workspace: Path, data_dir: Path, *transport: str) -> list[str]:
    return [
        "-m",
        "toolbound",
        "serve",
        *transport,
        "--workspace",
        str(workspace),
        "--data-dir",
        str(data_dir),
    ]


def _recorded_calls(data_dir: Path) -> list[tuple[str, dict[str, Any], int | None]]:
    """(tool, result, ledger modelBytes) of every call toolbound recorded, in start order."""

    def cli(*args: str) -> Any:
        done = subprocess.run(
            [sys.executable, "-m", "toolbound", "session", *args, "--data-dir", str(data_dir)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return json.loads(done.stdout)

    calls, model_bytes = [], {}
    for info in cli("list")["sessions"]:
        if info["toolCalls"]:
            calls += cli("show", info["id"])["toolCalls"]
            model_bytes.update(
                {c["toolCallId"]: c["modelBytes"] for c in cli("ledger", info["id"])["calls"]}
            )
    calls.sort(key=lambda c: float(c["startedAt"]))
    return [(c["tool"], c["result"], model_bytes.get(c["toolCallId"])) for c in calls]


def _run(harness: harnesses.Harness, transport: str, root: Path) -> Session:
    workspace, data_dir, home = root / "project", root / "data", root / "home"
    workspace.mkdir()
    make_project(workspace)
    process, failure = None, ""
    with ModelServer(SCRIPT) as model:
        try:
            if transport == "stdio":
                env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
                args = (*_toolbound_argv(workspace, data_dir, "--stdio"),)
                entry = harnesses.McpEntry("toolbound", command=sys.executable, args=args, env=env)
                process = harnesses.run(
                    harness, model.url, [entry], workspace, home, timeout_s=SESSION_TIMEOUT_S
                )
            else:
                argv = _toolbound_argv(workspace, data_dir, "--http", "127.0.0.1:0")
                with serve_process(argv) as lines:
                    url, token = read_announcement(lines)
                    entry = harnesses.McpEntry("toolbound", url=url, token=token)
                    process = harnesses.run(
                        harness, model.url, [entry], workspace, home, timeout_s=SESSION_TIMEOUT_S
                    )
        except harnesses.HarnessUnavailable as err:
            failure = str(err)
        except subprocess.TimeoutExpired:
            failure = f"{harness.name} did not finish the session within {SESSION_TIMEOUT_S} s"
        turns = model.turns()
        offered = offered_tools(harness.api, turns[-1].body) if turns else []
        delivered = [unwrap(harness.api, r) for r in model.results()]
    calls = _recorded_calls(data_dir) if (data_dir / "toolbound.db").exists() else []
    recorded: list[Recorded | None] = []
    for i, step in enumerate(SCRIPT):
        if i < len(calls) and calls[i][0] == step.tool:
            tool, result, model_bytes = calls[i]
            recorded.append(Recorded(result, (model_text(tool, result),), model_bytes))
        else:
            recorded.append(None)
    if process is not None and process.returncode != 0 and not failure:
        failure = f"{harness.name} exited {process.returncode}: {process.stderr[-2000:]}"
    return Session(harness, transport, process, failure, offered, delivered, recorded)


@pytest.fixture(
    scope="module",
    params=RUNS,
    ids=[f"{h.name}-{t}" for h, t in RUNS],
)
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Session:
    harness, transport = request.param
    return _run(harness, transport, tmp_path_factory.mktemp(f"{harness.name}-{transport}"))


def test_the_harness_runs_the_whole_session_with_toolbound_as_its_only_tools(
    session: Session,
) -> None:
    assert not session.failure, session.failure
    prefixed = [
        t for t in TOOLBOUND_TOOLS if not any(n.endswith(t) and n != t for n in session.offered)
    ]
    assert not prefixed, (
        f"toolbound's tools missing from what the model was offered: {prefixed}; {session.offered}"
    )
    own = OWN_TOOLS[session.harness.name] & set(session.offered)
    assert not own, f"the harness's own tools were offered too: {sorted(own)}"
    assert len(session.delivered) == len(SCRIPT), (
        f"{len(session.delivered)} of {len(SCRIPT)} results reached the model"
    )


FACTS = [(step, check) for step in STEP_NAMES for check in CHECKS[step]]


@pytest.mark.parametrize(("step", "check"), FACTS, ids=[f"{s}.{c}" for s, c in FACTS])
def test_each_fact_of_a_result_reaches_the_model(session: Session, step: str, check: str) -> None:
    index = STEP_NAMES.index(step)
    assert index < len(session.delivered), (
        f"the model never got the result of {SCRIPT[index]}: "
        f"{session.failure or 'the session stopped early'}"
    )
    recorded = session.recorded[index]
    assert recorded is not None, f"toolbound recorded no {SCRIPT[index].tool} call for step {step}"
    why = CHECKS[step][check](session.delivered[index], recorded)
    assert why is None, why
