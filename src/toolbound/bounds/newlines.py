"""Counting and finding newlines at memory speed, for paging, capture and truncation.

Read's first visit to a deep offset, the Bash capture and every truncation
count newlines over large buffers. CPython's ``bytes.count`` for one byte is a
plain loop (about 1.2-1.5 GB/s here); numpy's vectorised compare into a reused
flag buffer, then ``count_nonzero``, counts the same span at about 4 GB/s
(measured on 300 MB: 240 ms against 70 ms; ``tail -n +N`` takes 90 ms). So
spans past ``NUMPY_MIN_BYTES`` go through numpy, in ``FLAG_SPAN_BYTES`` steps
so the flags stay in cache and no temporary array is allocated per call.

numpy's import costs 70-170 ms, more than most scans it speeds up: ``preload``
starts it in a background thread when a host starts. Until it is loaded,
every span is counted by ``bytes.count``: the same answer, only slower. Only
a scan long enough to repay the wait waits for it (``use_numpy_for``): the
import holds the GIL for most of its time, so a ``bytes.count`` scan beside
it slows it and crawls itself (measured on 300 MB: 100 MB counted during an
import stretched from about 100 to 160-480 ms), while the scan that waits
then counts at numpy's speed.

Finding the n-th newline halves the range with those counts, so it never
steps through lines in Python. A cut that needs both the count of a window
and, if there are enough, where its n-th newline is (``count_and_find``)
compares the window once and finds the newline in the flags it left: one
probe where the line density puts it, then a few ``find`` steps.

Pieces:
    preload         start loading numpy in the background (once)
    wait_loaded     block until numpy is loaded, bounded (tests, benchmarks)
    use_numpy_for   whether a long scan counts with numpy, waiting for it when that pays
    count_newlines  how many ``\\n`` in ``buf[start:end]``
    nth_newline     index of the n-th ``\\n`` of ``buf[start:end]``, or -1
    nth_newline_from_end  index of the n-th ``\\n`` counted back from ``end``, or -1
    count_and_find  the count of a span and where its n-th ``\\n`` is (from either end)
"""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Any

# Spans shorter than this are counted by bytes.count: numpy's call overhead
# (about 6 us) would outweigh its speed (measured: even at 12 KB).
NUMPY_MIN_BYTES = 16 * 1024
# numpy compares at most this much at a time into a per-thread flag buffer:
# big enough that the calls vanish, small enough to stay in cache.
FLAG_SPAN_BYTES = 256 * 1024
# Below this span, newlines are found one by one with bytes.find (memchr).
_DIRECT_SCAN_BYTES = 512
# A probe that lands within this many newlines of the one sought steps there
# with bytes.find; farther off, the flags are halved instead.
_PROBE_STEPS = 64

Buffer = bytes | bytearray

# A scan at least this long waits for numpy's import when it is under way
# (bytes.count beside it would slow both), and one at least START_IMPORT_BYTES
# long starts it: bytes.count costs about 0.5 ms/MB more than numpy, the
# whole import about 100 ms. The wait is bounded by IMPORT_WAIT_S.
WAIT_IMPORT_BYTES = 64 * 1024 * 1024
START_IMPORT_BYTES = 256 * 1024 * 1024
IMPORT_WAIT_S = 2.0

_np: ModuleType | None = None
_NEWLINE: Any = None  # numpy's uint8 10 once loaded: a typed scalar skips a cast per call
_loaded = threading.Event()
_loading = threading.Lock()
_started = False
_flags = threading.local()


def _load() -> None:
    global _np
    try:
        import numpy

        global _NEWLINE
        _NEWLINE = numpy.uint8(0x0A)
        _np = numpy
    except ImportError:  # pragma: no cover - numpy is a dependency; bytes.count still works
        pass
    finally:
        _loaded.set()


def preload() -> None:
    """Start importing numpy in a daemon thread, once; returns at once."""
    global _started
    with _loading:
        if _started:
            return
        _started = True
    threading.Thread(target=_load, name="toolbound-numpy-import", daemon=True).start()


def wait_loaded(timeout_s: float) -> bool:
    """Start the import if needed and wait for it; True once numpy is in use."""
    preload()
    return _loaded.wait(timeout_s) and _np is not None


def use_numpy_for(span_bytes: int) -> bool:
    """Whether a scan of ``span_bytes`` counts with numpy: yes once it is loaded; else,
    for a scan long enough to repay it, after waiting for its import (bounded)."""
    if _np is not None:
        return True
    with _loading:
        started = _started
    if span_bytes >= START_IMPORT_BYTES or (started and span_bytes >= WAIT_IMPORT_BYTES):
        return wait_loaded(IMPORT_WAIT_S)
    return False


def count_newlines(buf: Buffer, start: int = 0, end: int | None = None) -> int:
    """The number of ``\\n`` bytes in ``buf[start:end]``."""
    stop = len(buf) if end is None else min(end, len(buf))
    np = _np
    if stop - start < NUMPY_MIN_BYTES:
        return buf.count(b"\n", start, stop)
    if np is None:
        preload()
        return buf.count(b"\n", start, stop)
    if buf.find(b"\n", start, stop) < 0:
        # memchr finds "none" at memory speed: one giant line costs no compare pass.
        return 0
    size = stop - start
    if size <= FLAG_SPAN_BYTES:
        return int(np.count_nonzero(_flag(np, buf, start, size)))
    view = np.frombuffer(buf, np.uint8, size, start)
    flags = _flag_buffer(np)
    total = 0
    for at in range(0, size, FLAG_SPAN_BYTES):
        part = view[at : at + FLAG_SPAN_BYTES]
        total += int(np.count_nonzero(np.equal(part, _NEWLINE, out=flags[: len(part)])))
    return total


def _flag_buffer(np: ModuleType) -> Any:
    """This thread's reused flag buffer (``FLAG_SPAN_BYTES`` bools)."""
    flags = getattr(_flags, "buffer", None)
    if flags is None:
        flags = _flags.buffer = np.empty(FLAG_SPAN_BYTES, dtype=np.bool_)
    return flags


def _flag(np: ModuleType, buf: Buffer, start: int, size: int) -> Any:
    """Flags of the newlines in ``buf[start:start + size]`` (at most ``FLAG_SPAN_BYTES``),
    in this thread's flag buffer: valid until the thread's next count."""
    view = np.frombuffer(buf, np.uint8, size, start)
    return np.equal(view, _NEWLINE, out=_flag_buffer(np)[:size])


def count_and_find(
    buf: Buffer, n: int, start: int = 0, end: int | None = None, *, from_end: bool = False
) -> tuple[int, int]:
    """The number of ``\\n`` in ``buf[start:end]`` and the index of its ``n``-th one
    (``n >= 1``; counted back from ``end`` when ``from_end``), -1 if it has fewer."""
    if n < 1:
        raise ValueError("n must be at least 1")
    stop = len(buf) if end is None else min(end, len(buf))
    size = stop - start
    np = _np
    if np is None or not NUMPY_MIN_BYTES <= size <= FLAG_SPAN_BYTES:
        total = count_newlines(buf, start, stop)
        if total < n:
            return total, -1
        find = nth_newline_from_end if from_end else nth_newline
        return total, find(buf, n, start, stop)
    if buf.find(b"\n", start, stop) < 0:
        return 0, -1
    # _flag, inlined: this is every truncation's hot path (a call is 0.2-0.3 us of ~20).
    flags = getattr(_flags, "buffer", None)
    if flags is None:
        flags = _flag_buffer(np)
    flags = np.equal(np.frombuffer(buf, np.uint8, size, start), _NEWLINE, out=flags[:size])
    total = int(np.count_nonzero(flags))
    if total < n:
        return total, -1
    # The n-th from the end is the (total - n + 1)-th from the start.
    return total, start + _nth_flag(np, flags, buf, start, total - n + 1 if from_end else n, total)


def _nth_flag(np: ModuleType, flags: Any, buf: Buffer, start: int, n: int, total: int) -> int:
    """The offset in ``flags`` of its ``n``-th set flag (``1 <= n <= total``), the
    flags being those of ``buf[start:]``."""
    size = len(flags)
    # Probe where the newlines' density puts it, then step, if close, with memchr.
    probe = size * n // total
    below = int(np.count_nonzero(flags[:probe]))
    if below < n <= below + _PROBE_STEPS:
        at = start + probe - 1
        for _ in range(n - below):
            at = buf.find(b"\n", at + 1)
        return at - start
    if n <= below < n + _PROBE_STEPS:
        at = start + probe
        for _ in range(below - n + 1):
            at = buf.rfind(b"\n", start, at)
        return at - start
    # Far off (uneven lines): halve the flags, counting only them.
    lo, hi = (0, probe) if below >= n else (probe, size)
    if below < n:
        n -= below
    while hi - lo > _DIRECT_SCAN_BYTES:
        mid = (lo + hi) // 2
        half = int(np.count_nonzero(flags[lo:mid]))
        if half >= n:
            hi = mid
        else:
            n -= half
            lo = mid
    at = start + lo - 1
    for _ in range(n):
        at = buf.find(b"\n", at + 1, start + hi)
    return at - start


def nth_newline(buf: Buffer, n: int, start: int = 0, end: int | None = None) -> int:
    """Index of the ``n``-th newline (``n >= 1``) in ``buf[start:end]``, or -1."""
    if n < 1:
        raise ValueError("n must be at least 1")
    lo, hi = start, len(buf) if end is None else end
    while hi - lo > _DIRECT_SCAN_BYTES:
        mid = (lo + hi) // 2
        below = count_newlines(buf, lo, mid)
        if below >= n:
            hi = mid
        else:
            n -= below
            lo = mid
    at = lo - 1
    for _ in range(n):
        at = buf.find(b"\n", at + 1, hi)
        if at < 0:
            return -1
    return at


def nth_newline_from_end(buf: Buffer, n: int, start: int = 0, end: int | None = None) -> int:
    """Index of the ``n``-th newline counted back from the end of ``buf[start:end]``, or -1."""
    if n < 1:
        raise ValueError("n must be at least 1")
    lo, hi = start, len(buf) if end is None else end
    while hi - lo > _DIRECT_SCAN_BYTES:
        mid = (lo + hi) // 2
        above = count_newlines(buf, mid, hi)
        if above >= n:
            lo = mid
        else:
            n -= above
            hi = mid
    at = hi
    for _ in range(n):
        at = buf.rfind(b"\n", lo, at)
        if at < 0:
            return -1
    return at
