"""Benchmark: the capture's CPU per GiB past its ceiling, stdout's head and stderr's tail ring.

What the Bash tool's reader does with each read once a stream is past the
capture ceiling, in one process and on this thread's CPU clock (the machine
is shared; wall time there is noise): a read lands in the room the capture
offers (``reserve``), then ``commit`` counts it. A read is stood in for by
copying the next 256 KB of 70-byte lines into that room.

Anchor: the same copies into one buffer, each span counted with
``count_newlines``: the least any exact reader does. Goal: both captures
within 1.2x of it (a tail ring that copied every read cost 2x here).
Head, tail and anchor alternate; medians of the rounds are compared.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

from toolbound import DEFAULT_LIMITS
from toolbound.bounds.newlines import count_newlines
from toolbound.exec.capture import HeadCapture, TailCapture
from toolbound.exec.reader import DRAIN_READ_BYTES

GIB = 1024**3
ROUNDS = 5
LINE = b"a line of build output from a compiler, padded out to 70 bytes".ljust(69) + b"\n"
SOURCE = memoryview(LINE * (3 * DRAIN_READ_BYTES // len(LINE)))
WRAP = len(SOURCE) - DRAIN_READ_BYTES


def _anchor() -> int:
    buf = bytearray(DRAIN_READ_BYTES)
    lines = at = 0
    for _ in range(GIB // DRAIN_READ_BYTES):
        buf[:] = SOURCE[at : at + DRAIN_READ_BYTES]
        at = (at + DRAIN_READ_BYTES) % WRAP
        lines += count_newlines(buf)
    return lines


def _through(capture: HeadCapture | TailCapture) -> int:
    done = at = 0
    while done < GIB:
        room = capture.reserve(DRAIN_READ_BYTES)
        n = len(room)
        room[:] = SOURCE[at : at + n]
        at = (at + n) % WRAP
        capture.commit(n)
        done += n
    return capture.finish().total_bytes


def _head() -> int:
    limits = DEFAULT_LIMITS
    capture = HeadCapture(max_bytes=limits.capture_max_bytes, max_lines=limits.capture_max_lines)
    # Fill it to the ceiling first, as the live part of a stream does.
    capture.feed(bytes(SOURCE[: limits.capture_max_bytes + 1]))
    return _through(capture)


def _tail() -> int:
    limits = DEFAULT_LIMITS
    return _through(
        TailCapture(max_bytes=limits.capture_max_bytes, max_lines=limits.capture_max_lines)
    )


def _cpu_s(fn: Callable[[], int]) -> float:
    started = time.thread_time()
    fn()
    return time.thread_time() - started


def main() -> None:
    runs: dict[str, list[float]] = {"anchor": [], "head (stdout)": [], "tail ring (stderr)": []}
    for _ in range(ROUNDS):
        for name, fn in zip(runs, (_anchor, _head, _tail), strict=True):
            runs[name].append(_cpu_s(fn))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"capture past its ceiling, CPU s per GiB of 70-byte lines; load average {load}")
    anchor = statistics.median(runs["anchor"])
    for name, samples in runs.items():
        cpu = statistics.median(samples)
        print(f"{name:<20} {cpu:6.3f} s  {cpu / anchor:5.2f}x (goal <= 1.2x)")


if __name__ == "__main__":
    main()
