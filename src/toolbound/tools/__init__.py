"""The tools: arguments in, result model out.

Each tool lives in its own module (``toolbound.tools.read`` …) exposing
``async def run(args, ctx) -> WireModel``; it raises ``ToolError`` for a
failure the model should read. Which tools there are, and everything said
about them, is the registry's (``toolbound.tools.registry``); the context a
tool runs in is ``toolbound.context``'s, re-exported here for the tools.

Pieces:
    ToolContext  what a running tool may use (``toolbound.context``)
    Runner, ToolSpec, SPECS, TOOL_NAMES, spec_for   the registry
"""

from toolbound.context import ToolContext
from toolbound.tools.registry import SPECS, TOOL_NAMES, Runner, ToolSpec, spec_for

__all__ = ["SPECS", "TOOL_NAMES", "Runner", "ToolContext", "ToolSpec", "spec_for"]
