"""``toolbound call`` imports what its one tool needs, and nothing of the others.

Each call runs in a fresh interpreter (the CLI's ``main`` in-process there), and
the modules it loaded are listed after it returns: a Read loads no other tool,
no Edit/Write machinery, no background-job machinery, neither PostgreSQL nor
the web view nor the MCP SDK, and no media decoder or RE2 for a text file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from toolbound.tools.registry import SPECS, ToolSpec

_CHILD = """
import json, sys
from toolbound.cli import main
code = main(["call", sys.argv[1], sys.argv[2], "--data-dir", "data"])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""

# Never needed by a call of a tool that is not theirs, nor by a store in a data dir.
_FOREIGN = (
    "psycopg",
    "toolbound.store.postgres",
    "toolbound.web",
    "mcp",
    "PIL",
    "pypdf",
    "toolbound.edit.core",
    "toolbound.edit.diff",
    "toolbound.edit.atomic",
    "toolbound.edit.patch",
    "toolbound.jobs.job",
    "toolbound.jobs.log",
    "toolbound.jobs.emitter",
)


def _loaded(workspace: Path, tool: str, args: dict[str, object]) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, tool, json.dumps(args)],
        capture_output=True,
        text=True,
        cwd=workspace,
        timeout=60,
        check=False,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, done.stdout
    return set(report["modules"])


def _models(spec: ToolSpec) -> set[str]:
    """The modules of a tool's argument and result models."""
    return {ref.partition(":")[0] for ref in (spec.args_model, *spec.result_models)}


def _foreign(loaded: set[str], tool: str, also: tuple[str, ...] = ()) -> list[str]:
    """The loaded modules (and their submodules) that ``tool``'s call has no use for:
    the other tools' runners and models among them."""
    mine = next(spec for spec in SPECS if spec.name == tool)
    others = {spec.module for spec in SPECS if spec is not mine}
    others |= {m for spec in SPECS for m in _models(spec)} - _models(mine)
    unwanted = {*_FOREIGN, *others, *also}
    return sorted(m for m in loaded if any(m == u or m.startswith(f"{u}.") for u in unwanted))


@pytest.mark.parametrize(
    ("tool", "args", "also"),
    [
        # A text file's Read needs no regex engine, nor anyio (for waiting out a stop).
        ("Read", {"path": "a.txt"}, ("re2", "toolbound.linear_regex", "anyio")),
        ("Grep", {"pattern": "hello"}, ()),
        ("Glob", {"pattern": "*.txt"}, ()),
        ("Bash", {"command": "echo hello"}, ("re2", "toolbound.linear_regex")),
    ],
)
def test_a_call_imports_its_own_tool_and_none_of_the_others(
    tmp_path: Path, tool: str, args: dict[str, object], also: tuple[str, ...]
) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    loaded = _loaded(tmp_path, tool, args)
    assert next(spec.module for spec in SPECS if spec.name == tool) in loaded
    assert _foreign(loaded, tool, also) == []


def test_the_check_sees_what_a_call_of_another_tool_imports(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    # Write after Read in one session: the Edit/Write machinery is loaded, and seen.
    loaded = _loaded(tmp_path, "Write", {"path": "b.txt", "content": "new\n"})
    assert "toolbound.edit.core" in _foreign(loaded, "Read")
