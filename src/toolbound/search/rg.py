"""The ripgrep engine: find toolbound's own ``rg``, run it, stream its output, stop it.

``rg`` comes from the ``ripgrep`` wheel installed with toolbound, so it is looked
up beside the running interpreter, never on PATH (a different rg there could
have different flags or a config file). Every run passes an explicit search
path and ``stdin=DEVNULL`` (rg reads stdin when given no path and stdin is not
a terminal), arguments as a list (never a shell), and ``--no-config`` so a
user's ``RIPGREP_CONFIG_PATH`` cannot change the results.

rg keeps its parallel walk: nothing here passes ``--sort``/``--sortr``, which
make it single-threaded. Ordering is the caller's job, on a bounded set.

Pieces:
    rg_binary      the path of the wheel's rg, or TOOL_NOT_FOUND naming the fix
    RgOutcome      how a run ended: stopped by timeout/abort, exit code, skipped paths
    run_rg         spawn, stream stdout to a consumer in a thread, kill when done
    raise_if_fatal map a usage error (bad regex, bad glob, bad type) to a TOOL_ error
    base_args      the flags every search shares (ignore rules, no config, no colour)
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO, Literal

from toolbound.results import ErrorCode, ToolError

Stopped = Literal["timeout", "abort"]

_EXE = "rg.exe" if os.name == "nt" else "rg"

# rg prints per-path problems as "rg: <path>: <reason>" (our search target
# always starts with ".", or is a file given by descriptor); those that are I/O
# errors (an unreadable folder, a file gone mid-walk) end with "(os error N)"
# and mean the path was skipped.
_PATH_ERROR_PREFIX = ("rg: .", "rg: /proc/self/fd/")
_IO_ERROR_MARK = "(os error "
# How much of rg's stderr is kept to quote in an error message.
_STDERR_KEEP_CHARS = 4096
# The size asked for rg's stdout pipe (Linux's default maximum for it).
_PIPE_BYTES = 1024 * 1024


@cache
def _find_rg() -> Path | None:
    candidates = [
        Path(sysconfig.get_path("scripts")) / _EXE,
        Path(sys.executable).parent / _EXE,
        # `pip install --user` puts the wheel's rg in the user scheme's scripts.
        Path(sysconfig.get_path("scripts", f"{os.name}_user")) / _EXE,
    ]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def rg_binary() -> Path:
    """The ``rg`` installed with toolbound (the ``ripgrep`` wheel), never one from PATH."""
    found = _find_rg()
    if found is None:
        raise ToolError(
            ErrorCode.NOT_FOUND,
            "The ripgrep binary (rg) that Grep and Glob run is missing from toolbound's "
            f"environment ({sysconfig.get_path('scripts')}). Reinstall toolbound there "
            "(it depends on the 'ripgrep' wheel), or use Read meanwhile.",
        )
    return found


def base_args(*, explicit_path: bool) -> list[str]:
    """Flags shared by every Grep and Glob run.

    ``--no-require-git``: a .gitignore is honoured even outside a git repo, as an
    agent expects of a fresh project. ``--no-ignore-parent`` for an explicit
    ``path``: the seed's rule that an explicit path stops parent ignore files
    from applying, so a path inside node_modules, dist or a spill dir is searched.
    """
    args = ["--no-config", "--color", "never", "--no-require-git"]
    if explicit_path:
        args.append("--no-ignore-parent")
    return args


@dataclass(frozen=True, slots=True)
class RgOutcome:
    """How one rg run ended.

    ``stopped`` is set when the run was cut by the search timeout or an abort;
    ``skipped_paths`` counts the per-path errors rg reported (unreadable
    folders, files that vanished), which never fail the search.
    """

    stopped: Stopped | None
    returncode: int | None
    skipped_paths: int
    stderr: str
    # rg's message for the first skipped path, to quote in the notice.
    first_skipped: str | None = None


class _StderrTally:
    """Drains rg's stderr to EOF, keeping its head and counting per-path errors."""

    def __init__(self) -> None:
        self.kept: list[str] = []
        self.kept_chars = 0
        self.path_errors = 0
        self.first_path_error: str | None = None

    def drain(self, stream: IO[bytes]) -> None:
        for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.startswith(_PATH_ERROR_PREFIX) and _IO_ERROR_MARK in line:
                self.path_errors += 1
                if self.first_path_error is None:
                    self.first_path_error = line.removeprefix("rg: ")
            if self.kept_chars < _STDERR_KEEP_CHARS:
                self.kept.append(line)
                self.kept_chars += len(line) + 1

    @property
    def text(self) -> str:
        return "\n".join(self.kept)[:_STDERR_KEEP_CHARS]


def _spawn(
    args: Sequence[str | bytes], cwd: Path, pass_fds: Sequence[int]
) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [str(rg_binary()), *args],
        cwd=cwd,
        pass_fds=pass_fds,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    _widen_pipe(proc.stdout.fileno())
    return proc


def _widen_pipe(fd: int) -> None:
    """Let rg write ahead of its reader: a 1 MB pipe instead of Linux's 64 KB.

    rg's walker threads share one stdout; when the pipe is full they all wait
    for the reader, which stats each file it reads. With room for 40,000
    paths, rg walks on while the stats catch up. Best effort: the size is
    capped by /proc/sys/fs/pipe-max-size, and the call is Linux's.
    """
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if set_size is None:
        return
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, set_size, _PIPE_BYTES)


def _reap(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def run_rg(
    args: Sequence[str | bytes],
    *,
    cwd: Path,
    consume: Callable[[IO[bytes]], None],
    deadline: float,
    abort: asyncio.Event,
    grace_s: float,
    pass_fds: Sequence[int] = (),
) -> RgOutcome:
    """Run rg in ``cwd`` and feed its stdout to ``consume`` (in a worker thread).

    ``pass_fds`` are inherited by rg: a ``cwd`` of ``/proc/self/fd/N`` (a folder
    reached by its descriptor, see toolbound.search.scope) needs ``N``.

    A file name may be given as bytes: it reaches rg exactly (not UTF-8, or
    with a newline).

    ``consume`` reads until EOF. rg is killed when ``abort`` is set or at
    ``deadline`` (``time.monotonic()``), or if it has not exited ``grace_s``
    after its output ended; it is always reaped before this returns. rg starts
    no children, so killing it stops the whole search.
    """
    # Spawned on the loop, not in a thread: fork/exec takes a millisecond, and a
    # process started by a thread that a cancellation abandoned would be leaked.
    proc = _spawn(args, cwd, pass_fds)
    assert proc.stdout is not None
    assert proc.stderr is not None
    tally = _StderrTally()
    stderr_task = asyncio.create_task(asyncio.to_thread(tally.drain, proc.stderr))
    consume_task = asyncio.create_task(asyncio.to_thread(consume, proc.stdout))
    abort_task = asyncio.create_task(abort.wait())
    stopped: Stopped | None = None
    try:
        done, _ = await asyncio.wait(
            {consume_task, abort_task},
            timeout=max(0.0, deadline - time.monotonic()),
            return_when=asyncio.FIRST_COMPLETED,
        )
        if consume_task not in done:
            stopped = "abort" if abort_task in done else "timeout"
    finally:
        abort_task.cancel()
        # Stopped, cancelled, or still reading: kill. A consumer that reached EOF
        # leaves rg exiting on its own, so its exit status (2 for a bad regex)
        # is not lost to a kill.
        if stopped is not None or not consume_task.done():
            proc.kill()
        await asyncio.wait({consume_task, stderr_task})
        # Both pipes at EOF: rg has almost always exited, so no thread is
        # needed to wait for it (a thread hop costs ~0.2 ms of a short Glob).
        if proc.poll() is None:
            await asyncio.to_thread(_reap, proc, grace_s)
        proc.stdout.close()
        proc.stderr.close()
    consume_task.result()  # a bug in the consumer surfaces here
    return RgOutcome(
        stopped=stopped,
        returncode=proc.returncode,
        skipped_paths=tally.path_errors,
        stderr=tally.text,
        first_skipped=tally.first_path_error,
    )


def raise_if_fatal(outcome: RgOutcome, *, regex_arg: str, glob_arg: str) -> None:
    """Turn rg's usage errors into TOOL_ errors; per-path errors are not fatal.

    ``regex_arg`` and ``glob_arg`` name the arguments the agent should fix.
    """
    if outcome.returncode != 2 or outcome.stopped is not None:
        return
    lines = [ln for ln in outcome.stderr.splitlines() if not ln.startswith(_PATH_ERROR_PREFIX)]
    if not lines:
        return
    message = "\n".join(lines).removeprefix("rg: ")
    if "unrecognized file type" in message:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"{message}. Use a ripgrep type name (e.g. py, js, ts, rust, go, md) or "
            "filter with `glob` instead.",
        )
    if "glob" in message:
        raise ToolError(
            ErrorCode.INVALID_PATTERN,
            f"Invalid glob: {message}\nFix `{glob_arg}` (e.g. `**/*.py`) and call again.",
        )
    raise ToolError(
        ErrorCode.INVALID_PATTERN,
        f"Invalid regex: {message}\nFix `{regex_arg}` (ripgrep regex syntax: escape literal "
        "( ) [ ] { } . * + ? with a backslash; set multiline to match across lines) "
        "and call again.",
    )
