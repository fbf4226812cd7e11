"""``toolbound setup HARNESS``: a configuration in the harness's own format that names
toolbound's command (or URL and token), with the harness's overlapping tools off.

(The harness tests run these configurations in the real harnesses.)
"""

from __future__ import annotations

import json
import sys
import tomllib
from typing import Any

import pytest

from toolbound.cli import main

STDIO_ARGS = ["serve", "--stdio", "--workspace", "."]
OUR_COMMAND = [sys.executable, "-m", "toolbound"]
URL = "http://127.0.0.1:8765/mcp"
BEARER = {"Authorization": "Bearer s3cret"}


def setup(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[Any, str]:
    assert main(["setup", *argv]) == 0
    out, err = capsys.readouterr()
    parsed = tomllib.loads(out) if argv[0] == "codex" else json.loads(out)
    return parsed, err


def test_claude_code_gets_an_mcp_json_entry_and_how_to_turn_its_tools_off(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config, notes = setup(capsys, "claude-code")
    assert config == {
        "mcpServers": {
            "toolbound": {
                "type": "stdio",
                "command": OUR_COMMAND[0],
                "args": [*OUR_COMMAND[1:], *STDIO_ARGS],
            }
        }
    }
    assert "--disallowedTools Bash Read Edit Write Glob Grep" in notes
    config, _ = setup(capsys, "claude-code", "--http", URL, "--token", "s3cret")
    assert config == {"mcpServers": {"toolbound": {"type": "http", "url": URL, "headers": BEARER}}}


def test_codex_gets_toml_with_required_true_and_its_shell_off(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config, _ = setup(capsys, "codex")
    assert config == {
        "mcp_servers": {
            "toolbound": {
                "command": OUR_COMMAND[0],
                "args": [*OUR_COMMAND[1:], *STDIO_ARGS],
                "required": True,
                "startup_timeout_sec": 60,
                "tool_timeout_sec": 330,
            }
        },
        "features": {"shell_tool": False, "unified_exec": False},
    }
    config, _ = setup(capsys, "codex", "--http", URL, "--token", "s3cret")
    server = config["mcp_servers"]["toolbound"]
    assert (server["url"], server["http_headers"], server["required"]) == (URL, BEARER, True)
    assert "command" not in server


def test_gemini_gets_settings_with_its_overlapping_tools_excluded(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config, _ = setup(capsys, "gemini", "--workspace", "/src/app")
    assert config["mcpServers"] == {
        "toolbound": {
            "command": OUR_COMMAND[0],
            "args": [*OUR_COMMAND[1:], "serve", "--stdio", "--workspace", "/src/app"],
            "trust": True,
            "timeout": 330_000,
        }
    }
    assert {"run_shell_command", "read_file", "write_file", "replace"} <= set(
        config["tools"]["exclude"]
    )
    config, _ = setup(capsys, "gemini", "--http", URL, "--token", "s3cret")
    assert config["mcpServers"]["toolbound"]["httpUrl"] == URL
    assert config["mcpServers"]["toolbound"]["headers"] == BEARER


def test_opencode_gets_a_local_or_remote_server_and_its_tools_off(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config, _ = setup(capsys, "opencode")
    assert config["mcp"]["toolbound"] == {
        "type": "local",
        "command": [*OUR_COMMAND, *STDIO_ARGS],
        "environment": {},
        "timeout": 60_000,
    }
    assert config["tools"]["bash"] is False
    assert config["tools"]["read"] is False
    monkeypatch.setenv("TOOLBOUND_TOKEN", "s3cret")
    config, _ = setup(capsys, "opencode", "--http", URL)
    assert config["mcp"]["toolbound"] == {
        "type": "remote",
        "url": URL,
        "headers": BEARER,
        "oauth": False,
        "timeout": 60_000,
    }


def test_setup_over_http_without_a_token_says_where_to_get_one(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLBOUND_TOKEN", raising=False)
    assert main(["setup", "codex", "--http", URL]) == 2
    assert capsys.readouterr() == (
        "",
        "toolbound: setup --http needs the token `toolbound serve` printed: --token TOKEN "
        "or $TOOLBOUND_TOKEN\n",
    )
