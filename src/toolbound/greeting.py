"""What ``toolbound serve`` says first: the ``initialize`` result, and over stdio its early answer.

A harness spawns its stdio servers and may start the model's first turn
without a server that has not answered ``initialize`` yet (Codex CLI's first
request went out 1.4 s after spawning one). Importing the ``mcp`` SDK and the
tools takes most of a second, so ``serve --stdio`` answers the client's
opening ``initialize`` itself, from this module (which imports neither),
while they load in a thread; the SDK's server then gets the request replayed
and its own answer to it is dropped (``toolbound.serve``). The answer is the
one the SDK gives (the same negotiation, capabilities and server info; a test
holds the two equal).

The 2026-07-28 protocol opens with ``server/discover``; a client that gets
no answer in time falls back to ``initialize`` on the same connection (Claude
Code does, so a slow start sends the pair). The SDK decides a connection's
protocol from its first request, so a discover reaching it first would make
the connection 2026-07-28 and refuse the fallback's plain requests. toolbound
therefore answers every ``server/discover`` that comes before the first other
request itself (here, or in ``toolbound.serve`` once loaded), with the SDK's
own result: the SDK's first request is then the one that decides, and an
``initialize`` makes the connection the negotiated (older) protocol.

Pieces:
    HANDSHAKE_VERSIONS  the protocol versions the handshake serves (the SDK's)
    instructions        the initialize result's instructions: the tool loop, profile,
                        fit and sandbox in force
    initialize_result   the result of an ``initialize`` request (JSON)
    discover_result     the result of a ``server/discover`` request (JSON)
    answers_discover    whether a message is a discover answered here (a well-formed envelope)
    Opening             the client's first line past its discovers, and the id answered early
    open_stdio          read from stdin, answering discovers, up to the first other line;
                        answer it if it is ``initialize``
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from toolbound.limits import profile_named

# mcp_types.version's HANDSHAKE_PROTOCOL_VERSIONS (importing it imports all of
# mcp_types, about 0.3 s); tests/mcp_server/test_greeting.py holds them equal.
HANDSHAKE_VERSIONS: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
# mcp_types.version's MODERN_PROTOCOL_VERSIONS (test_greeting holds them equal).
MODERN_VERSIONS: tuple[str, ...] = ("2026-07-28",)
# The request ``_meta`` keys of the 2026-07-28 per-request envelope the SDK requires.
MODERN_META_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_META_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"
DISCOVER = "server/discover"
SERVER_NAME = "toolbound"
# What the SDK's server declares: tools, whose list never changes.
CAPABILITIES: dict[str, Any] = {"tools": {"listChanged": False}}

_LOOP = (
    "toolbound's tools work in this workspace. Find with Glob (file names), List (a "
    "folder as a tree), Grep (contents) and Read (a window of a text file; an image as "
    'the image; a PDF\'s text, "pages" at a time); change with Edit (one replacement, or '
    'several at once in "edits"; Read the file first), Write (new files) or ApplyPatch '
    "(a patch in Codex's apply_patch format, all files or none); run commands with Bash "
    '(tests, builds), and start long-running ones with "background": true, then read '
    'them with JobOutput (`waitFor: "exit"` to wait for the end), answer their prompts '
    "with JobInput and stop them with JobStop. Results are bounded: a cut result "
    "says so and where the rest is (the next offset, or a spill file to Read or Grep)."
)


def instructions(*, profile: str, fit: str, sandbox: str) -> str:
    """The ``initialize`` result's instructions: the tool loop in a few lines, then the
    profile, the fit and the sandbox in force (``sandbox``: ``exec.sandbox.describe``'s line)."""
    fits = {
        "auto": "each result is kept within the per-result limit of the client it goes to, "
        "so the harness never cuts it",
        "off": "no per-result limit",
    }
    fit_line = fits.get(fit, f"each result is kept within {fit} bytes")
    if "unconfined" in sandbox:
        sandbox += ". WARNING: Bash commands run UNCONFINED, with all of this user's rights"
    return "\n".join(
        (
            _LOOP,
            f"Profile: {_summary(profile)}.",
            f"Fit: {fit_line}.",
            f"{sandbox}.",
        )
    )


def _summary(profile: str) -> str:
    """The profile's summary line (``Profile.summary``); an unknown name as it is."""
    try:
        return profile_named(profile).summary
    except ValueError:
        return profile


def negotiated(requested: object) -> str:
    """The protocol version the SDK answers an ``initialize`` proposing ``requested`` with."""
    if isinstance(requested, str) and requested in HANDSHAKE_VERSIONS:
        return requested
    return HANDSHAKE_VERSIONS[-1]


def initialize_result(params: object, *, version: str, instructions: str) -> dict[str, Any]:
    """The ``initialize`` result as the SDK's server builds it (camelCase JSON)."""
    requested = params.get("protocolVersion") if isinstance(params, dict) else None
    return {
        "capabilities": CAPABILITIES,
        "instructions": instructions,
        "protocolVersion": negotiated(requested),
        "serverInfo": {"name": SERVER_NAME, "version": version},
    }


def discover_result(*, version: str, instructions: str) -> dict[str, Any]:
    """The ``server/discover`` result as the SDK's server gives it (camelCase JSON)."""
    return {
        "cacheScope": "private",
        "capabilities": CAPABILITIES,
        "instructions": instructions,
        "resultType": "complete",
        "supportedVersions": list(MODERN_VERSIONS),
        "ttlMs": 0,
        "_meta": {SERVER_INFO_META_KEY: {"name": SERVER_NAME, "version": version}},
    }


def answers_discover(message: object) -> bool:
    """Whether ``message`` is a ``server/discover`` request toolbound answers itself: one
    whose envelope the SDK would accept (both required keys, a version it serves).
    Any other discover is left to the SDK, which refuses it as it sees fit."""
    if not isinstance(message, dict) or message.get("method") != DISCOVER or "id" not in message:
        return False
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return (
        isinstance(meta, dict)
        and CAPABILITIES_META_KEY in meta
        and meta.get(MODERN_META_KEY) in MODERN_VERSIONS
    )


@dataclass(frozen=True, slots=True)
class Opening:
    """The client's first line past the discovers answered here, as read from stdin, and
    the id of the ``initialize`` it held when that was answered here (None: not
    answered; the SDK answers it)."""

    line: bytes
    answered: int | str | None = None


def _read_line(fd: int) -> bytes:
    """One line from ``fd``, a byte at a time, so nothing after it is taken from the SDK."""
    out = bytearray()
    while True:
        byte = os.read(fd, 1)
        if not byte:
            return bytes(out)
        out += byte
        if byte == b"\n":
            return bytes(out)


def _write(fd: int, message: dict[str, Any]) -> None:
    data = (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]


def open_stdio(*, version: str, instructions: str, stdin: int = 0, stdout: int = 1) -> Opening:
    """Read the client's opening from stdin, answering it as far as it needs no SDK.

    Each ``server/discover`` the SDK would accept is answered and read past;
    the first other line is returned, answered first when it is an
    ``initialize``. Anything else (a notification, another request, a line
    that is not JSON) is left for the SDK, replayed with the rest.
    """
    while True:
        line = _read_line(stdin)
        try:
            message = json.loads(line)
        except ValueError:
            return Opening(line)
        if answers_discover(message):
            result = discover_result(version=version, instructions=instructions)
            _write(stdout, {"jsonrpc": "2.0", "id": message["id"], "result": result})
            continue
        if not isinstance(message, dict) or "id" not in message:
            return Opening(line)
        if message.get("method") != "initialize":
            return Opening(line)
        result = initialize_result(
            message.get("params"), version=version, instructions=instructions
        )
        _write(stdout, {"jsonrpc": "2.0", "id": message["id"], "result": result})
        return Opening(line, answered=message["id"])
