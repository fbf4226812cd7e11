"""Benchmark: the MCP server's cost over calling the host in-process.

Anchor: ``host.call("Read", ...)`` of the same small file in this process, the
least any way of serving the tool can cost. Side by side in one run:

1. latency: one Read through a real ``toolbound serve --stdio`` round trip
   (the official SDK client; JSON-RPC over pipes) against ``host.call``,
   interleaved in rounds so machine noise hits both alike; median ms, ratio;
2. throughput: 100 concurrent Reads on one streamable-HTTP session (handshake
   era) and on sessionless 2026-07-28 HTTP, against 100 concurrent
   ``host.call`` in-process; calls per second.

If the Read tool is not installed yet, every figure measures the error path
instead (a Read whose arguments are refused, which still crosses the whole
server) and the table says so.
"""

from __future__ import annotations

import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

# This script is bench/mcp.py: its own folder must not shadow the mcp SDK.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from mcp import Client, StdioServerParameters  # noqa: E402

from toolbound import ToolHost  # noqa: E402

ROUNDS = 10
CALLS_PER_ROUND = 20
CONCURRENT = 100
BATCHES = 5
WAIT_S = 30


def _serve_args(workspace: Path, data_dir: Path, *transport: str) -> list[str]:
    return [
        "-m",
        "toolbound",
        "serve",
        *transport,
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


def _start_http(workspace: Path, data_dir: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, *_serve_args(workspace, data_dir, "--http", "127.0.0.1:0")],
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stderr is not None
    announce = proc.stderr.readline()
    found = re.search(r"(http://\S+/mcp)", announce)
    if not found:
        proc.kill()
        raise RuntimeError(f"the server did not start: {announce!r}")
    return proc, found.group(1)


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace, data_dir = Path(tmp) / "ws", Path(tmp) / "data"
        workspace.mkdir()
        (workspace / "small.txt").write_text("".join(f"line {i}: some text\n" for i in range(40)))
        async with ToolHost(workspace, data_dir, "bench-anchor") as host:
            args, what = await _pick_args(host)

            async def in_process() -> object:
                return await host.call("Read", args)

            # The SDK hands the server a minimal environment; keep the import path.
            env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else None
            params = StdioServerParameters(
                command=sys.executable, args=_serve_args(workspace, data_dir, "--stdio"), env=env
            )
            async with Client(params, read_timeout_seconds=WAIT_S) as stdio:

                async def over_stdio() -> object:
                    return await stdio.call_tool("Read", args)

                await over_stdio()  # warm up: list_tools for the output schema, imports
                ours: list[float] = []
                base: list[float] = []
                for _ in range(ROUNDS):
                    ours += await _median_ms(over_stdio, CALLS_PER_ROUND)
                    base += await _median_ms(in_process, CALLS_PER_ROUND)

            proc, url = _start_http(workspace, data_dir)
            try:
                rates: dict[str, float] = {"host.call in-process": await _burst_per_s(in_process)}
                for label, mode in (("HTTP session", "legacy"), ("HTTP sessionless", "auto")):
                    async with Client(url, mode=mode, read_timeout_seconds=WAIT_S) as http:

                        async def over_http(http: Client = http) -> object:
                            return await http.call_tool("Read", args)

                        await over_http()
                        rates[label] = await _burst_per_s(over_http)
            finally:
                proc.terminate()
                proc.wait(timeout=WAIT_S)
                assert proc.stderr is not None
                proc.stderr.close()

    o, b = statistics.median(ours), statistics.median(base)
    print(f"MCP server vs host.call in-process: {what}")
    print(f"{'latency':<34} {'median ms':>10} {'ratio':>7}")
    print(f"{'MCP stdio round trip':<34} {o:>10.3f} {o / b:>6.1f}x")
    print(f"{'host.call in-process (anchor)':<34} {b:>10.3f} {1:>6.1f}x")
    print(f"{f'{CONCURRENT} concurrent calls':<34} {'calls/s':>10} {'ratio':>7}")
    anchor = rates["host.call in-process"]
    for label, rate in rates.items():
        print(f"{label:<34} {rate:>10.0f} {rate / anchor:>6.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
