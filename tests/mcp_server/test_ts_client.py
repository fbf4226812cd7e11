"""The official TypeScript SDK client (1.x) against the real server, over both transports.

By default a result is its model text only. With ``serve --structured`` its
``callTool`` validates every ``structuredContent`` against the tool's
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
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from toolbound.tools.registry import TOOL_NAMES

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
    code = outcome["text"].partition(":")[0]
    if "structuredContent" in outcome:
        assert outcome["structuredContent"]["error"]["code"] == code
    return outcome["isError"], code


def assert_report(report: dict[str, Any], rel: str, *, structured: bool) -> None:
    assert report["tools"] == list(TOOL_NAMES)
    assert report["outputSchemas"] == (11 if structured else 0)  # every tool
    calls = report["calls"]
    successes = {name: calls[name]["success"] for name in calls}
    assert all(not s.get("thrown") and not s["isError"] for s in successes.values()), successes
    outcomes = [*successes.values(), *(calls[name]["error"] for name in calls)]
    assert all(("structuredContent" in o) == structured for o in outcomes), outcomes
    assert successes["Read"]["text"] == "hello\n"
    assert successes["Glob"]["text"] == f"{rel}/a.txt"
    assert successes["Grep"]["text"] == f"{rel}/a.txt\n1:hello"
    assert successes["Bash"]["text"] == "[exit status 0]\n<stdout>\nhi\n</stdout>"
    assert successes["Edit"]["text"].startswith(f"Edited {rel}/a.txt: 1 replacement.\n")
    assert successes["Write"]["text"].startswith(f"Created {rel}/new/b.txt (2 bytes).\n")
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
    assert successes["JobOutput"]["text"] == "No background jobs in this session."
    edited = len("hello\nworld\n")
    assert f"a.txt  ({edited} bytes)" in successes["List"]["text"].splitlines()
    if structured:
        assert successes["List"]["structuredContent"]["entries"][0] == {
            "path": f"{rel}/a.txt",
            "type": "file",
            "size": edited,
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
    else:
        assert successes["ApplyPatch"]["text"].startswith(f"Moved {rel}/new/b.txt")
    job = report["job"]
    for step in ("started", "output", "stopped", "missing"):
        assert "thrown" not in job[step], job[step]
    assert re.match(r"\[job job_\S+ started: pid \d+, running\]\n", job["started"]["text"])
    assert re.match(r"\[job job_\S+ running\]\n\[matched: up\]\n", job["output"]["text"])
    assert re.match(r"\[job job_\S+ killed by signal SIG", job["stopped"]["text"])
    assert error_code(job["missing"]) == (True, "TOOL_JOB_NOT_FOUND")
    timeout = report["timeout"]
    assert "thrown" not in timeout, timeout["thrown"]
    assert (timeout["isError"], timeout["text"].startswith("[timed out]\n")) == (True, True)
    assert "<stdout>\nstarted\n" in timeout["text"]
    if structured:
        assert successes["Read"]["structuredContent"]["content"] == "hello\n"
        assert job["stopped"]["structuredContent"]["state"] == "killed"
        assert timeout["structuredContent"]["timedOut"] is True
        assert "error" not in timeout["structuredContent"]

    progress = report["progress"]
    assert progress["result"]["text"] == (
        "[exit status 0]\n<stdout>\none\n</stdout>\n<stderr>\ntwo\n</stderr>"
    )
    notes = progress["notifications"]
    assert [n["progress"] for n in notes] == list(range(1, len(notes) + 1))
    assert sorted(n["message"] for n in notes) == ["one\n", "two\n"]

    cancel = report["cancel"]
    assert cancel["cancelled"]
    assert cancel["gone"]
    assert cancel["after"]["text"] == "[exit status 0]\n<stdout>\nstill here\n</stdout>"


def prepare(workspace: Path, rel: str) -> None:
    (workspace / rel).mkdir()
    (workspace / rel / "a.txt").write_text("hello\n")


@pytest.mark.parametrize("structured", [False, True], ids=["text", "structured"])
def test_the_typescript_client_over_stdio(
    ts_client: Path, tmp_path: Path, serve_argv: Any, structured: bool
) -> None:
    workspace, data_dir = tmp_path / "ws", tmp_path / "data"
    workspace.mkdir()
    prepare(workspace, "ts")
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PYTHONPATH")}
    flags = ["--structured"] if structured else []
    config = {
        "transport": "stdio",
        "command": sys.executable,
        "args": serve_argv(workspace, data_dir, "--stdio", *flags),
        "env": env,
        "workspace": str(workspace),
        "rel": "ts",
    }
    assert_report(run_client(ts_client, config), "ts", structured=structured)


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
    assert_report(run_client(ts_client, config), "ts-http", structured=False)
