"""The README's library example runs as written, with and without the file it reads."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).parent.parent / "README.md"


def library_example() -> str:
    """The first Python block of the README's "Library" section."""
    section = README.read_text().split("\n## Library\n", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found, "the Library section has no Python example"
    return found.group(1)


def run_example(workspace: Path, data_dir: Path) -> subprocess.CompletedProcess[str]:
    script = workspace.parent / "example.py"
    script.write_text(library_example())
    # Not make's own variables: under `make test` they would make `make` print its directory.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    env["TOOLBOUND_DATA_DIR"] = str(data_dir)
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def result_event(stdout: str) -> str:
    """The last printed line: the stream's result event (printed as a dict)."""
    return stdout.splitlines()[-1]


def test_the_library_example_runs_when_the_file_is_missing(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    done = run_example(workspace, tmp_path / "data")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("TOOL_NOT_FOUND ")
    assert "'type': 'result'" in result_event(done.stdout)


def test_the_library_example_reads_the_file_and_runs_make(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("print('app')\n")
    (workspace / "Makefile").write_text("all:\n\t@echo built\n")
    done = run_example(workspace, tmp_path / "data")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("print('app')\n False None\n")
    first_event = done.stdout.splitlines()[2]
    assert "'stream': 'stdout'" in first_event
    assert "'data': 'built\\n'" in first_event
    assert "'exitCode': 0" in result_event(done.stdout)
