"""Benchmark: truncate_to on 512 KB of captured shell output.

Anchor: a plain slice of the same bytes to the same byte budget, decoded to
text (``held[:max_bytes].decode("utf-8", "replace")``), the least any
truncation that hands text to a model must do. Both run side by side in one
process, interleaved, so machine noise hits them alike. Goal: ratio under 3x.

Inputs: many lines (80-byte lines), many lines of mixed UTF-8, and one giant
line; both ends (stdout keeps its head, stderr its tail). numpy is loaded
first, as in a host (which starts its import when it starts).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

from toolbound import DEFAULT_LIMITS, truncate_to
from toolbound.bounds import count_lines, newlines

CAPTURE = DEFAULT_LIMITS.capture_max_bytes
BUDGET = DEFAULT_LIMITS.shell_stdout
ROUNDS = 300


def _inputs() -> dict[str, bytes]:
    ascii_lines = b"".join(b"%079d\n" % i for i in range(CAPTURE // 80))
    mixed_line = "build step 中文 ✓ café 😀 ok\n".encode()
    mixed = mixed_line * (CAPTURE // len(mixed_line))
    giant = b"x" * CAPTURE
    return {"80-byte lines": ascii_lines, "mixed UTF-8 lines": mixed, "one giant line": giant}


def _median_us(fn: Callable[[], object], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    return statistics.median(samples) / 1000


def main() -> None:
    assert newlines.wait_loaded(30), "numpy could not be imported"
    print(f"truncate_to vs slice+decode on {CAPTURE // 1024} KB, budget {BUDGET.label}")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average {load} (1, 5, 15 min); medians of interleaved rounds")
    print(f"{'input':<20} {'end':<5} {'truncate_to µs':>15} {'slice µs':>10} {'ratio':>7}")
    inputs = _inputs()
    totals = {id(d): count_lines(d) for d in inputs.values()}
    for name, data in inputs.items():
        for keep in ("head", "tail"):

            def cut(data: bytes = data, keep: str = keep) -> object:
                # The capture knows the stream's totals, as the Bash tool does.
                return truncate_to(
                    data,
                    max_bytes=BUDGET.max_bytes,
                    max_lines=BUDGET.max_lines,
                    keep=keep,  # type: ignore[arg-type]
                    total_bytes=len(data),
                    total_lines=totals[id(data)],
                ).payload

            def anchor(data: bytes = data, keep: str = keep) -> object:
                part = data[: BUDGET.max_bytes] if keep == "head" else data[-BUDGET.max_bytes :]
                return part.decode("utf-8", "replace")

            ours, base = [], []
            for _ in range(5):  # interleave to share the noise
                ours.append(_median_us(cut, ROUNDS // 5))
                base.append(_median_us(anchor, ROUNDS // 5))
            o, b = statistics.median(ours), statistics.median(base)
            print(f"{name:<20} {keep:<5} {o:>15.1f} {b:>10.1f} {o / b:>6.2f}x")


if __name__ == "__main__":
    main()
