"""The four agent harnesses, run headless against the scripted model server.

Pieces:
- ``installed()``: ``tests/harness/node_modules`` matching the committed lock
  file (``npm ci`` the first time, then reused while the lock is unchanged);
- ``McpEntry``: one MCP server as a harness sees it, stdio (command, args,
  env) or HTTP (url and bearer token);
- one ``Harness`` per client (``CLAUDE``, ``CODEX``, ``GEMINI``, ``OPENCODE``):
  its API on the model server, how its configuration files are written in a
  private home, and the command line that runs one prompt headless with the
  MCP servers as its only tools (``builtin=True`` keeps its own tools instead);
- ``run(harness, model_url, servers, workdir, home)``: one headless session,
  returning the process outcome (the model server recorded the rest).

Everything a harness writes (config, logs, caches) stays in ``home``; no
harness logs in or reaches anything but the model server.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from toolbound import harness_setup

HERE = Path(__file__).parent
BIN = HERE / "node_modules" / ".bin"
NPM_CI_TIMEOUT_S = 900
# ``npm install`` with the committed lock installs exactly the locked versions.
# Not ``npm ci``: the registry lacks some of opencode's other-platform optional
# packages at 1.18.33 (darwin-arm64...), so the lock cannot list them and
# ``npm ci`` refuses it as out of sync; ``--no-save`` leaves the lock alone.
NPM_INSTALL = ["npm", "install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error"]
STAMP = HERE / "node_modules" / ".toolbound-lock-sha256"
PROMPT = "Fix the failing test in this project."
SERVER_NAME = "toolbound"


class HarnessUnavailable(RuntimeError):
    """A harness cannot run on this machine; the message says why and what to do."""


def installed() -> Path:
    """The harnesses' bin folder, after ``npm install`` when node_modules do not match the lock."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise HarnessUnavailable(
                f"the harness tests need {tool}: apt-get install -y nodejs npm"
            )
    want = hashlib.sha256((HERE / "package-lock.json").read_bytes()).hexdigest()
    with open(HERE / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not STAMP.is_file() or STAMP.read_text() != want:
            done = subprocess.run(
                NPM_INSTALL,
                cwd=HERE,
                capture_output=True,
                text=True,
                timeout=NPM_CI_TIMEOUT_S,
                check=False,
            )
            if done.returncode != 0:
                raise HarnessUnavailable(f"npm install failed:\n{done.stdout}\n{done.stderr}")
            STAMP.write_text(want)
    return BIN


@dataclass(frozen=True)
class McpEntry:
    """One MCP server: stdio when ``command`` is set, else HTTP at ``url`` with ``token``."""

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    token: str = ""


@dataclass(frozen=True)
class Harness:
    """One harness: its name, the model API it calls, and how to run it."""

    name: str
    api: str
    configure: Callable[[str, list[McpEntry], Path, Path, bool], tuple[list[str], dict[str, str]]]


def _base_env(home: Path) -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TERM", "TMPDIR")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        NO_COLOR="1",
        CI="1",
    )
    return env


# -- Claude Code: Anthropic Messages --------------------------------------------------------


def claude_mcp_config(servers: list[McpEntry]) -> dict[str, object]:
    entries: dict[str, object] = {}
    for s in servers:
        if s.command:
            entries[s.name] = {
                "type": "stdio",
                "command": s.command,
                "args": list(s.args),
                "env": s.env,
            }
        else:
            entries[s.name] = {
                "type": "http",
                "url": s.url,
                "headers": {"Authorization": f"Bearer {s.token}"},
            }
    return {"mcpServers": entries}


def _claude(
    model_url: str, servers: list[McpEntry], workdir: Path, home: Path, builtin: bool
) -> tuple[list[str], dict[str, str]]:
    config = home / "mcp.json"
    config.write_text(json.dumps(claude_mcp_config(servers)))
    env = _base_env(home)
    env.update(
        ANTHROPIC_BASE_URL=model_url,
        ANTHROPIC_API_KEY="sk-ant-scripted",
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        MCP_TIMEOUT="60000",
        MCP_TOOL_TIMEOUT="120000",
    )
    allowed = ",".join(f"mcp__{s.name}" for s in servers)
    argv = [
        str(BIN / "claude"),
        "-p",
        PROMPT,
        "--output-format",
        "json",
        "--model",
        "claude-sonnet-4-5",
    ]
    argv += ["--mcp-config", str(config), "--strict-mcp-config"]
    if builtin:
        argv += [
            "--tools",
            "Bash,Edit,Read,Glob,Grep",
            "--allowedTools",
            "Bash,Edit,Read,Glob,Grep",
        ]
    else:
        argv += ["--tools", "", "--allowedTools", allowed]
    return argv, env


CLAUDE = Harness("claude-code", "anthropic", _claude)


# -- Codex CLI: OpenAI Responses --------------------------------------------------------------

# A model Codex 0.169 has no metadata for: it offers MCP tools directly (the
# models it knows defer them behind its tool_search) and applies its fallback
# truncation policy, the smallest cap (about 12,000 bytes per tool output).
CODEX_MODEL = "gpt-5-codex"


def _toml(value: object) -> str:
    """A TOML value (strings, lists of strings, tables of strings) as JSON writes it."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def codex_config(model_url: str, servers: list[McpEntry], builtin: bool, model: str = "") -> str:
    """``$CODEX_HOME/config.toml``: the scripted provider and the MCP servers (``required``)."""
    lines = [
        f"model = {_toml(model or CODEX_MODEL)}",
        'model_provider = "scripted"',
        'approval_policy = "never"',
        'sandbox_mode = "danger-full-access"',
        "",
        "[model_providers.scripted]",
        'name = "scripted"',
        f"base_url = {_toml(model_url + '/v1')}",
        'wire_api = "responses"',
        'env_key = "SCRIPTED_API_KEY"',
        "request_max_retries = 0",
        "stream_max_retries = 0",
        "",
    ]
    if not builtin:
        lines += [
            "[features]",
            "shell_tool = false",
            "unified_exec = false",
            "apply_patch_freeform = false",
            "",
        ]
    for s in servers:
        lines.append(f"[mcp_servers.{s.name}]")
        if s.command:
            lines += [
                f"command = {_toml(s.command)}",
                f"args = {_toml(list(s.args))}",
                f"env = {_toml(s.env)}",
            ]
        else:
            lines += [
                f"url = {_toml(s.url)}",
                f"http_headers = {_toml({'Authorization': f'Bearer {s.token}'})}",
            ]
        lines += ["required = true", "startup_timeout_sec = 60", "tool_timeout_sec = 120", ""]
    return "\n".join(lines)


def _codex(
    model_url: str, servers: list[McpEntry], workdir: Path, home: Path, builtin: bool
) -> tuple[list[str], dict[str, str]]:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(codex_config(model_url, servers, builtin))
    env = _base_env(home)
    env.update(CODEX_HOME=str(codex_home), SCRIPTED_API_KEY="scripted", RUST_LOG="error")
    argv = [str(BIN / "codex"), "exec", "--skip-git-repo-check", "--json", PROMPT]
    return argv, env


CODEX = Harness("codex", "responses", _codex)


# -- Gemini CLI: the Gemini API --------------------------------------------------------------

# Gemini CLI's own tools, excluded when toolbound is the only tool layer: those
# `toolbound setup gemini` turns off, and the rest (web, memory, todos).
GEMINI_BUILTINS = [
    *harness_setup.GEMINI_BUILTINS,
    "web_fetch",
    "google_web_search",
    "save_memory",
    "write_todos",
]


def gemini_settings(servers: list[McpEntry], builtin: bool) -> dict[str, object]:
    """``~/.gemini/settings.json``: API-key auth, no telemetry, the MCP servers trusted."""
    entries: dict[str, object] = {}
    for s in servers:
        if s.command:
            entry: dict[str, object] = {"command": s.command, "args": list(s.args), "env": s.env}
        else:
            entry = {"httpUrl": s.url, "headers": {"Authorization": f"Bearer {s.token}"}}
        entries[s.name] = {**entry, "trust": True, "timeout": 120000}
    settings: dict[str, object] = {
        "mcpServers": {} if builtin else entries,
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "model": {"name": "gemini-2.5-pro"},
    }
    if not builtin:
        settings["tools"] = {"exclude": GEMINI_BUILTINS}
    return settings


def _gemini(
    model_url: str, servers: list[McpEntry], workdir: Path, home: Path, builtin: bool
) -> tuple[list[str], dict[str, str]]:
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(gemini_settings(servers, builtin)))
    env = _base_env(home)
    env.update(
        GOOGLE_GEMINI_BASE_URL=model_url, GEMINI_API_KEY="scripted", GEMINI_CLI_NO_RELAUNCH="true"
    )
    argv = [str(BIN / "gemini"), "-p", PROMPT, "--approval-mode", "yolo", "--output-format", "json"]
    return argv, env


GEMINI = Harness("gemini-cli", "gemini", _gemini)


# -- opencode: an OpenAI-compatible provider -------------------------------------------------

# opencode's own tools, turned off when toolbound is the only tool layer: those
# `toolbound setup opencode` turns off, and the rest.
OPENCODE_BUILTINS = [
    *harness_setup.OPENCODE_BUILTINS,
    "todowrite",
    "todoread",
    "webfetch",
    "websearch",
    "codesearch",
    "task",
    "skill",
    "lsp",
    "question",
]


def opencode_config(model_url: str, servers: list[McpEntry], builtin: bool) -> dict[str, object]:
    """``opencode.json``: the scripted provider, the MCP servers, the built-in tools on or off."""
    mcp: dict[str, object] = {}
    for s in servers:
        if s.command:
            mcp[s.name] = {
                "type": "local",
                "command": [s.command, *s.args],
                "environment": s.env,
                "timeout": 60000,
            }
        else:
            mcp[s.name] = {
                "type": "remote",
                "url": s.url,
                "headers": {"Authorization": f"Bearer {s.token}"},
                "oauth": False,
                "timeout": 60000,
            }
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Scripted",
        "options": {"baseURL": model_url + "/v1", "apiKey": "scripted"},
        "models": {
            "scripted": {
                "name": "Scripted",
                "tool_call": True,
                "limit": {"context": 1000000, "output": 32000},
            }
        },
    }
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {"scripted": provider},
        "model": "scripted/scripted",
        "small_model": "scripted/scripted",
        "mcp": {} if builtin else mcp,
        "tools": {} if builtin else {name: False for name in OPENCODE_BUILTINS},
        # A permission entry would put back a tool turned off above (permission wins).
        "permission": {"edit": "allow", "bash": "allow"} if builtin else {},
        "autoupdate": False,
        "share": "disabled",
    }


def _opencode(
    model_url: str, servers: list[McpEntry], workdir: Path, home: Path, builtin: bool
) -> tuple[list[str], dict[str, str]]:
    config = home / "opencode.json"
    config.write_text(json.dumps(opencode_config(model_url, servers, builtin)))
    env = _base_env(home)
    env.update(
        OPENCODE_CONFIG=str(config),
        OPENCODE_DISABLE_AUTOUPDATE="1",
        OPENCODE_DISABLE_MODELS_FETCH="1",
        OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
        OPENCODE_DISABLE_LSP_DOWNLOAD="1",
        OPENCODE_DISABLE_SHARE="1",
        OPENCODE_DISABLE_CLAUDE_CODE="1",
        OPENCODE_DISABLE_PROJECT_CONFIG="1",
        # opencode installs @opencode-ai/plugin into its config dir in the background
        # at start; offline, that install fails at once and nothing is downloaded.
        npm_config_offline="true",
    )
    argv = [
        str(BIN / "opencode"),
        "run",
        "--pure",
        "--auto",
        "--format",
        "json",
        "-m",
        "scripted/scripted",
        PROMPT,
    ]
    return argv, env


OPENCODE = Harness("opencode", "chat", _opencode)


def run(
    harness: Harness,
    model_url: str,
    servers: list[McpEntry],
    workdir: Path,
    home: Path,
    *,
    builtin: bool = False,
    timeout_s: float = 300,
) -> subprocess.CompletedProcess[str]:
    """One headless session of ``harness`` in ``workdir`` (the model server records the rest)."""
    installed()
    home.mkdir(parents=True, exist_ok=True)
    argv, env = harness.configure(model_url, servers, workdir, home, builtin)
    return subprocess.run(
        argv,
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
        stdin=subprocess.DEVNULL,
    )
