"""``serve --stdio``'s start: ``initialize`` and ``server/discover`` answered before the
SDK is imported, as the SDK would answer them, with the instructions; the 2026-07-28
discover-plus-initialize pair answered without error and the connection then serving
the negotiated protocol's plain requests; neither the web view nor PostgreSQL loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from toolbound.greeting import HANDSHAKE_VERSIONS, MODERN_VERSIONS

WAIT_S = 60.0
TOOLS = 11  # Read, Glob, Grep, Bash, Edit, Write, JobOutput, JobStop, ApplyPatch, List, JobInput
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def request(id_: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params or {}}


def initialize(id_: int, protocol: str) -> dict[str, Any]:
    info = {"name": "claude-code", "version": "2.1.332"}
    return request(
        id_, "initialize", {"protocolVersion": protocol, "capabilities": {}, "clientInfo": info}
    )


def exchange(tmp_path: Path, messages: list[dict[str, Any]], *flags: str) -> list[dict[str, Any]]:
    """Send ``messages`` to ``serve --stdio``, close stdin once every request is answered."""
    argv = [sys.executable, "-m", "toolbound", "serve", "--stdio", "--workspace", str(tmp_path)]
    proc = subprocess.Popen(
        [*argv, "--data-dir", str(tmp_path / "data"), *flags],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        for message in messages:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        want = {m["id"] for m in messages if "id" in m}
        answers: list[dict[str, Any]] = []
        while {a.get("id") for a in answers} != want:
            line = proc.stdout.readline()
            assert line, f"the server closed stdout after {answers}"
            answers.append(json.loads(line))
        proc.stdin.close()
        assert proc.wait(timeout=WAIT_S) == 0
        assert proc.stdout.read() == b""  # nothing answered twice
        return answers
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def test_the_handshake_and_modern_versions_are_the_sdks() -> None:
    assert HANDSHAKE_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS
    assert MODERN_VERSIONS == MODERN_PROTOCOL_VERSIONS


@pytest.mark.parametrize(
    ("asked", "answered"), [("2025-06-18", "2025-06-18"), ("2026-07-28", "2025-11-25")]
)
def test_stdio_answers_initialize_once_as_the_sdk_would_then_serves_the_tools(
    tmp_path: Path, asked: str, answered: str
) -> None:
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    early = exchange(tmp_path, [initialize(1, asked), initialized, request(2, "tools/list")])
    # A ping first: the opening is not initialize, so the SDK itself answers it.
    by_sdk = exchange(tmp_path, [request(0, "ping"), initialize(1, asked)])
    assert [a["id"] for a in early] == [1, 2]
    assert early[0] == by_sdk[1]
    assert early[0]["result"]["protocolVersion"] == answered
    assert early[0]["result"]["serverInfo"] == {
        "name": "toolbound",
        "version": version("toolbound"),
    }
    assert version("toolbound") == "0.3.0"
    assert len(early[1]["result"]["tools"]) == TOOLS


def discover(id_: int | str) -> dict[str, Any]:
    return request(id_, "server/discover", {"_meta": ENVELOPE})  # type: ignore[arg-type]


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
# A notification first: the greeting leaves it, so what follows reaches the loaded server.
CANCELLED = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}


def test_discover_is_answered_before_the_sdk_as_the_sdk_would_answer_it(tmp_path: Path) -> None:
    (early,) = exchange(tmp_path, [discover(1)])
    # An enveloped ping first: the connection is 2026-07-28 and the SDK answers the discover.
    by_sdk = exchange(tmp_path, [request(0, "ping", {"_meta": ENVELOPE}), discover(1)])
    assert early == by_sdk[1]
    assert early["result"]["supportedVersions"] == ["2026-07-28"]


@pytest.mark.parametrize("opening", [[], [CANCELLED]], ids=["greeting", "loaded"])
def test_claude_codes_discover_then_initialize_pair_serves_the_plain_protocol_after(
    tmp_path: Path, opening: list[dict[str, Any]]
) -> None:
    # Claude Code 2.1.332 over stdio: its discover probe timed out, so it falls back to
    # initialize on the same connection, then speaks the negotiated protocol.
    pair = [discover("server-discover-probe-1"), initialize(0, "2025-11-25")]
    listing = request(1, "tools/list")
    answers = {a["id"]: a for a in exchange(tmp_path, [*opening, *pair, INITIALIZED, listing])}
    assert {i: sorted(a) for i, a in answers.items()} == {
        "server-discover-probe-1": ["id", "jsonrpc", "result"],
        0: ["id", "jsonrpc", "result"],
        1: ["id", "jsonrpc", "result"],
    }
    assert answers[0]["result"]["protocolVersion"] == "2025-11-25"
    assert answers[0]["result"]["serverInfo"] == {"name": "toolbound", "version": "0.3.0"}
    said = answers["server-discover-probe-1"]["result"]["instructions"]
    assert answers[0]["result"]["instructions"] == said
    assert len(answers[1]["result"]["tools"]) == TOOLS


def test_a_discover_answered_in_time_opens_a_2026_connection(tmp_path: Path) -> None:
    listing = request(2, "tools/list", {"_meta": ENVELOPE})
    answers = {a["id"]: a for a in exchange(tmp_path, [discover(1), listing])}
    assert answers[1]["result"]["supportedVersions"] == ["2026-07-28"]
    assert len(answers[2]["result"]["tools"]) == TOOLS


def test_the_instructions_name_the_tool_loop_profile_fit_and_sandbox(tmp_path: Path) -> None:
    (default,) = exchange(tmp_path, [initialize(1, "2025-06-18")])
    said = default["result"]["instructions"]
    for words in (
        "Find with Glob (file names), List (a folder as a tree), Grep (contents) and Read",
        'an image as the image; a PDF\'s text, "pages" at a time',
        'change with Edit (one replacement, or several at once in "edits"',
        "or ApplyPatch (a patch in Codex's apply_patch format, all files or none)",
        "run commands with Bash",
        "JobOutput",
        "Profile: economy",
        "Fit: each result is kept within the per-result limit of the client it goes to",
    ):
        assert words in said
    (told,) = exchange(
        tmp_path,
        [initialize(1, "2025-06-18")],
        "--profile",
        "exact",
        "--fit",
        "4096",
        "--sandbox",
        "off",
    )
    lines = told["result"]["instructions"].split("\n")
    assert lines[1:] == [
        "Profile: exact (the seed's budgets).",
        "Fit: each result is kept within 4096 bytes.",
        "Bash sandbox: off (commands run unconfined, with the network). WARNING: Bash "
        "commands run UNCONFINED, with all of this user's rights.",
    ]


def test_the_instructions_name_every_tool_of_the_registry() -> None:
    from toolbound.greeting import instructions
    from toolbound.tools.registry import TOOL_NAMES

    said = instructions(profile="economy", fit="auto", sandbox="Bash sandbox: off")
    assert [name for name in TOOL_NAMES if name not in said] == []


def test_serve_stdio_loads_neither_the_web_view_nor_postgresql(tmp_path: Path) -> None:
    # (The mcp SDK's own package imports starlette and uvicorn, whatever we serve.)
    script = (
        "import sys\n"
        "from toolbound.cli import main\n"
        f"code = main(['serve', '--stdio', '--workspace', {str(tmp_path)!r}, '--data-dir', 'd'])\n"
        "heavy = ('psycopg', 'toolbound.web', 'toolbound.store.postgres')\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(heavy))\n"
        "print(code, loaded, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(initialize(1, "2025-06-18")) + "\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=WAIT_S,
        check=False,
    )
    assert json.loads(done.stdout)["id"] == 1
    assert done.stderr.splitlines()[-1] == "0 []"
