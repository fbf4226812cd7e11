"""Glob through ToolHost.call: pattern meaning, newest first, limits, ignore rules, paths."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support import run_cli, write
from toolbound import ToolHost
from toolbound.limits import DEFAULT_LIMITS, Limits


async def glob(host: ToolHost, **args: Any) -> dict[str, Any]:
    return await host.call("Glob", args)


def listing(*paths: str) -> dict[str, Any]:
    return {"matches": list(paths), "count": len(paths), "truncated": False}


async def test_matches_come_newest_first(host: ToolHost, ws: Path) -> None:
    write(ws, "a.py", age=30)
    write(ws, "pkg/b.py", age=10)
    write(ws, "pkg/sub/c.py", age=20)
    write(ws, "d.txt", age=1)
    assert await glob(host, pattern="**/*.py") == listing("pkg/b.py", "pkg/sub/c.py", "a.py")


async def test_equal_mtimes_are_ordered_by_path(host: ToolHost, ws: Path) -> None:
    for name in ("b.py", "a/z.py", "a.py"):
        write(ws, name, age=7)
    assert await glob(host, pattern="**/*.py") == listing("a.py", "a/z.py", "b.py")


async def test_a_pattern_with_a_slash_is_matched_from_the_path(host: ToolHost, ws: Path) -> None:
    write(ws, "src/a/x.ts", age=2)
    write(ws, "src/y.ts", age=1)
    write(ws, "lib/src/z.ts", age=3)
    assert await glob(host, pattern="src/**/*.ts") == listing("src/y.ts", "src/a/x.ts")
    assert await glob(host, pattern="./src/**/*.ts") == listing("src/y.ts", "src/a/x.ts")
    absolute = f"{host.workspace}/src/**/*.ts"
    assert await glob(host, pattern=absolute) == listing("src/y.ts", "src/a/x.ts")
    assert await glob(host, pattern="**/*.ts", path="lib") == listing("lib/src/z.ts")


async def test_a_pattern_without_a_slash_matches_names_at_any_depth(
    host: ToolHost, ws: Path
) -> None:
    # ripgrep's meaning (and Grep's `glob`): `*.md` is not only the top level.
    write(ws, "README.md", age=2)
    write(ws, "docs/guide.md", age=1)
    assert await glob(host, pattern="*.md") == listing("docs/guide.md", "README.md")


async def test_the_limit_stops_with_truncated_and_a_notice(host: ToolHost, ws: Path) -> None:
    for i in range(5):
        write(ws, f"f{i}.py", age=i)
    assert await glob(host, pattern="*.py", limit=2) == {
        "matches": ["f0.py", "f1.py"],
        "count": 2,
        "truncated": True,
        "notice": "Showing the 2 newest matching files; more matched: raise `limit` (up to "
        f"{DEFAULT_LIMITS.glob_limit_max}) or narrow `pattern` or `path` to see the others.",
    }


async def test_the_limit_defaults_to_the_limits_glob_default(host: ToolHost, ws: Path) -> None:
    for i in range(DEFAULT_LIMITS.glob_limit_default + 20):
        write(ws, f"f{i:03d}.py", age=i)
    result = await glob(host, pattern="*.py")
    assert result["matches"] == [f"f{i:03d}.py" for i in range(DEFAULT_LIMITS.glob_limit_default)]
    assert result["truncated"] is True


@pytest.mark.parametrize("limit", [0, DEFAULT_LIMITS.glob_limit_max + 1])
async def test_a_limit_outside_the_range_is_an_invalid_argument(host: ToolHost, limit: int) -> None:
    result = await glob(host, pattern="*.py", limit=limit)
    assert result["error"]["code"] == "TOOL_INVALID_ARGUMENT"


async def test_the_result_stays_within_the_byte_budget(host: ToolHost, ws: Path) -> None:
    for i in range(400):
        write(ws, f"{i:03d}_" + "n" * 200 + ".py", age=i)
    result = await glob(host, pattern="*.py", limit=400)
    assert len(json.dumps(result, ensure_ascii=False).encode()) <= DEFAULT_LIMITS.search.max_bytes
    n = result["count"]
    assert 200 < n < 240  # ~210-byte entries in a 48 KB result
    assert result["matches"] == [f"{i:03d}_" + "n" * 200 + ".py" for i in range(n)]
    assert result["truncated"] is True
    assert result["notice"].endswith("The page stopped at the 2000 lines / 48KB result budget.")


async def test_ignored_and_hidden_trees_are_skipped_unless_explicit(
    host: ToolHost, ws: Path
) -> None:
    write(ws, ".gitignore", "node_modules/\n")
    write(ws, "app.js", age=3)
    write(ws, "node_modules/lib/index.js", age=2)
    write(ws, ".cache/tmp.js", age=1)
    assert await glob(host, pattern="**/*.js") == listing("app.js")
    assert await glob(host, pattern="**/*.js", path="node_modules") == listing(
        "node_modules/lib/index.js"
    )
    assert await glob(host, pattern="*.js", path=".cache") == listing(".cache/tmp.js")


async def test_external_matches_are_absolute(tmp_path: Path, ws: Path) -> None:
    ext = tmp_path / "ext"
    write(ext, "lib/a.py")
    async with ToolHost(ws, tmp_path / "data", "s2", allow_external=[ext]) as host:
        result = await glob(host, pattern="**/*.py", path=str(ext))
    assert result == listing(str((ext / "lib/a.py").resolve()))


async def test_path_errors(host: ToolHost, ws: Path, tmp_path: Path) -> None:
    write(ws, "file.py")
    write(tmp_path, "outside/a.py")
    missing = await glob(host, pattern="*.py", path="missing")
    assert missing["error"]["code"] == "TOOL_NOT_FOUND"
    outside = await glob(host, pattern="*.py", path=str(tmp_path / "outside"))
    assert outside["error"]["code"] == "TOOL_PATH_NOT_ALLOWED"
    a_file = await glob(host, pattern="*.py", path="file.py")
    assert a_file == {
        "error": {
            "code": "TOOL_INVALID_ARGUMENT",
            "message": "Glob searches folders and file.py is a file. Give its folder as "
            "`path`, or Read the file.",
        }
    }


async def test_an_invalid_glob_is_an_invalid_pattern(host: ToolHost) -> None:
    assert await glob(host, pattern="src/[a") == {
        "error": {
            "code": "TOOL_INVALID_PATTERN",
            "message": "Invalid glob: error parsing glob 'src/[a': unclosed character class; "
            "missing ']'\nFix `pattern` (e.g. `**/*.py`) and call again.",
        }
    }


async def test_a_walk_past_the_timeout_returns_truncated(tmp_path: Path, ws: Path) -> None:
    write(ws, "a.py")
    async with ToolHost(ws, tmp_path / "data", "s3", limits=Limits(search_timeout_s=0.0)) as h:
        result = await glob(h, pattern="*.py")
    # What it has: rg may or may not have printed the one file before the stop.
    found = result.pop("matches")
    assert found in ([], ["a.py"])
    assert result == {
        "count": len(found),
        "truncated": True,
        "notice": "The search was stopped after 0s and shows only what it found by then, "
        "so newer matches may be missing. Narrow the path to search less.",
    }


def git_repo(ws: Path) -> None:
    """A repo as an agent meets it: .git objects, a gitignored node_modules, dot dirs."""
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    write(ws, ".git/objects/ab/cdef0123", "blob", age=1)
    write(ws, ".gitignore", "node_modules/\n*.log\n.env*\n!.env.example\n", age=9)
    write(ws, "node_modules/lib/index.js", age=1)
    write(ws, ".cache/tmp.js", age=1)
    write(ws, "debug.log", age=1)
    write(ws, ".eslintrc.js", age=1)
    write(ws, ".env", age=1)
    write(ws, ".env.example", age=5)
    write(ws, "src/app.js", age=3)
    write(ws, "src/util/fmt.js", age=4)
    write(ws, "README.md", age=2)


@pytest.mark.parametrize("pattern", ["*", "**", "**/*", "**/**"])
async def test_a_pattern_never_lifts_an_ignore_rule(host: ToolHost, ws: Path, pattern: str) -> None:
    # What plain `rg --files` lists: no .git, no ignored file or folder, no dot
    # folder, no dot file unless an ignore file re-includes it (.env.example).
    git_repo(ws)
    assert await glob(host, pattern=pattern) == listing(
        "README.md", "src/app.js", "src/util/fmt.js", ".env.example"
    )


async def test_narrower_patterns_never_lift_an_ignore_rule_either(host: ToolHost, ws: Path) -> None:
    git_repo(ws)
    assert await glob(host, pattern="src/*") == listing("src/app.js")
    assert await glob(host, pattern="*.js") == listing("src/app.js", "src/util/fmt.js")
    assert await glob(host, pattern="*.log") == listing()
    assert await glob(host, pattern=".env*") == listing(".env.example")
    assert await glob(host, pattern="**/objects/**") == listing()
    assert await glob(host, pattern="!*.js") == listing("README.md", ".env.example")


async def test_a_folder_prefix_pattern_never_lifts_an_ignore_rule(host: ToolHost, ws: Path) -> None:
    # `DIR/**` and `DIR/**/NAME` take a prefix test on what rg printed.
    git_repo(ws)
    write(ws, "src/trace.log", age=1)
    write(ws, "src/.hidden.js", age=1)
    assert await glob(host, pattern="src/**") == listing("src/app.js", "src/util/fmt.js")
    assert await glob(host, pattern="src/**/*.js") == listing("src/app.js", "src/util/fmt.js")
    assert await glob(host, pattern="src/**/*.log") == listing()
    assert await glob(host, pattern="node_modules/**") == listing()
    assert await glob(host, pattern="node_modules/**/*.js") == listing()
    # A literal dot component names the hidden folder (CONTRACT 4, from 0.3).
    assert await glob(host, pattern=".cache/**") == listing(".cache/tmp.js")


async def test_a_pattern_component_with_a_literal_dot_names_hidden_files_and_folders(
    host: ToolHost, ws: Path
) -> None:
    git_repo(ws)
    write(ws, ".github/workflows/ci.yml", age=2)
    write(ws, ".github/workflows/.draft/old.yml", age=1)
    write(ws, ".github/.secret/x.yml", age=1)
    write(ws, "pkg/.eslintrc.json", age=3)
    write(ws, ".eslintrc.json", age=4)
    write(ws, "pkg/.env.example", age=6)
    write(ws, ".git/hooks/.eslintrc.json", age=1)
    write(ws, "node_modules/.eslintrc.json", age=1)
    assert await glob(host, pattern=".github/workflows/*.yml") == listing(
        ".github/workflows/ci.yml"
    )
    assert await glob(host, pattern=".github/**/*.yml") == listing(".github/workflows/ci.yml")
    assert await glob(host, pattern=".eslintrc.json") == listing(
        "pkg/.eslintrc.json", ".eslintrc.json"
    )
    assert await glob(host, pattern="**/.env.example") == listing(
        ".env.example", "pkg/.env.example"
    )
    assert await glob(host, pattern=".git/**") == listing()
    # Grep's glob takes the same rule.
    write(ws, ".github/workflows/ci.yml", "on: push\n", age=2)
    found = await host.call("Grep", {"pattern": "push", "glob": ".github/**/*.yml"})
    assert [m["path"] for m in found["matches"]] == [".github/workflows/ci.yml"]


async def test_only_an_explicit_path_reaches_into_an_ignored_or_hidden_folder(
    host: ToolHost, ws: Path
) -> None:
    git_repo(ws)
    assert await glob(host, pattern="*", path="node_modules") == listing(
        "node_modules/lib/index.js"
    )
    assert await glob(host, pattern="**/*.js", path=".cache") == listing(".cache/tmp.js")


async def test_a_gitignored_pyc_is_not_listed_by_a_pattern_naming_it(
    host: ToolHost, ws: Path
) -> None:
    write(ws, ".gitignore", "*.pyc\n__pycache__/\n")
    write(ws, "a.pyc", age=2)
    write(ws, "__pycache__/b.cpython-311.pyc", age=1)
    write(ws, "keep.py", age=3)
    assert await glob(host, pattern="**/*.pyc") == listing()
    assert await glob(host, pattern="**/*.py*") == listing("keep.py")


async def test_file_names_are_reported_whole(host: ToolHost, ws: Path) -> None:
    write(ws, "two\nlines.txt", age=1)
    write(ws, "tab\tand space.txt", age=2)
    assert await glob(host, pattern="*.txt") == listing("two\nlines.txt", "tab\tand space.txt")


def test_a_glob_that_would_make_a_backtracking_engine_hang_answers(tmp_path: Path) -> None:
    # Eleven stars in one folder name against a 200-character name that fails only at
    # its end: a backtracking regex tries ~200^11 splits; RE2 answers in linear time.
    ws = tmp_path / "ws"
    write(ws, "a" * 200 + "/c.txt")
    write(ws, "a" * 20 + "b/c.txt")
    stars = "*a" * 11
    done = run_cli(
        "call",
        "Glob",
        json.dumps({"pattern": f"**/{stars}*b/c.txt"}),
        "--workspace",
        str(ws),
        cwd=tmp_path,
    )
    assert (done.returncode, json.loads(done.stdout)) == (0, listing("a" * 20 + "b/c.txt"))
