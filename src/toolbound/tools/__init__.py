"""The four tools: arguments in, result model out.

Each tool lives in its own module (``toolbound.tools.read`` …) exposing
``async def run(args, ctx) -> WireModel``; it raises ``ToolError`` for a
failure the model should read. Modules are imported on first use, so a
``toolbound call Read`` pays for nothing else.

Pieces:
    ToolContext  what a running tool may use: limits, roots, scratch, events, abort, sandbox
    Runner       the signature of a tool's ``run``
    TOOL_NAMES   the tools, in a stable order
    load_runner  name -> run function
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

from toolbound.exec.sandbox import UNCONFINED, SandboxPolicy
from toolbound.limits import Limits
from toolbound.paths import Roots
from toolbound.results import Stream, WireModel
from toolbound.scratch import Scratch

TOOL_NAMES: tuple[str, ...] = ("Read", "Glob", "Grep", "Bash")


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a running tool may use.

    ``emit(stream, data)`` sends a chunk event; it is safe to call from any
    thread and does nothing once the call's result is out. ``abort`` is set
    when the call is aborted (``host.abort`` or cancellation of the caller).
    ``sandbox`` is where a command may write and whether it has a network.
    """

    limits: Limits
    roots: Roots
    scratch: Scratch
    tool_call_id: str
    emit: Callable[[Stream, str], None]
    abort: asyncio.Event
    sandbox: SandboxPolicy = UNCONFINED


class Runner(Protocol):
    def __call__(self, args: Any, ctx: ToolContext, /) -> Awaitable[WireModel]: ...


def load_runner(name: str) -> Runner:
    """Import ``toolbound.tools.<name>`` and return its ``run``."""
    module = importlib.import_module(f"toolbound.tools.{name.lower()}")
    return cast(Runner, module.run)
