"""The official TypeScript SDK client (1.x) against the real server, over both transports.

Its ``callTool`` validates every ``structuredContent`` against the tool's
``outputSchema``, error results included, and throws ``-32602`` on a mismatch:
what most MCP hosts ship. The client is pinned by ``ts/package.json`` and
``ts/package-lock.json`` and installed with ``npm ci`` into ``ts/node_modules``
(gitignored) the first time, then reused while the lock file is unchanged.
One node process per transport runs every check (``ts/client.mjs``) and prints
what it saw as one JSON document.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import HttpServer

WAIT_S = 30.0
TS_DIR = Path(__file__).parent / "ts"
NPM_CI_TIMEOUT_S = 600
# The stamp names the lock file the installed node_modules came from.
STAMP = TS_DIR / "node_modules" / ".toolbound-lock-sha256"


def _installed_client() -> Path:
    """``ts/`` with its node_modules matching the lock file (``npm ci`` when they do not)."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            pytest.fail(f"the TypeScript client test needs {tool}: apt-get install -y nodejs npm")
    want = hashlib.sha256((TS_DIR / "package-lock.json").read_bytes()).hexdigest()
    with open(TS_DIR / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not STAMP.is_file() or STAMP.read_text() != want:
            done = subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=TS_DIR,
                capture_output=True,
                text=True,
                timeout=NPM_CI_TIMEOUT_S,
                check=False,
            )
            assert done.returncode == 0, f"npm ci failed:\n{done.stdout}\n{done.stderr}"
            STAMP.write_text(want)
    return TS_DIR


@pytest.fixture(scope="session")
def ts_client() -> Path:
    return _installed_client()


def run_client(ts_dir: Path, config: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run(
        ["node", str(ts_dir / "client.mjs"), json.dumps({**config, "waitMs": WAIT_S * 1000})],
        capture_output=True,
        text=True,
        timeout=WAIT_S * 4,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def error_code(outcome: dict[str, Any]) -> tuple[bool, str]:
    """(isError, the error code) of an outcome the client did not throw on."""
    assert "thrown" not in outcome, outcome["thrown"]
    return outcome["isError"], outcome["structuredContent"]["error"]["code"]


def assert_report(report: dict[str, Any], rel: str) -> None:
    assert report["tools"] == [
        "Read",
        "Glob",
        "Grep",
        "Bash",
        "Edit",
        "Write",
        "JobOutput",
        "JobStop",
        "ApplyPatch",
        "List",
    ]
    calls = report["calls"]
    successes = {name: calls[name]["success"] for name in calls}
    assert all(not s.get("thrown") and not s["isError"] for s in successes.values()), successes
    assert successes["Read"]["structuredContent"]["content"] == "hello\n"
    assert successes["Glob"]["structuredContent"]["matches"] == [f"{rel}/a.txt"]
    assert successes["Grep"]["structuredContent"]["count"] == 1
    assert successes["Bash"]["structuredContent"]["stdout"] == "hi\n"
    assert successes["Edit"]["structuredContent"]["replacements"] == 1
    assert successes["Write"]["structuredContent"]["created"] is True
    assert {name: error_code(calls[name]["error"]) for name in calls} == {
        "Read": (True, "TOOL_NOT_FOUND"),
        "Glob": (True, "TOOL_INVALID_ARGUMENT"),
        "Grep": (True, "TOOL_INVALID_PATTERN"),
        "Bash": (True, "TOOL_INVALID_ARGUMENT"),
        "Edit": (True, "TOOL_NO_MATCH"),
        "Write": (True, "TOOL_PATH_NOT_ALLOWED"),
        "JobOutput": (True, "TOOL_JOB_NOT_FOUND"),
        "ApplyPatch": (True, "TOOL_INVALID_ARGUMENT"),
        "List": (True, "TOOL_INVALID_ARGUMENT"),
    }
    assert successes["List"]["structuredContent"]["entries"][0] == {
        "path": f"{rel}/a.txt",
        "type": "file",
        "size": len("hello\nworld\n"),
    }
    assert successes["ApplyPatch"]["structuredContent"]["files"] == [
        {
            "path": f"{rel}/c.txt",
            "action": "move",
            "from": f"{rel}/new/b.txt",
            "hunks": [{"matched": "exact", "line": 1}],
        }
    ]
    assert successes["JobOutput"]["structuredContent"] == {"jobs": []}
    job = report["job"]
    for step in ("started", "output", "stopped", "missing"):
        assert "thrown" not in job[step], job[step]
    assert job["started"]["structuredContent"]["state"] == "running"
    assert job["output"]["structuredContent"]["matched"] == "up"
    assert job["stopped"]["structuredContent"]["state"] == "killed"
    assert error_code(job["missing"]) == (True, "TOOL_JOB_NOT_FOUND")
    timeout = report["timeout"]
    assert "thrown" not in timeout, timeout["thrown"]
    assert (timeout["isError"], timeout["structuredContent"]["timedOut"]) == (True, True)
    assert "error" not in timeout["structuredContent"]
    assert timeout["structuredContent"]["stdout"].startswith("started\n")

    progress = report["progress"]
    assert progress["result"]["structuredContent"]["stdout"] == "one\n"
    notes = progress["notifications"]
    assert [n["progress"] for n in notes] == list(range(1, len(notes) + 1))
    assert sorted(n["message"] for n in notes) == ["one\n", "two\n"]

    cancel = report["cancel"]
    assert cancel["cancelled"]
    assert cancel["gone"]
    assert cancel["after"]["structuredContent"]["stdout"] == "still here\n"


def prepare(workspace: Path, rel: str) -> None:
    (workspace / rel).mkdir()
    (workspace / rel / "a.txt").write_text("hello\n")


def test_the_typescript_client_over_stdio(ts_client: Path, tmp_path: Path, serve_argv: Any) -> None:
    workspace, data_dir = tmp_path / "ws", tmp_path / "data"
    workspace.mkdir()
    prepare(workspace, "ts")
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PYTHONPATH")}
    config = {
        "transport": "stdio",
        "command": sys.executable,
        "args": serve_argv(workspace, data_dir, "--stdio"),
        "env": env,
        "workspace": str(workspace),
        "rel": "ts",
    }
    assert_report(run_client(ts_client, config), "ts")


def test_the_typescript_client_over_streamable_http(
    ts_client: Path, http_server: HttpServer
) -> None:
    prepare(http_server.workspace, "ts-http")
    config = {
        "transport": "http",
        "url": http_server.url,
        "token": http_server.token,
        "workspace": str(http_server.workspace),
        "rel": "ts-http",
    }
    assert_report(run_client(ts_client, config), "ts-http")
