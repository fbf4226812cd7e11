"""Background jobs benchmark (issues 14, 28): starting, waking, eight 1 GiB jobs at once,
a dev server's first line, and a job's input.

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
- A Python dev server's first line (issue 28): ``python -m http.server 0``
  started as a job, seconds from the Bash call to a waiting ``JobOutput``
  with ``until: "Serving"`` returning it, against the same server started in
  a terminal (``script -q -c``, its first line read from the terminal), in
  alternating rounds, medians and their ratio. The benchmark runs without
  ``PYTHONUNBUFFERED``, as an MCP client starts a server: the line arrives
  only because jobs are line-buffered.
- JobInput's round trip on a ``cat`` job (the line written, its echo back):
  the time until a listener sees the echo's chunk, and until the JobInput
  call returns (it waits for the output to pause ``job_input_quiet_s``),
  against writing the line to a pipe of a ``cat`` process and reading the echo
  back directly.

Usage: ``python bench/jobs.py`` prints the table and the load average;
``python bench/jobs.py shell`` only the last two figures (the dev server, the input).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from toolbound import DEFAULT_LIMITS, ToolHost
from toolbound.jobs.job import READ_BYTES
from toolbound.listeners import CallListener, CallStart

GIB = 1024**3
LINE = f"{'a line of build output from a compiler, padded out to 70 bytes':<69}"
WRITER = f"yes '{LINE}' | head -c {GIB}"
START_ROUNDS = 12  # of 8 jobs each: 96 starts against 96 `true` calls
TICKS = 100
JOBS = 8
SERVER_ROUNDS = 7
SERVER = f"{sys.executable} -m http.server 0 --bind 127.0.0.1"
INPUT_ROUNDS = 20
PIPE_ROUNDS = 200


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


async def _server_as_job(host: ToolHost) -> float:
    """Seconds from starting the dev server as a job to JobOutput's ``until`` returning."""
    t = time.perf_counter()
    started = await host.call("Bash", {"command": SERVER, "background": True})
    job_id = started["jobId"]
    try:
        out = await host.call("JobOutput", {"jobId": job_id, "until": "^Serving", "waitS": 10})
        elapsed = time.perf_counter() - t
        if "matched" not in out:
            raise RuntimeError(f"the server's first line did not arrive: {out}")
    finally:
        await host.call("JobStop", {"jobId": job_id})
    return elapsed


def _server_in_terminal(cwd: Path) -> float:
    """Seconds from starting the dev server under ``script`` to its first line's arrival."""
    t = time.perf_counter()
    proc = subprocess.Popen(
        ["script", "-q", "-c", SERVER, "/dev/null"],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    assert proc.stdout is not None
    seen = b""
    try:
        while b"Serving" not in seen:
            data = os.read(proc.stdout.fileno(), 4096)
            if not data:
                raise RuntimeError(f"the terminal's server ended first: {seen!r}")
            seen += data
        return time.perf_counter() - t
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait()
        proc.stdout.close()


async def _servers(host: ToolHost, cwd: Path) -> tuple[list[float], list[float]]:
    """The dev server's first line as a job and in a terminal, alternating."""
    as_job, in_terminal = [], []
    for _ in range(SERVER_ROUNDS):
        as_job.append(await _server_as_job(host))
        in_terminal.append(await asyncio.to_thread(_server_in_terminal, cwd))
    return as_job, in_terminal


class _EchoSeen(CallListener):
    """The time each chunk of a job's output reached the listeners, by its text."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}

    def call_event(self, call: CallStart, event: dict[str, Any]) -> None:
        if event["type"] == "chunk":
            self.at.setdefault(event["data"], time.perf_counter())


async def _inputs(host: ToolHost) -> tuple[list[float], list[float]]:
    """JobInput on a ``cat`` job: seconds to the echo's chunk, and to the call's return."""
    seen = _EchoSeen()
    host.listeners.append(seen)
    started = await host.call("Bash", {"command": "cat", "background": True})
    job_id = started["jobId"]
    echoed, returned = [], []
    try:
        for n in range(INPUT_ROUNDS):
            line = f"ping {n}\n"
            t = time.perf_counter()
            out = await host.call("JobInput", {"jobId": job_id, "input": line})
            returned.append(time.perf_counter() - t)
            if line not in seen.at or out["stdout"] != line:
                raise RuntimeError(f"no echo of {line!r}: {out}")
            echoed.append(seen.at[line] - t)
    finally:
        await host.call("JobStop", {"jobId": job_id})
        host.listeners.remove(seen)
    return echoed, returned


def _pipe_round_trips() -> list[float]:
    """The anchor: a line written to a ``cat`` process's stdin pipe, its echo read back."""
    proc = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None
    assert proc.stdout is not None
    out: list[float] = []
    try:
        for n in range(PIPE_ROUNDS):
            line = f"ping {n}\n".encode()
            t = time.perf_counter()
            os.write(proc.stdin.fileno(), line)
            got = b""
            while not got.endswith(b"\n"):
                got += os.read(proc.stdout.fileno(), 4096)
            out.append(time.perf_counter() - t)
    finally:
        proc.stdin.close()
        proc.wait()
        proc.stdout.close()
    return out


async def _shell(tmp: Path) -> dict[str, list[float]]:
    ws = tmp / "ws-shell"
    ws.mkdir()
    terminal_cwd = tmp / "terminal"
    terminal_cwd.mkdir()
    async with ToolHost(ws, data_dir=tmp / "data-shell") as host:
        as_job, in_terminal = await _servers(host, terminal_cwd)
        echoed, returned = await _inputs(host)
    pipe = await asyncio.to_thread(_pipe_round_trips)
    return {
        "as_job": as_job,
        "in_terminal": in_terminal,
        "echoed": echoed,
        "returned": returned,
        "pipe": pipe,
    }


def _print_shell(figures: dict[str, list[float]]) -> None:
    med = {k: statistics.median(v) for k, v in figures.items()}
    job, terminal = _ms(figures["as_job"]), _ms(figures["in_terminal"])
    print(
        f"dev server line     {job:>10}   in a terminal {terminal:>10}   "
        f"ratio {med['as_job'] / med['in_terminal']:.2f}x   (medians of {SERVER_ROUNDS})"
    )
    echoed, pipe = _ms(figures["echoed"], 3), _ms(figures["pipe"], 3)
    print(
        f"JobInput -> echo    {echoed:>10}   pipe to cat {pipe:>12}   "
        f"ratio {med['echoed'] / med['pipe']:.0f}x   (medians of {INPUT_ROUNDS} / {PIPE_ROUNDS})"
    )
    print(
        f"JobInput returns    {_ms(figures['returned']):>10}   (waits for the output to pause "
        f"{DEFAULT_LIMITS.job_input_quiet_s * 1000:.0f} ms)"
    )


def _ms(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values) * 1000:.{digits}f} ms"


async def _in_host(tmp: Path) -> tuple[list[float], list[float], list[float]]:
    ws = tmp / "ws"
    ws.mkdir()
    async with ToolHost(ws, data_dir=tmp / "data") as host:
        background, plain = await _starts(host)
        latencies = await _latencies(host, ws)
    return background, plain, latencies


def main() -> None:
    # As an MCP client starts a server: a job's output arrives only if jobs are line-buffered.
    os.environ.pop("PYTHONUNBUFFERED", None)
    if sys.argv[1:] == ["shell"]:
        with tempfile.TemporaryDirectory() as tmp:
            _print_shell(asyncio.run(_shell(Path(tmp))))
        print(f"load average        {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return
    limits = DEFAULT_LIMITS
    bound = limits.job_log_head_bytes + 2 * limits.job_log_tail_bytes + READ_BYTES
    with tempfile.TemporaryDirectory() as tmp:
        background, plain, latencies = asyncio.run(_in_host(Path(tmp)))
        anchor = _anchor_eight(Path(tmp), to_files=False)
        to_files = _anchor_eight(Path(tmp), to_files=True)
        eight = _eight_jobs(Path(tmp))
        shell = asyncio.run(_shell(Path(tmp)))
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
    _print_shell(shell)
    print(f"load average        {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child-eight":
        _child_eight(sys.argv[2], sys.argv[3])
    else:
        main()
