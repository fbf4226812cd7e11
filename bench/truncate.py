"""Benchmark: the cutter (``bounds.cut``, one end kept) on 512 KB of captured shell output.

Anchor: a plain slice of the same bytes to the same byte budget, decoded to
text (``held[:max_bytes].decode("utf-8", "replace")``), the least any
truncation that hands text to a model must do. Both run side by side in one
process, interleaved, so machine noise hits them alike. Goal: ratio under 3x.

Inputs: many lines (80-byte lines), short lines (8 bytes: the line limit
fires first), many lines of mixed UTF-8, and one giant line; both ends (stdout
keeps its head, stderr its tail). The last rows cut the 80-byte lines as
the Bash tool does, naming a spill file (``with_spill``): the spill sentence's
em dash makes the whole payload a 2-byte-per-char string, a cost the other
rows do not pay. Each side is timed in batches by wall clock and by this
thread's CPU time: on a shared machine the CPU column is the steadier one.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

from toolbound import DEFAULT_LIMITS, cut
from toolbound.bounds import count_lines

CAPTURE = DEFAULT_LIMITS.capture_max_bytes
BUDGET = DEFAULT_LIMITS.shell_stdout
ROUNDS = 300


def _inputs() -> dict[str, bytes]:
    ascii_lines = b"".join(b"%079d\n" % i for i in range(CAPTURE // 80))
    short_lines = b"".join(b"%07d\n" % i for i in range(CAPTURE // 8))
    mixed_line = "build step 中文 ✓ café 😀 ok\n".encode()
    mixed = mixed_line * (CAPTURE // len(mixed_line))
    giant = b"x" * CAPTURE
    return {
        "80-byte lines": ascii_lines,
        "8-byte lines": short_lines,
        "mixed UTF-8 lines": mixed,
        "one giant line": giant,
    }


BATCH = 10
SPILL = "/tmp/toolbound-scratch/s1/tool-output/stdout-1700000000000-0.log"


def _batches_us(fn: Callable[[], object], rounds: int) -> tuple[list[float], list[float]]:
    """Per-call wall and thread-CPU microseconds of ``rounds // BATCH`` batches."""
    wall, cpu = [], []
    for _ in range(rounds // BATCH):
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        for _ in range(BATCH):
            fn()
        cpu.append((time.thread_time_ns() - c0) / BATCH / 1000)
        wall.append((time.perf_counter_ns() - t0) / BATCH / 1000)
    return wall, cpu


def main() -> None:
    print(f"cut vs slice+decode on {CAPTURE // 1024} KB, budget {BUDGET.label}")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average {load} (1, 5, 15 min); medians of interleaved rounds")
    print(
        f"{'input':<20} {'end':<5} {'cut µs':>15} {'slice µs':>10} {'ratio':>7}"
        f" {'CPU µs':>8} {'slice CPU':>10} {'CPU ratio':>10}"
    )
    inputs = _inputs()
    totals = {id(d): count_lines(d) for d in inputs.values()}
    rows = [(name, data, None) for name, data in inputs.items()]
    rows.append(("80-byte, spilled", inputs["80-byte lines"], SPILL))
    for name, data, spill in rows:
        for keep in ("head", "tail"):

            def ours_cut(data: bytes = data, keep: str = keep, spill: str | None = spill) -> object:
                # The capture knows the stream's totals, as the Bash tool does.
                shaped = cut(
                    data,
                    BUDGET,
                    keep=keep,  # type: ignore[call-overload]
                    total_bytes=len(data),
                    total_lines=totals[id(data)],
                )
                return (shaped if spill is None else shaped.with_spill(spill)).payload

            def anchor(data: bytes = data, keep: str = keep) -> object:
                part = data[: BUDGET.max_bytes] if keep == "head" else data[-BUDGET.max_bytes :]
                return part.decode("utf-8", "replace")

            ours: tuple[list[float], list[float]] = ([], [])
            base: tuple[list[float], list[float]] = ([], [])
            for _ in range(5):  # interleave to share the noise
                for side, fn in ((ours, ours_cut), (base, anchor)):
                    wall, cpu = _batches_us(fn, ROUNDS // 5)
                    side[0].extend(wall)
                    side[1].extend(cpu)
            o, b = statistics.median(ours[0]), statistics.median(base[0])
            oc, bc = statistics.median(ours[1]), statistics.median(base[1])
            print(
                f"{name:<20} {keep:<5} {o:>15.1f} {b:>10.1f} {o / b:>6.2f}x"
                f" {oc:>8.1f} {bc:>10.1f} {oc / bc:>9.2f}x"
            )


if __name__ == "__main__":
    main()
