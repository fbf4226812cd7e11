"""A background job's output as it is written: line-buffered standard streams.

A program that writes to a pipe buffers its output in blocks (4-64 KB) where
it would flush each line to a terminal: a dev server started as a job shows
nothing for minutes. The runtimes that take a setting get it in the job's
environment: Python ``PYTHONUNBUFFERED=1``; glibc's stdio (C programs, and
everything built on it) through coreutils' ``stdbuf -oL -eL``, whose library
is preloaded with its variables (found once by asking ``stdbuf`` itself, so
its install path is never guessed). Node writes each call through to a pipe
already. A program that buffers on its own (Go's, Rust's, a static binary)
is not reached: ``tty: true`` runs it on a terminal instead.

Pieces:
    line_buffered_env  the variables a job's environment gets (probed once)
    known_env          the same once probed, else None (the job's start then probes it)
    with_preload       the job's LD_PRELOAD: the host's, then stdbuf's library
"""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache

# stdbuf's own variables (coreutils): the preloaded library and its two settings.
_STDBUF_VARS = (b"LD_PRELOAD", b"_STDBUF_O", b"_STDBUF_E")
_PROBE_TIMEOUT_S = 10.0


def known_env() -> dict[bytes, bytes] | None:
    """``line_buffered_env()`` once it has been found (no probe, no waiting), else None."""
    return line_buffered_env() if line_buffered_env.cache_info().currsize else None


@cache
def line_buffered_env() -> dict[bytes, bytes]:
    """The variables that make a job's standard streams line-buffered; blocking the
    first time (runs ``stdbuf`` once, about 2 ms): call it in a worker thread."""
    env = {b"PYTHONUNBUFFERED": b"1"}
    stdbuf, env_path = shutil.which("stdbuf"), shutil.which("env")
    if stdbuf is None or env_path is None:
        return env
    try:
        done = subprocess.run(
            [stdbuf, "-oL", "-eL", env_path, "-0"],
            env={},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_TIMEOUT_S,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return env
    for item in done.stdout.split(b"\0"):
        name, eq, value = item.partition(b"=")
        if eq and name in _STDBUF_VARS:
            env[name] = value
    if b"LD_PRELOAD" not in env:
        # A stdbuf that works otherwise (or not at all): only what Python takes.
        return {b"PYTHONUNBUFFERED": b"1"}
    return env


def with_preload(env: dict[bytes, bytes]) -> dict[bytes, bytes]:
    """``env`` with the host's own LD_PRELOAD kept in front of stdbuf's library."""
    own = os.environb.get(b"LD_PRELOAD")
    library = env.get(b"LD_PRELOAD")
    if not own or library is None:
        return env
    return {**env, b"LD_PRELOAD": own + b":" + library}
