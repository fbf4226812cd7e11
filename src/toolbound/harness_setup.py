"""``toolbound setup HARNESS``: a configuration that makes toolbound a harness's tool layer.

Each configuration is the one the harness tests run (Claude Code 2.1.332,
Codex CLI 0.169.0, Gemini CLI 0.61.0, opencode 1.18.33, headless against a
scripted model): toolbound over stdio, or over HTTP with the bearer token;
the harness's own overlapping tools turned off where its configuration can
say so, and its timeouts at least the longest Bash call. The configuration
is printed on stdout in the harness's own format (TOML for Codex CLI, JSON
for the others, so it can be written straight to its file); where it goes
and the rest (command-line flags) is printed as notes on stderr.

Pieces:
    HARNESSES  the harnesses setup knows
    Server     how the harness reaches toolbound: the stdio command, or a URL and token
    config     harness + Server -> (the configuration text, the notes)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from toolbound.limits import DEFAULT_LIMITS

HARNESSES = ("claude-code", "codex", "gemini", "opencode")
NAME = "toolbound"
# A tool call may take the longest Bash timeout; the harness must wait that long, and a bit.
TOOL_TIMEOUT_S = int(DEFAULT_LIMITS.bash_timeout_max_s) + 30
# How long a harness waits for the server to start and list its tools.
START_TIMEOUT_S = 60
# The built-in tools each harness has that toolbound's overlap.
CLAUDE_BUILTINS = ("Bash", "Read", "Edit", "Write", "Glob", "Grep")
GEMINI_BUILTINS = (
    "run_shell_command",
    "read_file",
    "read_many_files",
    "write_file",
    "replace",
    "glob",
    "grep_search",
    "search_file_content",
    "list_directory",
)
OPENCODE_BUILTINS = ("bash", "edit", "write", "read", "grep", "glob", "list", "patch", "multiedit")


@dataclass(frozen=True, slots=True)
class Server:
    """toolbound as the harness reaches it: ``command`` (argv of ``serve --stdio``), or
    ``url`` and ``token`` (``serve --http``)."""

    command: tuple[str, ...] = ()
    url: str | None = None
    token: str | None = None

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def _json(value: object) -> str:
    return json.dumps(value, indent=2) + "\n"


def _claude(server: Server) -> tuple[str, str]:
    entry: dict[str, object]
    if server.url is not None:
        entry = {"type": "http", "url": server.url, "headers": server.headers}
    else:
        entry = {"type": "stdio", "command": server.command[0], "args": [*server.command[1:]]}
    notes = (
        "Claude Code: write this to .mcp.json in the project (or pass it with --mcp-config "
        "FILE). Turn its own overlapping tools off so the model uses toolbound's: "
        f"claude --disallowedTools {' '.join(CLAUDE_BUILTINS)} (headless: claude -p PROMPT "
        "--mcp-config FILE --strict-mcp-config --tools '' --allowedTools mcp__toolbound). "
        f"Let a long Bash call finish: MCP_TOOL_TIMEOUT={TOOL_TIMEOUT_S * 1000}."
    )
    return _json({"mcpServers": {NAME: entry}}), notes


def _toml(value: object) -> str:
    """A TOML value: strings, lists of strings and inline tables of strings (JSON's
    escapes are TOML's for these)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value))


def _codex(server: Server) -> tuple[str, str]:
    lines = [f"[mcp_servers.{NAME}]"]
    if server.url is not None:
        lines += [f"url = {_toml(server.url)}", f"http_headers = {_toml(server.headers)}"]
    else:
        lines += [f"command = {_toml(server.command[0])}", f"args = {_toml(server.command[1:])}"]
    lines += [
        "# Without it Codex may send the first turn before toolbound has answered.",
        "required = true",
        f"startup_timeout_sec = {START_TIMEOUT_S}",
        f"tool_timeout_sec = {TOOL_TIMEOUT_S}",
        "",
        "# Codex's own shell off: commands run through toolbound's Bash.",
        "[features]",
        "shell_tool = false",
        "unified_exec = false",
    ]
    notes = (
        "Codex CLI: add this to $CODEX_HOME/config.toml (default ~/.codex/config.toml). "
        "required = true makes Codex wait for toolbound before the first turn."
    )
    return "\n".join(lines) + "\n", notes


def _gemini(server: Server) -> tuple[str, str]:
    entry: dict[str, object]
    if server.url is not None:
        entry = {"httpUrl": server.url, "headers": server.headers}
    else:
        entry = {"command": server.command[0], "args": [*server.command[1:]]}
    entry.update(trust=True, timeout=TOOL_TIMEOUT_S * 1000)
    config = {"mcpServers": {NAME: entry}, "tools": {"exclude": [*GEMINI_BUILTINS]}}
    notes = (
        "Gemini CLI: merge this into .gemini/settings.json in the project (or "
        "~/.gemini/settings.json); tools.exclude turns its own overlapping tools off, and "
        "trust: true runs toolbound's tools without a confirmation each."
    )
    return _json(config), notes


def _opencode(server: Server) -> tuple[str, str]:
    entry: dict[str, object]
    if server.url is not None:
        # oauth false: on a 401 opencode would otherwise try OAuth discovery.
        entry = {"type": "remote", "url": server.url, "headers": server.headers, "oauth": False}
    else:
        entry = {"type": "local", "command": [*server.command], "environment": {}}
    entry["timeout"] = START_TIMEOUT_S * 1000
    config = {
        "$schema": "https://opencode.ai/config.json",
        "mcp": {NAME: entry},
        "tools": dict.fromkeys(OPENCODE_BUILTINS, False),
    }
    notes = (
        "opencode: merge this into opencode.json in the project root (or "
        "~/.config/opencode/opencode.json); tools turns its own overlapping tools off."
    )
    return _json(config), notes


_BUILDERS: dict[str, Callable[[Server], tuple[str, str]]] = {
    "claude-code": _claude,
    "codex": _codex,
    "gemini": _gemini,
    "opencode": _opencode,
}


def config(harness: str, server: Server) -> tuple[str, str]:
    """The configuration of ``harness`` for ``server`` (stdout) and the notes (stderr)."""
    return _BUILDERS[harness](server)
