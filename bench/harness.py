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
and the ratio toolbound / built-in; for the two test runs, whether the
verdict (the failing test's name, "1 passed", both on stderr after 360 KB of
stdout) reached the model at all. Needs ``node`` and ``npm``; the first run
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
from harness.session import FAILING_TEST, SCRIPT, STEP_NAMES, make_project  # noqa: E402


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


def session_texts(harness: harnesses.Harness, root: Path, *, builtin: bool) -> list[str | None]:
    """Each call's result as the model got it (None: never delivered)."""
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
    texts: list[str | None] = [r.text for r in results]
    return texts + [None] * (len(script) - len(texts))


# The verdict of each test run, on stderr after its stdout noise.
VERDICTS = {"run_failing": FAILING_TEST, "run_passing": "1 passed"}


def _size(text: str | None) -> int | None:
    return None if text is None else len(text.encode())


def _cell(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def _seen(name: str, text: str | None) -> str:
    if name not in VERDICTS:
        return ""
    return "yes" if text is not None and VERDICTS[name] in text else "no"


def main() -> None:
    harnesses.installed()
    print("bytes of each tool result as the model received it; anchor: the harness's own tools")
    head = f"{'harness':<12} {'call':<12} {'toolbound':>10} {'built-in':>10} {'ratio':>7}"
    print(f"{head}  verdict seen (toolbound / built-in)")
    for harness in (harnesses.CLAUDE, harnesses.CODEX, harnesses.GEMINI, harnesses.OPENCODE):
        with tempfile.TemporaryDirectory(prefix="bench-harness-") as tmp:
            ours = session_texts(harness, Path(tmp) / "toolbound", builtin=False)
            theirs = session_texts(harness, Path(tmp) / "builtin", builtin=True)
        for name, x, y in zip(STEP_NAMES, ours, theirs, strict=True):
            a, b = _size(x), _size(y)
            ratio = f"{a / b:.2f}" if a is not None and b else "-"
            row = f"{harness.name:<12} {name:<12} {_cell(a):>10} {_cell(b):>10} {ratio:>7}"
            seen = f"  {_seen(name, x)} / {_seen(name, y)}" if name in VERDICTS else ""
            print(row + seen)
        total_a = sum(_size(x) or 0 for x in ours)
        total_b = sum(_size(y) or 0 for y in theirs)
        ratio = f"{total_a / total_b:.2f}" if total_b else "-"
        print(f"{harness.name:<12} {'total':<12} {total_a:>10,} {total_b:>10,} {ratio:>7}")


if __name__ == "__main__":
    main()
