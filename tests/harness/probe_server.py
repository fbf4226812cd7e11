"""A tiny stdio MCP server the cap measurements point a harness at (official ``mcp`` SDK).

Tools:
- ``emit(lines, width)``: a text of ``lines`` numbered lines, each ``width``
  bytes with its newline (``L000001 xxxx...``), so the received text tells
  where a harness cut (head, tail, middle) by the line numbers it kept;
- ``both()``: a result with a text block ``TEXT-BLOCK-ONLY`` and a different
  ``structuredContent`` (``{"where": "STRUCTURED-ONLY"}``), to see which one a
  harness hands its model;
- ``fail()``: an ``isError`` result, ``PROBE_FAIL: the probe failed on purpose``.

Each call appends one JSON line to the file named by ``$PROBE_LOG``: the
tool, its arguments and the ``clientInfo`` and protocol version the client
sent in ``initialize``.

Run: ``python probe_server.py`` (stdio).
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

TOOLS = [
    types.Tool(
        name="emit",
        description="Return a text of numbered lines.",
        input_schema={
            "type": "object",
            "properties": {"lines": {"type": "integer"}, "width": {"type": "integer"}},
            "required": ["lines", "width"],
        },
    ),
    types.Tool(
        name="both",
        description="Return a text block and structuredContent.",
        input_schema={"type": "object"},
    ),
    types.Tool(name="fail", description="Return an error result.", input_schema={"type": "object"}),
]


def numbered(lines: int, width: int) -> str:
    """``lines`` lines of exactly ``width`` bytes each, newline included."""
    pad = max(width - 9, 0)
    return "".join(f"L{i:06d} " + "x" * pad + "\n" for i in range(1, lines + 1))


def _log(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> None:
    path = os.environ.get("PROBE_LOG")
    if not path:
        return
    client = ctx.session.client_params
    info = client.client_info.model_dump(exclude_none=True) if client is not None else None
    entry = {
        "tool": params.name,
        "args": params.arguments,
        "clientInfo": info,
        "protocolVersion": ctx.protocol_version,
    }
    with open(path, "a") as out:
        out.write(json.dumps(entry) + "\n")


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    _log(ctx, params)
    args = params.arguments or {}
    if params.name == "emit":
        text = numbered(int(args["lines"]), int(args["width"]))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
    if params.name == "both":
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="TEXT-BLOCK-ONLY")],
            structured_content={"where": "STRUCTURED-ONLY"},
        )
    return types.CallToolResult(
        content=[types.TextContent(type="text", text="PROBE_FAIL: the probe failed on purpose")],
        is_error=True,
    )


async def main() -> None:
    server: Server[Any] = Server(
        "probe", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
