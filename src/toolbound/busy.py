"""How much other work this process is doing: a small Read runs on the event loop only alone.

A thread that runs Python code holds the GIL for up to the switch interval
(5 ms) at a time, and every system call the event loop's thread makes gives
the GIL up and then waits for it back. A Read on the loop makes about ten
(stat, the walk's opens, read, close), so beside a busy thread it waits far
longer than a worker thread would take (a burst of 100 in-process Reads went
from about 900 to 150 calls per second). The work counted here is every tool
call running in any host of the process and every recorder's writer thread
writing a batch; ``tools.read.runs_inline`` asks :func:`alone`.

Pieces:
    begin, end  one piece of work starts, ends (any thread)
    alone       whether at most one (the caller's own) is running
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_running = [0]


def begin() -> None:
    """One piece of work starts."""
    with _lock:
        _running[0] += 1


def end() -> None:
    """One piece of work ends (after its :func:`begin`)."""
    with _lock:
        _running[0] -= 1


def alone() -> bool:
    """Whether at most one piece of work, the caller's own, is running in this process."""
    return _running[0] <= 1
