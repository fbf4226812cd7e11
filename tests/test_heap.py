"""A server freezes what its start-up made, so full collections skip it (``toolbound.heap``).

Real ``toolbound serve`` processes, over stdio and HTTP: each reports, as it
exits, how many objects its collector holds frozen. A program that embeds the
library (or ``toolbound call``) keeps its collector as it was.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from support import WAIT_S

# Start-up alone makes tens of thousands of objects (imports, the tools' models).
STARTUP_OBJECTS = 20_000

REPORT = (
    "import atexit, gc, sys\n"
    "atexit.register(lambda: print(f'frozen {gc.get_freeze_count()}', file=sys.stderr))\n"
    "from toolbound.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


# Over HTTP the server dies of SIGTERM (no atexit): it reports when told on its stdin,
# on its stdout (its stderr carries the announcement, written meanwhile).
REPORT_WHEN_ASKED = (
    "import gc, sys, threading\n"
    "def report():\n"
    "    sys.stdin.readline()\n"
    "    print(f'frozen {gc.get_freeze_count()}', flush=True)\n"
    "threading.Thread(target=report, daemon=True).start()\n"
    "from toolbound.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def frozen_in(stderr: str) -> int:
    found = re.search(r"^frozen (\d+)$", stderr, re.MULTILINE)
    assert found, stderr
    return int(found.group(1))


def test_a_stdio_server_freezes_its_start_up_objects(tmp_path: Path) -> None:
    argv = ["serve", "--stdio", "--workspace", str(tmp_path), "--data-dir", str(tmp_path / "d")]
    done = subprocess.run(
        [sys.executable, "-c", REPORT, *argv],
        stdin=subprocess.DEVNULL,  # the client leaves at once: the server ends
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=True,
    )
    assert frozen_in(done.stderr) > STARTUP_OBJECTS


def test_an_http_server_freezes_its_start_up_objects_before_it_serves(tmp_path: Path) -> None:
    argv = ["serve", "--http", "127.0.0.1:0", "--workspace", str(tmp_path)]
    argv += ["--data-dir", str(tmp_path / "d")]
    proc = subprocess.Popen(
        [sys.executable, "-c", REPORT_WHEN_ASKED, *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    assert proc.stderr is not None
    try:
        said = ""
        while "MCP server on http://" not in said:
            line = proc.stderr.readline()
            assert line, said  # it ended before announcing itself
            said += line
        proc.stdin.write("report\n")
        proc.stdin.flush()
        reported = proc.stdout.readline()
    finally:
        proc.terminate()
        proc.communicate(timeout=WAIT_S)
    assert frozen_in(reported) > STARTUP_OBJECTS


def test_a_call_from_the_command_line_leaves_the_collector_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    argv = ["call", "Read", '{"path": "a.txt"}', "--data-dir", str(tmp_path / "d")]
    done = subprocess.run(
        [sys.executable, "-c", REPORT, *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=True,
    )
    assert '"content": "hello\\n"' in done.stdout
    assert frozen_in(done.stderr) == 0
