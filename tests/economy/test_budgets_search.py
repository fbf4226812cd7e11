"""Economy Grep and Glob: compact text, and pages that shrink as the context fills
while the next page (or a narrower pattern) brings back what they left out."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from support import run_main, transcript_of_800_tokens, write
from toolbound import ToolHost, model_text
from toolbound.limits import DEFAULT_LIMITS

# The shrinking is tested from the exact profile's page (48 KB / 2000 lines);
# the economy's own smaller page has its test below.
WIDE_PAGE = DEFAULT_LIMITS.replace(
    economy=dataclasses.replace(DEFAULT_LIMITS.economy, search=DEFAULT_LIMITS.search)
)

CALL_TIMEOUT_S = 60


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    # 300 files, f000 the newest: each holds one match.
    for i in range(300):
        write(root, f"src/f{i:03d}.txt", f"header\nneedle {i}\n", age=i)
    return root


async def call(host: ToolHost, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return await asyncio.wait_for(host.call(tool, args), CALL_TIMEOUT_S)


def economy_host(tmp_path: Path, ws: Path) -> ToolHost:
    return ToolHost(
        workspace=ws,
        data_dir=tmp_path / "data",
        profile="economy",
        context_window=200_000,
        limits=WIDE_PAGE,
    )


async def test_the_economy_grep_page_is_100_entries_and_the_next_page_brings_the_rest(
    tmp_path: Path, ws: Path
) -> None:
    args = {"pattern": "needle", "outputMode": "filesWithMatches"}
    async with ToolHost(workspace=ws, data_dir=tmp_path / "data", profile="economy") as host:
        first = await call(host, "Grep", args)
        later = await call(host, "Grep", {**args, "offset": 100})
    assert first["files"] == [f"src/f{i:03d}.txt" for i in range(100)]
    assert first["notice"] == (
        "Showing entries 1-100; more exist. Call again with offset 100 for the next page, "
        "or narrow `path`, `glob` or `pattern`."
    )
    assert later["files"][:2] == ["src/f100.txt", "src/f101.txt"]


async def test_a_grep_page_shrinks_at_80_percent_and_the_next_page_brings_the_rest(
    tmp_path: Path, ws: Path
) -> None:
    async with economy_host(tmp_path, ws) as host:
        host.context_used(160_000)
        first = await call(host, "Grep", {"pattern": "needle", "outputMode": "filesWithMatches"})
        later = await call(
            host, "Grep", {"pattern": "needle", "outputMode": "filesWithMatches", "offset": 100}
        )
    assert first["files"] == [f"src/f{i:03d}.txt" for i in range(100)]
    assert first["notice"] == (
        "Showing entries 1-100; more exist. Call again with offset 100 for the next page, "
        "or narrow `path`, `glob` or `pattern`. "
        "Grep budget shrunk to 100 lines / 12KB (from 200 lines / 48KB): the context is 80% full."
    )
    assert later["files"][:2] == ["src/f100.txt", "src/f101.txt"]


async def test_an_unshrunken_grep_page_from_the_exact_budget_is_the_exact_profiles_page(
    tmp_path: Path, ws: Path
) -> None:
    args = {"pattern": "needle", "outputMode": "filesWithMatches"}
    async with economy_host(tmp_path, ws) as host:
        host.context_used(99_000)
        economy = await call(host, "Grep", args)
    async with ToolHost(workspace=ws, data_dir=tmp_path / "d2") as host:
        exact = await call(host, "Grep", args)
    assert economy == exact
    assert len(exact["files"]) == 200


async def test_a_glob_page_shrinks_and_a_narrower_pattern_finds_what_it_left_out(
    tmp_path: Path, ws: Path
) -> None:
    async with economy_host(tmp_path, ws) as host:
        host.context_used(150_000)
        page = await call(host, "Glob", {"pattern": "**/*.txt", "limit": 1000})
        narrow = await call(host, "Glob", {"pattern": "**/f29*.txt", "limit": 1000})
    assert page["matches"] == [f"src/f{i:03d}.txt" for i in range(250)]
    assert page["notice"] == (
        "Showing the 250 newest matching files; more matched: narrow `pattern` or `path` to "
        "see the others. "
        "Glob budget shrunk to 250 lines / 12KB (from 1000 lines / 48KB): the context is 75% full."
    )
    assert narrow["matches"][-1] == "src/f299.txt"


async def test_grep_and_glob_read_compactly_a_path_once_then_its_lines(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    write(root, "a.py", "def one():\n    pass\ndef two():\n", age=1)
    write(root, "b.py", "def three():\n", age=2)
    texts = []
    async with ToolHost(workspace=root, data_dir=tmp_path / "data", profile="economy") as host:
        for tool, args in (
            ("Grep", {"pattern": "def", "after": 1}),
            ("Grep", {"pattern": "def", "outputMode": "count"}),
            ("Grep", {"pattern": "def", "outputMode": "filesWithMatches"}),
            ("Grep", {"pattern": "nothing"}),
            ("Glob", {"pattern": "*.py"}),
        ):
            events = [e async for e in host.stream(tool, args)]
            assert events[-1]["text"] == model_text(tool, events[-1]["result"])
            texts.append(events[-1]["text"])
    assert texts == [
        "a.py\n1:def one():\n2-    pass\n3:def two():\n\nb.py\n1:def three():",
        "a.py:2\nb.py:1",
        "a.py\nb.py",
        "No matches.",
        "a.py\nb.py",
    ]


def test_the_cli_prints_a_shrunken_grep_page_compactly(
    tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A session whose recorded context fills 80% of the window: the page shrinks.
    transcript_of_800_tokens(tmp_path / "data", "s1")
    data = ("--data-dir", str(tmp_path / "data"), "--workspace", str(ws))
    context = ("--session", "s1", "--context-window", "1000")
    args = json.dumps({"pattern": "needle"})
    out = run_main(
        capsys,
        "call",
        "Grep",
        args,
        "--profile",
        "economy",
        "--text",
        *data,
        *context,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:3] == ["src/f000.txt", "2:needle 0", ""]
    assert not out.stdout.lstrip().startswith("{")
    assert lines[-2:] == [
        "2:needle 65",
        "[Showing entries 1-66; more exist. Call again with offset 66 for the next page, "
        "or narrow `path`, `glob` or `pattern`. The page stopped at the 100 lines / 4KB "
        "result budget. Grep budget shrunk to 100 lines / 4KB (from 100 lines / 8KB): the "
        "context is 80% full.]",
    ]
