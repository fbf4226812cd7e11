"""Sandbox benchmark (issues 17, 30): what confinement costs a Bash call.

Each figure is measured side by side with its anchor in one run, in
interleaved batches (the machine may be shared):

- ``true`` through the Bash tool under ``workspace-write`` against ``off``
  (the anchor), two ways (goal: added at most 3 ms):

  - **paced**, as an agent makes its calls: a gap of ``PACED_GAP_S`` before
    each call, long enough for the session's warm spare (``exec.spare``) to be
    ready; the figure is each call's own time.
  - **back to back**, a tight loop: the spare may not be ready, and the call
    must not pay more than a sandbox built for it.

  Beside both, ``workspace-write`` with spares turned off (every call builds
  its sandbox, as before the spares), and back to back with the next spare
  built once the command's sandbox is gone, as before 0.3's overlap
  (``spare.build_beside``). Next to the elapsed time, the CPU time
  per call of the host and all its descendants (``getrusage``: the
  namespace's processes are reaped by its PID 1, which bwrap reaps, which the
  host reaps, so they all count; a spare's CPU lands in the call after the one
  that used it): on a loaded machine every hand-over between processes waits
  for a core, so the elapsed figure grows with the load while the CPU figure
  does not. Back to back also ``read-only`` and no network.
- What an idle spare costs: its processes and their resident memory.
- 1 GiB of stdout under ``workspace-write`` against ``off``: ratio of the
  elapsed times (best of 3 each); goal < 1.1x.
- Where a sandbox built for the call spends its time, one layer down: the
  command's tree alone (``exec.sandbox.spawn`` with spares off, wait,
  teardown; no Bash tool around it), ``off`` against ``workspace-write``.
- For the choice of mechanism, raw spawns of ``bash -c true`` with no tool
  around them: plain ``subprocess.run`` (the anchor), under the same bwrap
  options as ``workspace-write``, and with a Landlock ruleset (writes only
  to the workspace and /tmp) applied in a ``preexec_fn``.
- For a sandbox kept per session (one bwrap, a command forked in it each
  call): inside one long-lived ``workspace-write`` sandbox, ``bash -c true``
  plain (the anchor), in a PID namespace of its own, and with a private
  ``/tmp`` as well, what each command would still pay to keep today's
  per-call namespaces.
- The same, done by a fork server per session (``sandbox_forkserver``): each
  ``true`` in a fresh PID and mount namespace (empty ``/tmp`` and
  ``/dev/shm``, its own ``/proc``, no capability), forked by a server in
  Python and by one in C (compiled here when ``cc`` is found), against a
  plain ``bash -c true`` spawned by this process (the anchor); the CPU counts
  the server and every process it reaped.

Usage: ``python bench/sandbox.py`` prints the table.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import sandbox_forkserver
from toolbound import ToolHost
from toolbound.exec import sandbox, spare
from toolbound.exec.sandbox import SandboxPolicy, bwrap_args
from toolbound.scratch import Scratch

GIB = 1024**3
TRUE_RUNS = 300
BATCH = 25
# Paced: a call after each gap, as an agent makes them (its reply takes far longer).
PACED_RUNS = 120
PACED_BATCH = 10
PACED_GAP_S = 0.08
BIG_RUNS = 3


def _cpu_s() -> float:
    """CPU seconds so far of this process and its reaped descendants."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


# (label, mode, network, spares, beside) of the back-to-back rows; the first is the
# anchor. ``beside``: back to back, the next spare is built as the command starts
# (``spare.build_beside``); without, once its sandbox is gone (as before).
TIGHT = [
    ("off", "off", True, True, True),
    ("workspace-write", "workspace-write", True, True, True),
    ("workspace-write, next after", "workspace-write", True, True, False),
    ("workspace-write, no spare", "workspace-write", True, False, True),
    ("read-only", "read-only", True, True, True),
    ("workspace-write, no network", "workspace-write", False, True, True),
]
PACED = [TIGHT[0], TIGHT[1], TIGHT[3]]


async def _true_calls(
    workspace: Path, data: Path
) -> tuple[dict[str, tuple[float, float]], dict[str, tuple[float, float]], tuple[int, int]]:
    """Median (elapsed ms, CPU ms) per ``true`` call, paced and back to back, for
    each row, batches interleaved; and what an idle spare holds (processes, KiB)."""
    hosts: dict[str, ToolHost] = {}
    for label, mode, network, *_ in TIGHT:
        host = ToolHost(workspace, data, f"bench-{len(hosts)}", sandbox=mode, network=network)
        hosts[label] = await host.__aenter__()
    try:
        for label, _, _, spares, _ in TIGHT:  # warm-up: guard, readers, page cache
            spare.use_spares(spares)
            assert (await hosts[label].call("Bash", {"command": "true"}))["exitCode"] == 0
        spare.use_spares(True)
        idle = await _idle_spare(hosts["workspace-write"])
        paced = await _batches(hosts, PACED, PACED_RUNS, PACED_BATCH, gap_s=PACED_GAP_S)
        tight = await _batches(hosts, TIGHT, TRUE_RUNS, BATCH, gap_s=0.0)
    finally:
        spare.use_spares(True)
        spare.build_beside(True)
        for host in hosts.values():
            await host.aclose()
    return paced, tight, idle


async def _batches(
    hosts: dict[str, ToolHost],
    rows: list[tuple[str, str, bool, bool, bool]],
    runs: int,
    batch: int,
    *,
    gap_s: float,
) -> dict[str, tuple[float, float]]:
    """Median (elapsed ms per call, CPU ms per call) of each row's batches, interleaved;
    with ``gap_s``, a pause before each call, outside its own time."""
    elapsed: dict[str, list[float]] = {row[0]: [] for row in rows}
    cpu: dict[str, list[float]] = {row[0]: [] for row in rows}
    for _ in range(runs // batch):
        for label, _, _, spares, beside in rows:
            spare.use_spares(spares)
            spare.build_beside(beside)
            host = hosts[label]
            times = []
            cpu_started = _cpu_s()
            for _ in range(batch):
                if gap_s:
                    await asyncio.sleep(gap_s)
                started = time.perf_counter()
                await host.call("Bash", {"command": "true"})
                times.append(time.perf_counter() - started)
            elapsed[label].append(
                statistics.median(times) * 1000 if gap_s else sum(times) * 1000 / batch
            )
            cpu[label].append((_cpu_s() - cpu_started) * 1000 / batch)
    spare.use_spares(True)
    spare.build_beside(True)
    return {
        label: (statistics.median(ms), statistics.median(cpu[label]))
        for label, ms in elapsed.items()
    }


async def _idle_spare(host: ToolHost) -> tuple[int, int]:
    """The processes of the session's idle spare and their resident memory (KiB)."""
    await host.call("Bash", {"command": "true"})
    shell = await spare.prepared(host.scratch)
    assert shell is not None, "no spare was built"
    pids = [shell.monitor.pid, shell.keeper_pid, shell.shell_pid]
    return len(pids), sum(map(_rss_kib, pids))


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def _big_output(workspace: Path, data: Path) -> dict[str, float]:
    """Best elapsed seconds for 1 GiB of stdout, off and workspace-write, alternating."""
    best = {"off": float("inf"), "workspace-write": float("inf")}
    for _ in range(BIG_RUNS):
        for mode in best:
            async with ToolHost(workspace, data, f"bench-big-{mode}", sandbox=mode) as host:
                started = time.perf_counter()
                result = await host.call(
                    "Bash", {"command": "head -c 1G /dev/zero", "timeout": 300}
                )
                elapsed = time.perf_counter() - started
            assert result["totals"]["stdout"]["bytes"] == GIB, result
            best[mode] = min(best[mode], elapsed)
    return best


async def _trees(workspace: Path, data: Path) -> dict[str, tuple[float, float]]:
    """Median (elapsed ms, CPU ms) per tree of ``true``: spawn, exit, teardown."""
    scratch = Scratch(data, "bench-trees")
    policies = {mode: SandboxPolicy.create(mode) for mode in ("off", "workspace-write")}

    async def one(policy: SandboxPolicy) -> None:
        tree = await sandbox.spawn("true", cwd=workspace, policy=policy, scratch=scratch)
        assert tree.wait() == 0
        assert not tree.lingering()
        for fd in (tree.stdout_fd, tree.stderr_fd):
            os.close(fd)

    samples: dict[str, list[tuple[float, float]]] = {mode: [] for mode in policies}
    spare.use_spares(False)  # a sandbox built for each call: where its time goes
    for policy in policies.values():
        await one(policy)  # warm-up
    for _ in range(TRUE_RUNS // BATCH):
        for mode, policy in policies.items():
            cpu_started, started = _cpu_s(), time.perf_counter()
            for _ in range(BATCH):
                await one(policy)
            elapsed = (time.perf_counter() - started) * 1000 / BATCH
            samples[mode].append((elapsed, (_cpu_s() - cpu_started) * 1000 / BATCH))
    spare.use_spares(True)
    return {
        mode: (statistics.median(s[0] for s in runs), statistics.median(s[1] for s in runs))
        for mode, runs in samples.items()
    }


# -- raw spawns: the mechanisms themselves -------------------------------------------------

_LANDLOCK_CREATE_RULESET, _LANDLOCK_ADD_RULE, _LANDLOCK_RESTRICT_SELF = 444, 445, 446
_PR_SET_NO_NEW_PRIVS = 38
# Landlock ABI 1 write rights: write_file, remove_dir/file, make_char…make_sym.
_WRITES = (1 << 1) | sum(1 << bit for bit in range(4, 13))


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _landlock_ruleset(writable: list[Path]) -> int:
    """A ruleset fd allowing writes only beneath ``writable``."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = _RulesetAttr(_WRITES)
    fd = libc.syscall(_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    for path in writable:
        dir_fd = os.open(path, os.O_PATH | os.O_DIRECTORY)
        rule = _PathBeneath(_WRITES, dir_fd)
        if libc.syscall(_LANDLOCK_ADD_RULE, fd, 1, ctypes.byref(rule), 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_add_rule")
        os.close(dir_fd)
    return int(fd)


def _raw_spawns(workspace: Path) -> dict[str, tuple[float, float]]:
    """Median (elapsed ms, CPU ms) per raw ``bash -c true`` spawn: plain, under
    bwrap, under Landlock."""
    policy = SandboxPolicy.create("workspace-write")
    assert policy.bwrap is not None, "bench/sandbox.py needs bubblewrap"
    bwrap = [policy.bwrap, *bwrap_args(policy, cwd=workspace, scratch=None), "--"]
    ruleset = _landlock_ruleset([workspace, Path("/tmp")])
    libc = ctypes.CDLL(None, use_errno=True)

    def confine() -> None:
        libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        if libc.syscall(_LANDLOCK_RESTRICT_SELF, ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")

    def run(argv: list[str], **kw: object) -> int:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, cwd=workspace, **kw).returncode  # type: ignore[call-overload, no-any-return]

    landlocked = {"preexec_fn": confine, "pass_fds": (ruleset,)}
    # Each mechanism really confines: a write outside the workspace fails.
    outside = ["touch", "/var/tmp/toolbound-bench-escape"]
    assert run(bwrap + outside, stderr=subprocess.DEVNULL) != 0
    assert run(outside, stderr=subprocess.DEVNULL, **landlocked) != 0
    samples: dict[str, list[float]] = {"plain": [], "bwrap": [], "landlock": []}
    cpu: dict[str, list[float]] = {label: [] for label in samples}
    true = ["bash", "-c", "true"]
    for _ in range(TRUE_RUNS // BATCH):
        for label, argv, kw in (
            ("plain", true, {}),
            ("bwrap", bwrap + true, {}),
            ("landlock", true, landlocked),
        ):
            cpu_started, started = _cpu_s(), time.perf_counter()
            for _ in range(BATCH):
                run(argv, **kw)
            samples[label].append((time.perf_counter() - started) * 1000 / BATCH)
            cpu[label].append((_cpu_s() - cpu_started) * 1000 / BATCH)
    os.close(ruleset)
    return {
        label: (statistics.median(ms), statistics.median(cpu[label]))
        for label, ms in samples.items()
    }


# Run inside one long-lived sandbox: $1 commands each way, elapsed microseconds per
# command printed for each: a plain `bash -c true` (the anchor), in a PID namespace of
# its own (`unshare --pid --fork`), and with a private /tmp too (a mount namespace and
# a tmpfs): what a sandbox kept for a session would still pay per command to keep
# today's per-call PID namespace and private /tmp.
_PER_COMMAND = r"""
n=$1
each() { local t0=$EPOCHREALTIME; for ((i = 0; i < n; i++)); do "$@"; done
  echo $(( (${EPOCHREALTIME/./} - ${t0/./}) / n )); }
each bash -c true
each unshare --pid --fork --kill-child bash -c true
each unshare --pid --fork --kill-child --mount --propagation private \
  bash -c 'mount -t tmpfs -o size=1g tmpfs /tmp && exec bash -c true'
"""


def _kept_sandbox(workspace: Path) -> dict[str, float]:
    """Median microseconds per command inside one long-lived bwrap (see _PER_COMMAND),
    with the capabilities its user namespace gives (as a keeper's commands would have)."""
    policy = SandboxPolicy.create("workspace-write")
    assert policy.bwrap is not None, "bench/sandbox.py needs bubblewrap"
    argv = [
        policy.bwrap,
        *bwrap_args(policy, cwd=workspace, scratch=None),
        "--cap-add",
        "ALL",
        "--",
        "bash",
        "-c",
        _PER_COMMAND,
        "per-command",
        str(BATCH),
    ]
    labels = ("plain bash -c true", "+ own PID namespace", "+ PID ns, private /tmp")
    samples: dict[str, list[float]] = {label: [] for label in labels}
    for _ in range(TRUE_RUNS // BATCH):
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        for label, value in zip(labels, out.split(), strict=True):
            samples[label].append(int(value) / 1000)
    return {label: statistics.median(ms) for label, ms in samples.items()}


def _rows(figures: dict[str, tuple[float, float]], anchor: str) -> None:
    ms0, cpu0 = figures[anchor]
    for label, (ms, cpu_ms) in figures.items():
        print(
            f"  {label:28s} {ms:7.2f} ms   added {ms - ms0:+6.2f} ms"
            f"   CPU {cpu_ms:5.2f} ms, added {cpu_ms - cpu0:+5.2f} ms"
        )


def main() -> None:
    print(f"load average at start: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        workspace, data = Path(tmp) / "ws", Path(tmp) / "data"
        workspace.mkdir()
        paced, tight, idle = asyncio.run(_true_calls(workspace, data))
        print(f"load average after the Bash calls: {os.getloadavg()}")
        trees = asyncio.run(_trees(workspace, data))
        big = asyncio.run(_big_output(workspace, data))
        raw = _raw_spawns(workspace)
        kept = _kept_sandbox(workspace)
        forked = sandbox_forkserver.measure(TRUE_RUNS, BATCH)
    print(
        f"\n{PACED_RUNS} x `true` through the Bash tool, paced ({PACED_GAP_S * 1000:.0f} ms "
        "before each call; median ms per call; goal: added at most 3 ms; anchor: off)"
    )
    _rows(paced, "off")
    print(f"\n{TRUE_RUNS} x `true` through the Bash tool, back to back (median ms per call)")
    _rows(tight, "off")
    print(f"\nan idle spare: {idle[0]} processes, {idle[1] / 1024:.1f} MiB resident in all")
    print(
        f"\nthe tree alone, a sandbox built for each, {TRUE_RUNS} x `true` "
        "(median ms per tree; anchor: off)"
    )
    _rows(trees, "off")
    ratio = big["workspace-write"] / big["off"]
    print("\n1 GiB of stdout (best of 3; goal < 1.1x)")
    print(f"  off {big['off']:.2f} s, workspace-write {big['workspace-write']:.2f} s: {ratio:.3f}x")
    print(f"\nraw spawn of `bash -c true` ({TRUE_RUNS} each, median ms; anchor: plain)")
    for label, (ms, cpu_ms) in raw.items():
        print(
            f"  {label:10s} {ms:7.2f} ms   added {ms - raw['plain'][0]:+6.2f} ms"
            f"   CPU {cpu_ms:5.2f} ms, added {cpu_ms - raw['plain'][1]:+5.2f} ms"
        )
    print(
        f"\ninside one long-lived sandbox, {TRUE_RUNS} commands each (median ms per command;"
        " anchor: plain)"
    )
    for label, ms in kept.items():
        print(f"  {label:28s} {ms:7.2f} ms   added {ms - kept['plain bash -c true']:+6.2f} ms")
    print(
        f"\na fork server per session, {TRUE_RUNS} x `true` each in a fresh namespace "
        "(median ms per command; anchor: plain spawn)"
    )
    _rows(forked, "plain")
    print(f"\nload average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
