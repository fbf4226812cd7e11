"""List through ToolHost.call: a tree to a depth, folders first, ignore rules as Glob's,
the limit and the budget, the refusals, and the model's text (CONTRACT 15)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from support import write
from toolbound import ToolHost, model_text
from toolbound.limits import DEFAULT_LIMITS, Budget


async def listed(host: ToolHost, **args: Any) -> dict[str, Any]:
    return await host.call("List", args)


def tree(ws: Path) -> None:
    write(ws, "src/pkg/deep/z.py", "z")
    write(ws, "src/pkg/y.py", "yy")
    write(ws, "src/a.py", "aaa")
    write(ws, "README.md", "r" * 10)
    write(ws, "docs/guide.md", "g")


async def test_a_folder_is_listed_to_depth_two_folders_first_with_sizes_and_counts(
    host: ToolHost, ws: Path
) -> None:
    tree(ws)
    assert await listed(host) == {
        "path": ".",
        "entries": [
            {"path": "docs", "type": "dir", "entries": 1},
            {"path": "docs/guide.md", "type": "file", "size": 1},
            {"path": "src", "type": "dir", "entries": 2},
            {"path": "src/pkg", "type": "dir", "entries": 2},
            {"path": "src/a.py", "type": "file", "size": 3},
            {"path": "README.md", "type": "file", "size": 10},
        ],
        "count": 6,
        "truncated": False,
    }


async def test_depth_and_path_choose_what_is_listed(host: ToolHost, ws: Path) -> None:
    tree(ws)
    top = await listed(host, depth=1)
    assert [e["path"] for e in top["entries"]] == ["docs", "src", "README.md"]
    deep = await listed(host, path="src", depth=5)
    assert deep["path"] == "src"
    assert [e["path"] for e in deep["entries"]] == [
        "src/pkg",
        "src/pkg/deep",
        "src/pkg/deep/z.py",
        "src/pkg/y.py",
        "src/a.py",
    ]


async def test_ignored_and_hidden_entries_are_left_out_as_glob_leaves_them(
    host: ToolHost, ws: Path
) -> None:
    write(ws, ".gitignore", "build/\n*.log\n")
    write(ws, "build/out.o", "o")
    write(ws, "app.log", "l")
    write(ws, ".cache/c", "c")
    write(ws, "keep.py", "k")
    (ws / "empty").mkdir()
    glob = await host.call("Glob", {"pattern": "**/*"})
    result = await listed(host)
    assert [e["path"] for e in result["entries"]] == ["keep.py"] == glob["matches"]
    # An explicit path inside an ignored folder is listed, as Glob searches it.
    inside = await listed(host, path="build")
    assert [e["path"] for e in inside["entries"]] == ["build/out.o"]


async def test_a_symlink_is_listed_as_a_link(host: ToolHost, ws: Path) -> None:
    write(ws, "a.txt", "a")
    os.symlink("a.txt", ws / "b.txt")
    os.symlink("/", ws / "root")
    result = await listed(host)
    assert result["entries"] == [
        {"path": "a.txt", "type": "file", "size": 1},
        {"path": "b.txt", "type": "link"},
        {"path": "root", "type": "link"},
    ]


async def test_the_limit_cuts_the_listing_and_the_notice_says_how_to_see_more(
    host: ToolHost, ws: Path
) -> None:
    tree(ws)
    result = await listed(host, limit=2)
    assert result["count"] == 2
    assert result["truncated"] is True
    assert [e["path"] for e in result["entries"]] == ["docs", "docs/guide.md"]
    assert result["notice"] == (
        "Showing 2 of 6 entries (folders first); raise `limit` (up to 1000), lower `depth`, "
        "or List a subfolder to see the others."
    )


async def test_the_search_budget_bounds_the_listing(tmp_path: Path, ws: Path) -> None:
    for i in range(300):
        write(ws, f"f{i:03}-{'x' * 40}.txt", "x")
    limits = DEFAULT_LIMITS.replace(search=Budget(max_bytes=4096, max_lines=2000))
    async with ToolHost(ws, data_dir=tmp_path / "data", limits=limits) as host:
        result = await listed(host, limit=1000)
    assert result["truncated"] is True
    assert 0 < result["count"] < 300
    assert "4KB" in result["notice"]
    assert len(model_text("List", result).encode()) < 4096


async def test_a_file_a_missing_path_and_an_outside_path_are_refused(
    host: ToolHost, ws: Path
) -> None:
    write(ws, "a.txt", "a")
    cases = {"a.txt": "TOOL_INVALID_ARGUMENT", "nope": "TOOL_NOT_FOUND", "/": None}
    for path, code in cases.items():
        result = await listed(host, path=path)
        assert "error" in result, result
        if code:
            assert result["error"]["code"] == code
        else:
            assert result["error"]["code"] == "TOOL_PATH_NOT_ALLOWED"
    for bad in ({"depth": 0}, {"depth": 6}, {"limit": 1001}, {"depth": "2"}):
        assert (await listed(host, **bad))["error"]["code"] == "TOOL_INVALID_ARGUMENT"


async def test_the_model_reads_an_indented_tree(host: ToolHost, ws: Path) -> None:
    tree(ws)
    os.symlink("README.md", ws / "readme")
    assert model_text("List", await listed(host)) == (
        "docs/  (1 entry)\n"
        "  guide.md  (1 bytes)\n"
        "src/  (2 entries)\n"
        "  pkg/  (2 entries)\n"
        "  a.py  (3 bytes)\n"
        "README.md  (10 bytes)\n"
        "readme@"
    )
    assert model_text("List", await listed(host, path="src/pkg", depth=1)) == (
        "deep/  (1 entry)\ny.py  (2 bytes)"
    )
    (ws / "void").mkdir()
    assert model_text("List", await listed(host, path="void")) == "No entries listed."
