"""Benchmark: bytes each harness's model receives per tool call, toolbound against built-ins.

Anchor: the harness's own built-in tools, running the same scripted session
(the bug-fixing session of ``tests/harness/session.py``: Glob, Grep, a whole
file Read, the failing noisy test run, Edit, the passing run, a missing file,
a command that outlives its timeout) in the same project. Side by side in one
run, for each of Claude Code, Codex CLI, Gemini CLI and opencode (the pinned
npm packages of ``tests/harness``):

1. the harness with ``toolbound serve --stdio`` (its defaults) as its only
   tools, the session's calls in toolbound's names;
2. the harness with only its own tools, the same steps in their names and
   arguments (Codex has no file tools: its shell runs ``rg``, ``cat``, ``sed``).

For each call: the bytes of the tool result the harness put in its next
request to the model (what the model reads, the harness's framing included),
and the ratio toolbound / built-in. Needs ``node`` and ``npm``; the first run
installs the harnesses (``make harness`` does too).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

# This script is bench/harness.py: its own folder must not shadow tests/harness.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent / "tests"))

from harness import harnesses  # noqa: E402
from harness.model_server import ModelServer, Step  # noqa: E402
from harness.session import SCRIPT, STEP_NAMES, make_project  # noqa: E402


def builtin_script(harness: str, ws: Path) -> list[Step]:
    """The session's steps in the harness's own tools."""
    calc, missing = str(ws / "calc.py"), str(ws / "missing_module.py")
    if harness == "claude-code":
        return [
            Step("Glob", {"pattern": "**/*.py"}),
            Step(
                "Grep", {"pattern": "def add", "glob": "*.py", "output_mode": "content", "-n": True}
            ),
            Step("Read", {"file_path": calc}),
            Step("Bash", {"command": "sh run_tests.sh", "description": "Run the tests"}),
            Step(
                "Edit",
                {"file_path": calc, "old_string": "return a - b", "new_string": "return a + b"},
            ),
            Step("Bash", {"command": "sh run_tests.sh", "description": "Run the tests"}),
            Step("Read", {"file_path": missing}),
            Step("Bash", {"command": "sleep 30", "timeout": 1000, "description": "Wait"}),
        ]
    if harness == "codex":
        return [
            Step("exec_command", {"cmd": cmd})
            for cmd in (
                "rg --files -g '*.py'",
                "rg -n 'def add' -g '*.py'",
                "cat calc.py",
                "sh run_tests.sh",
                "sed -i 's/return a - b/return a + b/' calc.py",
                "sh run_tests.sh",
                "cat missing_module.py",
                "timeout 1 sleep 30",
            )
        ]
    if harness == "gemini-cli":
        return [
            Step("glob", {"pattern": "**/*.py"}),
            Step("grep_search", {"pattern": "def add"}),
            Step("read_file", {"file_path": calc}),
            Step(
                "run_shell_command", {"command": "sh run_tests.sh", "description": "Run the tests"}
            ),
            Step(
                "replace",
                {
                    "file_path": calc,
                    "old_string": "return a - b",
                    "new_string": "return a + b",
                    "instruction": "Make add return the sum.",
                },
            ),
            Step(
                "run_shell_command", {"command": "sh run_tests.sh", "description": "Run the tests"}
            ),
            Step("read_file", {"file_path": missing}),
            Step("run_shell_command", {"command": "timeout 1 sleep 30", "description": "Wait"}),
        ]
    return [
        Step("glob", {"pattern": "**/*.py"}),
        Step("grep", {"pattern": "def add", "include": "*.py"}),
        Step("read", {"filePath": calc}),
        Step("bash", {"command": "sh run_tests.sh", "description": "Run the tests"}),
        Step("edit", {"filePath": calc, "oldString": "return a - b", "newString": "return a + b"}),
        Step("bash", {"command": "sh run_tests.sh", "description": "Run the tests"}),
        Step("read", {"filePath": missing}),
        Step("bash", {"command": "sleep 30", "timeout": 1000, "description": "Wait"}),
    ]


def session_bytes(harness: harnesses.Harness, root: Path, *, builtin: bool) -> list[int | None]:
    """Bytes of each call's result in the requests the model got (None: never delivered)."""
    ws, data = root / "project", root / "data"
    ws.mkdir(parents=True)
    make_project(ws)
    if builtin:
        script, servers = builtin_script(harness.name, ws), []
    else:
        env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
        args = (
            "-m",
            "toolbound",
            "serve",
            "--stdio",
            "--workspace",
            str(ws),
            "--data-dir",
            str(data),
        )
        script = SCRIPT
        servers = [harnesses.McpEntry("toolbound", command=sys.executable, args=args, env=env)]
    with ModelServer(script) as model:
        done = harnesses.run(harness, model.url, servers, ws, root / "home", builtin=builtin)
        results = model.results()
    if done.returncode != 0:
        print(
            f"  ({harness.name}, builtin={builtin}) exited {done.returncode}: {done.stderr[-300:]}"
        )
    sizes: list[int | None] = [len(r.text.encode()) for r in results]
    return sizes + [None] * (len(script) - len(sizes))


def _cell(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def main() -> None:
    harnesses.installed()
    print("bytes of each tool result as the model received it; anchor: the harness's own tools")
    print(f"{'harness':<12} {'call':<12} {'toolbound':>10} {'built-in':>10} {'ratio':>7}")
    for harness in (harnesses.CLAUDE, harnesses.CODEX, harnesses.GEMINI, harnesses.OPENCODE):
        with tempfile.TemporaryDirectory(prefix="bench-harness-") as tmp:
            ours = session_bytes(harness, Path(tmp) / "toolbound", builtin=False)
            theirs = session_bytes(harness, Path(tmp) / "builtin", builtin=True)
        for name, a, b in zip(STEP_NAMES, ours, theirs, strict=True):
            ratio = f"{a / b:.2f}" if a is not None and b else "-"
            print(f"{harness.name:<12} {name:<12} {_cell(a):>10} {_cell(b):>10} {ratio:>7}")
        total_a = sum(n or 0 for n in ours)
        total_b = sum(n or 0 for n in theirs)
        ratio = f"{total_a / total_b:.2f}" if total_b else "-"
        print(f"{harness.name:<12} {'total':<12} {total_a:>10,} {total_b:>10,} {ratio:>7}")


if __name__ == "__main__":
    main()
