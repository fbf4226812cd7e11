"""Background jobs benchmark (issue 14): starting, waking, and eight 1 GiB jobs at once.

Each figure is measured side by side with its anchor in one run:

- Bash ``background: true`` returning (a ``sleep`` job started; stopped after,
  untimed) against a plain Bash ``true`` call, alternating, medians compared:
  a job's start should cost no more than the shortest call.
- The latency from a job printing a line to ``JobOutput`` with ``until`` (the
  call already waiting) returning it: the job prints ``tick N <monotonic ns>``
  when the benchmark writes N into its FIFO; median over 100, goal < 20 ms.
- Eight jobs each writing 1 GiB of 70-byte lines at once, in a host of its own
  (a child process, so its peak RSS is its own ``ru_maxrss``): the host's peak
  RSS (goal < 100 MB), each stdout log's largest size on disk (sampled every
  10 ms) against its bound, every count exact, and the wall time against the
  same eight writers piped into ``cat > /dev/null`` at once (the anchor), and
  into ``cat > FILE`` (eight logs that keep all 8 GiB).

Usage: ``python bench/jobs.py`` prints the table and the load average.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from toolbound import DEFAULT_LIMITS, ToolHost
from toolbound.jobs.job import READ_BYTES

GIB = 1024**3
LINE = f"{'a line of build output from a compiler, padded out to 70 bytes':<69}"
WRITER = f"yes '{LINE}' | head -c {GIB}"
START_ROUNDS = 12  # of 8 jobs each: 96 starts against 96 `true` calls
TICKS = 100
JOBS = 8


async def _starts(host: ToolHost) -> tuple[list[float], list[float]]:
    """Seconds per background start and per plain `true`, interleaved."""
    background, plain = [], []
    for _ in range(START_ROUNDS):
        ids = []
        for _ in range(JOBS):
            t = time.perf_counter()
            started = await host.call("Bash", {"command": "sleep 60", "background": True})
            background.append(time.perf_counter() - t)
            ids.append(started["jobId"])
            t = time.perf_counter()
            await host.call("Bash", {"command": "true"})
            plain.append(time.perf_counter() - t)
        for job_id in ids:
            await host.call("JobStop", {"jobId": job_id})
    return background, plain


TICKER = (
    "import sys, time\n"
    "for line in open('fifo'):\n"
    "    print('tick', line.strip(), time.monotonic_ns(), flush=True)\n"
)


async def _latencies(host: ToolHost, ws: Path) -> list[float]:
    """Seconds from a job's print to the waiting JobOutput's return, TICKS times."""
    os.mkfifo(ws / "fifo")
    started = await host.call(
        "Bash", {"command": f'{sys.executable} -u -c "{TICKER}"', "background": True}
    )
    job_id = started["jobId"]
    fifo = await asyncio.to_thread(open, ws / "fifo", "w")
    out: list[float] = []
    try:
        for n in range(TICKS):
            waiting = asyncio.ensure_future(
                host.call("JobOutput", {"jobId": job_id, "until": f"^tick {n} ", "waitS": 10})
            )
            await asyncio.sleep(0.005)  # the call is waiting before the job prints
            fifo.write(f"{n}\n")
            fifo.flush()
            result = await waiting
            returned = time.monotonic_ns()
            printed = int(result["matched"].split()[2])
            out.append((returned - printed) / 1e9)
    finally:
        fifo.close()
        await host.call("JobStop", {"jobId": job_id})
    return out


def _child_eight(workspace: str, data_dir: str) -> None:
    """In a fresh process: eight 1 GiB jobs at once; print sizes, counts, time and peak RSS."""

    async def main() -> dict[str, Any]:
        async with ToolHost(workspace, data_dir=data_dir) as host:
            t = time.perf_counter()
            starts = [
                await host.call("Bash", {"command": WRITER, "background": True})
                for _ in range(JOBS)
            ]
            paths = [s["logs"]["stdout"] for s in starts]
            peak = dict.fromkeys(paths, 0)
            table = host.jobs
            while any(table.get(s["jobId"]).running for s in starts):
                for path in paths:
                    peak[path] = max(peak[path], os.stat(path).st_size)
                await asyncio.sleep(0.01)
            elapsed = time.perf_counter() - t
            totals = [
                (await host.call("JobOutput", {"jobId": s["jobId"]}))["totals"]["stdout"]
                for s in starts
            ]
            final = [os.stat(p).st_size for p in paths]
        return {"elapsed": elapsed, "peak": list(peak.values()), "final": final, "totals": totals}

    report = asyncio.run(main())
    report["maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(report))


def _eight_jobs(tmp: Path) -> dict[str, Any]:
    ws, data = tmp / "ws8", tmp / "data8"
    ws.mkdir()
    done = subprocess.run(
        [sys.executable, __file__, "--child-eight", str(ws), str(data)],
        capture_output=True,
        text=True,
        check=True,
    )
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _anchor_eight(tmp: Path, *, to_files: bool) -> float:
    """Eight of the same writers at once into `cat > /dev/null`, or into `cat > FILE`
    (logs that keep everything): seconds."""
    sinks = [str(tmp / f"anchor{i}.log") if to_files else "/dev/null" for i in range(JOBS)]
    t = time.perf_counter()
    procs = [subprocess.Popen(["bash", "-c", f"{WRITER} | cat > {sink}"]) for sink in sinks]
    for proc in procs:
        proc.wait()
    elapsed = time.perf_counter() - t
    for sink in sinks:
        if to_files:
            os.unlink(sink)
    return elapsed


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.2f} ms"


async def _in_host(tmp: Path) -> tuple[list[float], list[float], list[float]]:
    ws = tmp / "ws"
    ws.mkdir()
    async with ToolHost(ws, data_dir=tmp / "data") as host:
        background, plain = await _starts(host)
        latencies = await _latencies(host, ws)
    return background, plain, latencies


def main() -> None:
    limits = DEFAULT_LIMITS
    bound = limits.job_log_head_bytes + 2 * limits.job_log_tail_bytes + READ_BYTES
    with tempfile.TemporaryDirectory() as tmp:
        background, plain, latencies = asyncio.run(_in_host(Path(tmp)))
        anchor = _anchor_eight(Path(tmp), to_files=False)
        to_files = _anchor_eight(Path(tmp), to_files=True)
        eight = _eight_jobs(Path(tmp))
    expected_lines = -(-GIB // (len(LINE) + 1))
    exact = all(t == {"bytes": GIB, "lines": expected_lines} for t in eight["totals"])
    print(
        f"background start    {_ms(background):>10}   plain `true` {_ms(plain):>10}   "
        f"ratio {statistics.median(background) / statistics.median(plain):.2f}x"
    )
    print(
        f"print -> until      {_ms(latencies):>10}   (median of {TICKS}; "
        f"p90 {sorted(latencies)[int(TICKS * 0.9)] * 1000:.2f} ms; goal < 20 ms)"
    )
    print(
        f"8 x 1 GiB jobs      {eight['elapsed']:>8.2f} s   8 x cat > /dev/null "
        f"{anchor:>6.2f} s   ratio {eight['elapsed'] / anchor:.2f}x"
    )
    print(
        f"                                 8 x cat > FILE      {to_files:>6.2f} s   "
        f"ratio {eight['elapsed'] / to_files:.2f}x"
    )
    print(f"host peak RSS       {eight['maxrss_kb'] / 1024:>8.1f} MB   (goal < 100 MB)")
    print(
        f"log peak on disk    {max(eight['peak']) / 1024**2:>8.2f} MB   "
        f"bound {bound / 1024**2:.2f} MB; final {max(eight['final']) / 1024**2:.2f} MB; "
        f"counts exact: {exact}"
    )
    print(f"load average        {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child-eight":
        _child_eight(sys.argv[2], sys.argv[3])
    else:
        main()
