"""Benchmark: the MCP server's cost over calling the host in-process.

Anchors: the reference MCP filesystem server in node
(``@modelcontextprotocol/server-filesystem``'s ``read_text_file``, pinned and
installed by ``bench/start.py``'s ``installed_reference``), the peer a Read
over MCP is held to (goal: at most 1.2x), and ``host.call("Read", ...)`` of
the same small file in this process, the least any way of serving the tool
can cost. Side by side in one run:

1. latency: one Read through a real ``toolbound serve --stdio`` round trip
   (serve's defaults: the economy profile, ``--fit auto``, recording into the
   store), once with tools/call answered on the wire (``toolbound.stdio_calls``,
   the default) and once through the SDK's server (``TOOLBOUND_STDIO_CALLS=sdk``),
   the reference server's ``read_text_file`` over stdio, all driven by
   the official SDK client (JSON-RPC over pipes), and ``host.call``. The client
   speaks 2026-07-28 to toolbound (its default, as toolbound answers
   ``server/discover``) and the handshake era to node (which does not): one more
   row drives toolbound in the handshake era (``mode="legacy"``), node's protocol;
   and one more drives it in the exact profile (handshake era), where every Read
   answers the file's 40 lines as node does (serve's default, economy, answers a
   re-read of an unchanged window with a short notice instead); and one more
   in the economy profile (handshake era) reading a new 40-line window of a
   200-line file each call (offsets cycling past the read record's windows per
   file), what an agent paging through a file does: content every call;
   interleaved in rounds so machine noise hits all alike; median ms, ratios,
   and beside them each server's own CPU time per call (``/proc``; in-process:
   this process's, client included), which the load does not inflate. The SDK
   floor beside them: the SDK's low-level server answering every call with a
   constant text, what a Python server on this SDK costs before any work;
   With ``--before SRC`` (another checkout's ``src`` folder), a server from
   that source tree too, in the same rounds;
2. throughput: 100 concurrent Reads on one streamable-HTTP session (handshake
   era) and on sessionless 2026-07-28 HTTP, against 100 concurrent
   ``host.call`` in-process; calls per second.

If the Read tool is not installed yet, every figure measures the error path
instead (a Read whose arguments are refused, which still crosses the whole
server) and the table says so.

Usage: ``python bench/mcp.py [--rounds N] [--before SRC] [--no-http]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import itertools
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from start import installed_reference

# This script is bench/mcp.py: its own folder must not shadow the mcp SDK.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

from toolbound import ToolHost  # noqa: E402

ROUNDS = 10
CALLS_PER_ROUND = 20
CONCURRENT = 100
BATCHES = 5
WAIT_S = 30
NODE = "node read_text_file"
FAST = "MCP stdio: calls on the wire"
FAST_HANDSHAKE = "  the same, handshake era"
EXACT_ROW = "  the same, exact profile"
WINDOWS_ROW = "  economy, a new window each call"
# The new-window row's file and windows: more offsets than the read record keeps
# windows of one file (MAX_WINDOWS_PER_FILE), so none is ever a re-read in context.
PAGED_LINES = 200
WINDOW_LINES = 40
SDK_PATH = "MCP stdio: calls via the SDK"
FLOOR = "SDK floor: constant text"

# The official SDK's low-level server over its own stdio transport, answering every
# call with the same text read once: what any Python server on this SDK costs a call
# before it does any work (no tool, no store, no file read per call).
FLOOR_SERVER = """
import sys
import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

text = open(sys.argv[1]).read()
tool = types.Tool(name="Read", input_schema={"type": "object"})

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[tool])

async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

async def main():
    server = Server("floor", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""
IN_PROCESS = "host.call in-process"


def _serve_args(workspace: Path, data_dir: Path, *options: str) -> list[str]:
    return [
        "-m",
        "toolbound",
        "serve",
        *options,
        "--workspace",
        str(workspace),
        "--data-dir",
        str(data_dir),
    ]


async def _pick_args(host: ToolHost) -> tuple[dict[str, Any], str]:
    """A real Read if the tool is there, else the error path."""
    try:
        result = await host.call("Read", {"path": "small.txt"})
    except ModuleNotFoundError:
        return {"path": "small.txt", "limit": 0}, "Read refused (TOOL_INVALID_ARGUMENT)"
    assert "error" not in result, result
    return {"path": "small.txt"}, "Read of a 40-line file"


async def _median_ms(call: Callable[[], Awaitable[object]], n: int) -> list[float]:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - t0) * 1000)
    return samples


async def _burst_per_s(call: Callable[[], Awaitable[object]]) -> float:
    """Calls per second of CONCURRENT calls at once, the median of BATCHES batches."""
    rates = []
    for _ in range(BATCHES):
        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(CONCURRENT):
                tg.start_soon(call)
        rates.append(CONCURRENT / (time.perf_counter() - t0))
    return statistics.median(rates)


def _start_http(workspace: Path, data_dir: Path, token: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, *_serve_args(workspace, data_dir, "--http", "127.0.0.1:0")],
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "TOOLBOUND_TOKEN": token},
    )
    assert proc.stderr is not None
    announce = proc.stderr.readline()
    found = re.search(r"(http://\S+/mcp)", announce)
    if not found:
        proc.kill()
        raise RuntimeError(f"the server did not start: {announce!r}")
    return proc, found.group(1)


def _children() -> set[int]:
    """This process's child processes (the stdio servers)."""
    me = str(os.getpid())
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if stat[stat.rfind(")") + 2 :].split()[1] == me:
                found.add(int(entry))
    return found


def _cpu_ms(pid: int | None) -> float:
    """CPU milliseconds so far of ``pid`` (None: this process)."""
    if pid is None:
        t = os.times()
        return (t.user + t.system) * 1000
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _stdio_server(
    workspace: Path,
    data_dir: Path,
    src: str | None = None,
    *,
    calls: str = "wire",
    profile: str = "economy",
) -> StdioServerParameters:
    """``toolbound serve --stdio`` with serve's defaults but ``profile``, from ``src``
    when given; ``calls`` "sdk": every tools/call through the SDK's server
    (``$TOOLBOUND_STDIO_CALLS``)."""
    # The SDK hands the server a minimal environment; keep the import path.
    path = src or os.environ.get("PYTHONPATH")
    env = {"PYTHONPATH": path} if path else {}
    if calls == "sdk":
        env["TOOLBOUND_STDIO_CALLS"] = "sdk"
    return StdioServerParameters(
        command=sys.executable,
        args=_serve_args(workspace, data_dir, "--stdio", "--profile", profile),
        env=env or None,
    )


def _new_window_each_call(client: Client) -> Callable[[], Awaitable[object]]:
    """A Read of the next ``WINDOW_LINES``-line window of paged.txt each call, its
    offset cycling over every line a full window starts at."""
    offsets = itertools.cycle(range(PAGED_LINES - WINDOW_LINES))

    async def call() -> object:
        args = {"path": "paged.txt", "offset": next(offsets), "limit": WINDOW_LINES}
        result = await client.call_tool("Read", args)
        assert not result.is_error, result
        assert not (result.structured_content or {}).get("unchanged"), result
        return result

    return call


_LOAD_AT_START = os.getloadavg()


async def main(rounds: int, before: str | None, http: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace, data_dir = Path(tmp) / "ws", Path(tmp) / "data"
        workspace.mkdir()
        (workspace / "small.txt").write_text("".join(f"line {i}: some text\n" for i in range(40)))
        (workspace / "paged.txt").write_text(
            "".join(f"line {i}: some text\n" for i in range(PAGED_LINES))
        )
        async with ToolHost(workspace, data_dir, "bench-anchor") as host:
            args, what = await _pick_args(host)

            async def in_process() -> object:
                return await host.call("Read", args)

            node = StdioServerParameters(
                command="node", args=[str(installed_reference()), str(workspace)]
            )
            small = str((workspace / "small.txt").resolve())
            calls: dict[str, Callable[[], Awaitable[object]]] = {}
            pids: dict[str, int | None] = {IN_PROCESS: None}
            async with contextlib.AsyncExitStack() as stack:
                servers = {
                    FAST: (_stdio_server(workspace, data_dir), "auto"),
                    FAST_HANDSHAKE: (_stdio_server(workspace, data_dir), "legacy"),
                    EXACT_ROW: (_stdio_server(workspace, data_dir, profile="exact"), "legacy"),
                    WINDOWS_ROW: (_stdio_server(workspace, data_dir), "legacy"),
                    SDK_PATH: (_stdio_server(workspace, data_dir, calls="sdk"), "auto"),
                }
                if before is not None:
                    servers["MCP stdio, --before"] = (
                        _stdio_server(workspace, data_dir, before),
                        "auto",
                    )
                for label, (params, mode) in servers.items():
                    known = _children()
                    client = await stack.enter_async_context(
                        Client(params, mode=mode, read_timeout_seconds=WAIT_S)
                    )
                    calls[label] = functools.partial(client.call_tool, "Read", args)
                    if label == WINDOWS_ROW:
                        calls[label] = _new_window_each_call(client)
                    (pids[label],) = _children() - known
                floor = StdioServerParameters(
                    command=sys.executable, args=["-c", FLOOR_SERVER, small]
                )
                known = _children()
                floor_client = await stack.enter_async_context(
                    Client(floor, read_timeout_seconds=WAIT_S)
                )
                calls[FLOOR] = functools.partial(floor_client.call_tool, "Read", args)
                (pids[FLOOR],) = _children() - known
                known = _children()
                reference = await stack.enter_async_context(
                    Client(node, read_timeout_seconds=WAIT_S)
                )
                (pids[NODE],) = _children() - known
                calls[NODE] = functools.partial(
                    reference.call_tool, "read_text_file", {"path": small}
                )
                calls[IN_PROCESS] = in_process
                for call in calls.values():
                    await call()  # warm up: list_tools for the output schema, imports
                samples: dict[str, list[float]] = {label: [] for label in calls}
                cpu: dict[str, list[float]] = {label: [] for label in calls}
                order = list(calls)
                for turn in range(rounds):
                    # Each round starts with the next one: none always follows the same.
                    for label in order[turn % len(order) :] + order[: turn % len(order)]:
                        call = calls[label]
                        cpu_started = _cpu_ms(pids[label])
                        samples[label] += await _median_ms(call, CALLS_PER_ROUND)
                        used = _cpu_ms(pids[label]) - cpu_started
                        cpu[label].append(used)
            latency = {
                label: (statistics.median(ms), sum(cpu[label]) / len(ms))
                for label, ms in samples.items()
            }
            rates = await _throughput(workspace, data_dir, args, in_process) if http else {}
    _print(what, latency, rates)


async def _throughput(
    workspace: Path,
    data_dir: Path,
    args: dict[str, Any],
    in_process: Callable[[], Awaitable[object]],
) -> dict[str, float]:
    """Calls per second of CONCURRENT calls: in-process, and over HTTP with and
    without a session."""
    token = secrets.token_urlsafe(16)
    proc, url = _start_http(workspace, data_dir, token)
    headers = {"Authorization": f"Bearer {token}"}
    try:
        rates: dict[str, float] = {IN_PROCESS: await _burst_per_s(in_process)}
        for label, mode in (("HTTP session", "legacy"), ("HTTP sessionless", "auto")):
            async with (
                create_mcp_http_client(headers=headers) as client,
                Client(
                    streamable_http_client(url, http_client=client),
                    mode=mode,
                    read_timeout_seconds=WAIT_S,
                ) as http,
            ):
                over_http = functools.partial(http.call_tool, "Read", args)
                await over_http()
                rates[label] = await _burst_per_s(over_http)
    finally:
        proc.terminate()
        proc.wait(timeout=WAIT_S)
        assert proc.stderr is not None
        proc.stderr.close()
    return rates


def _print(what: str, latency: dict[str, tuple[float, float]], rates: dict[str, float]) -> None:
    print(f"load average at start: {_LOAD_AT_START}, at end: {os.getloadavg()}")
    print(f"MCP server vs the node reference and host.call in-process: {what}")
    print(
        f"{'latency':<34} {'median ms':>10} {'vs node':>8} {'vs host':>8}"
        f" {'server CPU ms':>14} {'vs node':>8}"
    )
    (n, n_cpu), (b, _) = latency[NODE], latency[IN_PROCESS]
    for label, (ms, cpu) in latency.items():
        anchor = " (anchor)" if label in (NODE, IN_PROCESS, FLOOR) else ""
        print(
            f"{label + anchor:<34} {ms:>10.3f} {ms / n:>7.2f}x {ms / b:>7.1f}x"
            f" {cpu:>14.3f} {cpu / n_cpu:>7.2f}x"
        )
    if rates:
        print(f"{f'{CONCURRENT} concurrent calls':<34} {'calls/s':>10} {'ratio':>8}")
        anchor_rate = rates[IN_PROCESS]
        for label, rate in rates.items():
            print(f"{label:<34} {rate:>10.0f} {rate / anchor_rate:>7.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--before", metavar="SRC", help="another checkout's src folder")
    parser.add_argument("--no-http", action="store_true", help="latency only")
    options = parser.parse_args()
    asyncio.run(main(options.rounds, options.before, not options.no_http))
