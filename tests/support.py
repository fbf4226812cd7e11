"""Helpers shared by test modules (importable: ``tests`` is on pytest's pythonpath).

Pieces:
    write           a file with content and, optionally, a fixed mtime
    wait_for        poll a condition of this process until it holds, bounded
    wait_for_async  the same inside a test's event loop
    run_cli         ``toolbound ARGS…`` in a fresh process
    run_main        ``toolbound.cli.main(ARGS)`` in this process, answered as run_cli answers
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

T = TypeVar("T")

# The interpreter a sandboxed command can run: the venv's own base, resolved, since a
# venv (a clean clone's, say) under /tmp is hidden by the sandbox's private /tmp.
# Only for stdlib scripts: it has none of the venv's packages.
SANDBOX_PYTHON = os.path.realpath(sys.executable)

T0 = 1_700_000_000  # a fixed epoch second; files get T0 - age as their mtime

# How long a test waits for something that should happen at once: generous,
# for a loaded 2-core machine; the poll interval keeps a wait that holds cheap.
WAIT_S = 15.0
POLL_S = 0.01


def write(root: Path, rel: str, data: str | bytes = "x\n", *, age: int | None = None) -> Path:
    """Write a file; ``age`` n sets its mtime to T0 - n (bigger is older)."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    if age is not None:
        os.utime(path, (T0 - age, T0 - age))
    return path


def _timed_out(what: str, timeout_s: float) -> AssertionError:
    return AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def wait_for(
    condition: Callable[[], T],
    what: str,
    *,
    timeout_s: float = WAIT_S,
    poll_s: float = POLL_S,
) -> T:
    """``condition()``'s first truthy value; AssertionError naming ``what`` after ``timeout_s``.

    For a condition no event announces (a process gone, a file written by a
    child): where there is an event, wait for the event instead.
    """
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        if time.monotonic() >= deadline:
            raise _timed_out(what, timeout_s)
        time.sleep(poll_s)
    return value


async def wait_for_async(
    condition: Callable[[], T],
    what: str,
    *,
    timeout_s: float = WAIT_S,
    poll_s: float = POLL_S,
) -> T:
    """``wait_for`` inside an event loop: the loop runs the call being waited on
    between polls (``poll_s=0`` yields to it once per poll)."""
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        if time.monotonic() >= deadline:
            raise _timed_out(what, timeout_s)
        await asyncio.sleep(poll_s)
    return value


ZERO_COUNTS = {"bytes": 0, "lines": 0}


def bash_result(**fields: Any) -> dict[str, Any]:
    """A BashResult dict of a clean exit with no output, ``fields`` replacing its keys."""
    result: dict[str, Any] = {
        "stdout": "",
        "stderr": "",
        "exitCode": 0,
        "signal": None,
        "timedOut": False,
        "aborted": False,
        "truncated": False,
        "spill": {},
        "omitted": {"stdout": ZERO_COUNTS, "stderr": ZERO_COUNTS},
        "totals": {"stdout": ZERO_COUNTS, "stderr": ZERO_COUNTS},
        "durationMs": 5,
    }
    return {**result, **fields}


def run_cli(
    *args: str, cwd: Path, timeout_s: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``toolbound ARGS…`` in a fresh process (``env``: its whole environment), its
    output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "toolbound", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
        env=env,
    )


def run_main(
    capsys: pytest.CaptureFixture[str],
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``toolbound.cli.main(ARGS)`` in this process (in ``cwd``, with ``env`` set over
    this process's environment), answered as ``run_cli`` answers: its exit status
    and what it wrote to stdout and stderr.

    For a test of what the command does, where a fresh process adds nothing but
    its start-up; exit codes of the real process, streaming and signals stay
    with ``run_cli``.
    """
    from toolbound.cli import main

    capsys.readouterr()  # what the test printed before is not the command's
    saved_cwd, saved_env = os.getcwd(), dict(os.environ)
    try:
        if cwd is not None:
            os.chdir(cwd)
        os.environ.update(env or {})
        try:
            code = main(list(args))
        except SystemExit as exit_:  # argparse's usage errors
            code = exit_.code if isinstance(exit_.code, int) else 2
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    out = capsys.readouterr()
    return subprocess.CompletedProcess(["toolbound", *args], code, out.out, out.err)


def alive(pid: int) -> bool:
    """True while ``pid`` exists (a zombie too: it is gone once reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def transcript_of_800_tokens(data_dir: Path, session_id: str) -> None:
    """A session whose stored transcript the default estimator counts as 800 tokens."""
    from toolbound.store import SessionStore

    with SessionStore(str(data_dir), scratch_dir=data_dir) as store:
        session = store.session(session_id)
        session.append({"role": "user", "content": "Fix the failing test."})  # 6 tokens
        session.append({"role": "assistant", "content": "x" * 3176})  # 794 tokens
