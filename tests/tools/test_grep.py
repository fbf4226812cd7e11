"""Grep through ToolHost.call: order, paging, budgets, binary skipping, paths, errors."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support import wait_for_async, write
from toolbound import ToolHost, model_text
from toolbound.limits import DEFAULT_LIMITS, Limits
from toolbound.names import real_name


async def grep(host: ToolHost, **args: Any) -> dict[str, Any]:
    return await host.call("Grep", args)


def m(path: str, line: int, text: str) -> dict[str, Any]:
    return {"path": path, "line": line, "text": text}


def c(path: str, line: int, text: str) -> dict[str, Any]:
    """A context line (before/after a match)."""
    return {"path": path, "line": line, "text": text, "context": True}


async def test_matches_come_newest_file_first_then_by_line(host: ToolHost, ws: Path) -> None:
    write(ws, "old.txt", "hit a\nno\nhit b\n", age=300)
    write(ws, "new.txt", "hit c\nhit d\n", age=100)
    write(ws, "mid/deep.txt", "x\nhit e\n", age=200)
    assert await grep(host, pattern="hit") == {
        "matches": [
            m("new.txt", 1, "hit c"),
            m("new.txt", 2, "hit d"),
            m("mid/deep.txt", 2, "hit e"),
            m("old.txt", 1, "hit a"),
            m("old.txt", 3, "hit b"),
        ],
        "count": 5,
        "files": 3,
        "truncated": False,
    }


async def test_files_with_equal_mtimes_are_ordered_by_path(host: ToolHost, ws: Path) -> None:
    for name in ("c.txt", "a.txt", "b/z.txt"):
        write(ws, name, "hit\n", age=5)
    result = await grep(host, pattern="hit", outputMode="filesWithMatches")
    assert result == {"files": ["a.txt", "b/z.txt", "c.txt"], "count": 3, "truncated": False}


async def test_order_holds_over_the_whole_tree_not_the_first_files_found(
    host: ToolHost, ws: Path
) -> None:
    # 300 files, the newest one written first and buried deepest: a search that
    # kept only the first files rg printed would miss it.
    for i in range(300):
        write(ws, f"d{i % 7}/f{i:03d}.txt", "hit\n", age=1000 + i)
    write(ws, "z/y/x/newest.txt", "hit\n", age=1)
    result = await grep(host, pattern="hit", outputMode="filesWithMatches", headLimit=3)
    assert result["files"] == ["z/y/x/newest.txt", "d0/f000.txt", "d1/f001.txt"]
    assert result["truncated"] is True


async def test_head_limit_stops_with_truncated_and_names_the_next_offset(
    host: ToolHost, ws: Path
) -> None:
    write(ws, "a.txt", "".join(f"hit {i}\n" for i in range(1, 11)))
    assert await grep(host, pattern="hit", headLimit=3) == {
        "matches": [m("a.txt", 1, "hit 1"), m("a.txt", 2, "hit 2"), m("a.txt", 3, "hit 3")],
        "count": 3,
        "files": 1,
        "truncated": True,
        "notice": "Showing entries 1-3; more exist. Call again with offset 3 for the next "
        "page, or narrow `path`, `glob` or `pattern`.",
    }


async def test_head_limit_defaults_to_the_limits_grep_head_limit(host: ToolHost, ws: Path) -> None:
    write(ws, "a.txt", "hit\n" * (DEFAULT_LIMITS.grep_head_limit + 50))
    result = await grep(host, pattern="hit")
    assert result["count"] == DEFAULT_LIMITS.grep_head_limit
    assert result["truncated"] is True
    assert f"offset {DEFAULT_LIMITS.grep_head_limit}" in result["notice"]


async def test_offset_pages_walk_the_whole_result_exactly(host: ToolHost, ws: Path) -> None:
    for f in range(6):
        write(ws, f"f{f}.txt", "".join(f"hit {f}.{i}\n" for i in range(f + 1)), age=f)
    whole = await grep(host, pattern="hit", headLimit=1000)
    assert whole["count"] == 21
    assert whole["truncated"] is False
    pages: list[dict[str, Any]] = []
    offset = 0
    while True:
        page = await grep(host, pattern="hit", headLimit=4, offset=offset)
        pages += page["matches"]
        if not page["truncated"]:
            break
        offset += page["count"]
    assert pages == whole["matches"]


async def test_an_offset_past_the_end_says_so(host: ToolHost, ws: Path) -> None:
    write(ws, "a.txt", "hit\n")
    assert await grep(host, pattern="hit", offset=5) == {
        "matches": [],
        "count": 0,
        "files": 0,
        "truncated": False,
        "notice": "No entries at offset 5: the result has fewer. Use a smaller offset.",
    }


async def test_binary_files_are_skipped_silently(host: ToolHost, ws: Path) -> None:
    write(ws, "text.txt", "hit\n")
    # rg itself searches all three: no NUL byte in any of them.
    write(ws, "image.png", "hit\n")
    write(ws, "blob.pyc", "hit\n")
    write(ws, "controls.dat", "hit\n" + "\x01\x02\x03\x04" * 100)
    # And one with a NUL byte, which rg skips too.
    write(ws, "nul.dat", b"hit\n\0\0")
    assert await grep(host, pattern="hit") == {
        "matches": [m("text.txt", 1, "hit")],
        "count": 1,
        "files": 1,
        "truncated": False,
    }


async def test_binary_files_are_skipped_in_every_output_mode(host: ToolHost, ws: Path) -> None:
    write(ws, "text.txt", "hit\n")
    write(ws, "image.png", "hit\n")
    assert await grep(host, pattern="hit", outputMode="count") == {
        "counts": [{"path": "text.txt", "count": 1}],
        "count": 1,
        "truncated": False,
    }


async def test_gitignored_tree_is_skipped_unless_it_is_the_explicit_path(
    host: ToolHost, ws: Path
) -> None:
    # No git repo: a .gitignore still applies, as an agent expects.
    write(ws, ".gitignore", "node_modules/\n")
    write(ws, "app.js", "hit\n", age=2)
    write(ws, "node_modules/lib/index.js", "hit\n", age=1)
    assert (await grep(host, pattern="hit"))["matches"] == [m("app.js", 1, "hit")]
    assert (await grep(host, pattern="hit", path="node_modules"))["matches"] == [
        m("node_modules/lib/index.js", 1, "hit")
    ]


async def test_explicit_path_lifts_parent_ignore_patterns(host: ToolHost, ws: Path) -> None:
    write(ws, ".gitignore", "/dist/**\n")
    write(ws, "dist/x/out.js", "hit\n")
    assert (await grep(host, pattern="hit"))["count"] == 0
    assert (await grep(host, pattern="hit", path="dist/x"))["matches"] == [
        m("dist/x/out.js", 1, "hit")
    ]


async def test_a_spill_file_is_searchable_by_its_absolute_path(host: ToolHost) -> None:
    spill = host.scratch.spill("bash-stdout", b"line one\nneedle here\n")
    assert spill is not None
    assert await grep(host, pattern="needle", path=str(spill)) == {
        "matches": [m(str(spill.resolve()), 2, "needle here")],
        "count": 1,
        "files": 1,
        "truncated": False,
    }
    spill_dir = str(spill.parent)
    result = await grep(host, pattern="needle", path=spill_dir, outputMode="files-with-matches")
    assert result == {"files": [str(spill.resolve())], "count": 1, "truncated": False}


async def test_external_matches_are_absolute(tmp_path: Path, ws: Path) -> None:
    ext = tmp_path / "ext"
    write(ext, "lib/a.txt", "hit\n")
    async with ToolHost(ws, tmp_path / "data", "s2", allow_external=[ext]) as host:
        result = await grep(host, pattern="hit", path=str(ext))
    assert result["matches"] == [m(str((ext / "lib/a.txt").resolve()), 1, "hit")]


async def test_a_path_outside_the_roots_is_not_allowed(host: ToolHost, tmp_path: Path) -> None:
    write(tmp_path, "elsewhere/a.txt", "hit\n")
    result = await grep(host, pattern="hit", path=str(tmp_path / "elsewhere"))
    assert result["error"]["code"] == "TOOL_PATH_NOT_ALLOWED"


async def test_a_missing_path_is_not_found(host: ToolHost) -> None:
    result = await grep(host, pattern="hit", path="no/such/dir")
    assert result == {
        "error": {
            "code": "TOOL_NOT_FOUND",
            "message": "no/such/dir does not exist. Check the path (Glob finds files by "
            "name), or leave `path` out to search the whole workspace.",
        }
    }


async def test_a_single_file_path_is_searched(host: ToolHost, ws: Path) -> None:
    write(ws, "src/one.py", "a = 1\nhit = 2\n")
    write(ws, "src/two.py", "hit = 3\n")
    assert (await grep(host, pattern="hit", path="src/one.py"))["matches"] == [
        m("src/one.py", 2, "hit = 2")
    ]


async def test_an_invalid_regex_is_an_invalid_pattern_with_rgs_message(host: ToolHost) -> None:
    result = await grep(host, pattern="foo(")
    assert result["error"]["code"] == "TOOL_INVALID_PATTERN"
    assert result["error"]["message"].startswith(
        # rg's own message, which shows the pattern as rg wrapped it.
        "Invalid regex: regex parse error:\n    (?:foo()\n    ^\nerror: unclosed group\n"
    )


async def test_an_unknown_type_is_an_invalid_argument(host: ToolHost) -> None:
    result = await grep(host, pattern="x", type="nosuchtype")
    assert result["error"]["code"] == "TOOL_INVALID_ARGUMENT"
    assert "unrecognized file type: nosuchtype" in result["error"]["message"]


async def test_long_lines_are_clipped_and_counted_in_the_notice(host: ToolHost, ws: Path) -> None:
    limit = DEFAULT_LIMITS.max_line_chars
    write(
        ws, "wide.txt", "hit" + "é" * (limit + 500) + "\nhit short\n" + "hit" + "x" * limit + "\n"
    )
    assert await grep(host, pattern="hit") == {
        "matches": [
            m("wide.txt", 1, ("hit" + "é" * limit)[:limit]),
            m("wide.txt", 2, "hit short"),
            m("wide.txt", 3, ("hit" + "x" * limit)[:limit]),
        ],
        "count": 3,
        "files": 1,
        "truncated": False,
        "notice": f"2 lines were clipped at {limit} characters.",
    }


async def test_a_line_far_longer_than_the_budget_costs_one_clipped_entry(
    host: ToolHost, ws: Path
) -> None:
    write(ws, "huge.txt", "hit" + "y" * 5_000_000 + "\nhit again\n")
    result = await grep(host, pattern="hit")
    assert [(e["line"], len(e["text"])) for e in result["matches"]] == [
        (1, DEFAULT_LIMITS.max_line_chars),
        (2, 9),
    ]


async def test_a_match_deep_in_a_giant_minified_line_is_shown(host: ToolHost, ws: Path) -> None:
    # A 9.6 MB one-line bundle matched at character 600,000: the window holds
    # the match, a quarter of the clip before it.
    limit = DEFAULT_LIMITS.max_line_chars
    line = "var a=1;" * 75_000 + "needle()" + "b=2;" * 2_250_000
    write(ws, "bundle.min.js", line + "\n")
    at = line.index("needle")
    assert at == 600_000
    start = at - limit // 4
    result = await grep(host, pattern="needle")
    assert result == {
        "matches": [{**m("bundle.min.js", 1, line[start : start + limit]), "column": start + 1}],
        "count": 1,
        "files": 1,
        "truncated": False,
        "notice": f"1 line was clipped at {limit} characters. A clipped line shows the window "
        "holding its first match; where that window starts inside the line, `column` says at "
        f"which character (line 1: column {start + 1}).",
    }
    assert model_text("Grep", result).startswith(
        f"bundle.min.js\n1:[from column {start + 1}] {line[start : start + 20]}"
    )


async def test_the_match_window_is_cut_on_characters_and_ends_with_the_line(
    host: ToolHost, ws: Path
) -> None:
    limit = DEFAULT_LIMITS.max_line_chars
    middle = "\u00e9" * 50_000 + "needle" + "\u20ac" * 50_000
    late = "\u00e9" * 50_000 + "needle" + "\u20ac" * 10
    early = "x" * 100 + "needle" + "y" * 5_000
    write(ws, "w.txt", "\n".join([middle, late, early]) + "\n")
    at = 50_000
    found = (await grep(host, pattern="needle"))["matches"]
    assert [(e["text"], e.get("column")) for e in found] == [
        (middle[at - limit // 4 : at - limit // 4 + limit], at - limit // 4 + 1),
        (late[-limit:], len(late) - limit + 1),
        (early[:limit], None),
    ]


async def test_the_page_stops_at_the_byte_budget_and_the_next_page_continues(
    host: ToolHost, ws: Path
) -> None:
    write(ws, "big.txt", "".join(f"hit {i:04d} " + "z" * 990 + "\n" for i in range(200)))
    first = await grep(host, pattern="hit")
    assert len(json.dumps(first, ensure_ascii=False).encode()) <= DEFAULT_LIMITS.search.max_bytes
    n = first["count"]
    assert 40 < n < 50  # ~1 KB entries in a 48 KB page
    assert first["truncated"] is True
    assert first["notice"] == (
        f"Showing entries 1-{n}; more exist. Call again with offset {n} for the next page, "
        "or narrow `path`, `glob` or `pattern`. The page stopped at the 2000 lines / 48KB "
        "result budget."
    )
    second = await grep(host, pattern="hit", offset=n)
    assert second["matches"][0]["line"] == n + 1


async def test_the_page_stops_at_the_line_budget(host: ToolHost, ws: Path) -> None:
    limits = DEFAULT_LIMITS.replace(search=DEFAULT_LIMITS.search.__class__(48 * 1024, 50))
    write(ws, "many.txt", "hit\n" * 80)
    async with ToolHost(ws, ws.parent / "data2", "s3", limits=limits) as h:
        result = await grep(h, pattern="hit", headLimit=70)
    assert result["count"] == 50
    assert result["truncated"] is True
    assert "offset 50" in result["notice"]


async def test_count_mode_counts_matching_lines_per_file(host: ToolHost, ws: Path) -> None:
    write(ws, "a.txt", "hit\nhit\nno\n", age=2)
    write(ws, "b.txt", "hit\n", age=1)
    assert await grep(host, pattern="hit", outputMode="count") == {
        "counts": [{"path": "b.txt", "count": 1}, {"path": "a.txt", "count": 2}],
        "count": 2,
        "truncated": False,
    }


async def test_count_mode_pages_by_file(host: ToolHost, ws: Path) -> None:
    for i in range(5):
        write(ws, f"f{i}.txt", "hit\n" * (i + 1), age=i)
    result = await grep(host, pattern="hit", outputMode="count", headLimit=2, offset=1)
    assert result == {
        "counts": [{"path": "f1.txt", "count": 2}, {"path": "f2.txt", "count": 3}],
        "count": 2,
        "truncated": True,
        "notice": "Showing entries 2-3; more exist. Call again with offset 3 for the next "
        "page, or narrow `path`, `glob` or `pattern`.",
    }


@pytest.mark.parametrize("mode", ["filesWithMatches", "files_with_matches", "files-with-matches"])
async def test_every_files_with_matches_spelling_lists_files(
    host: ToolHost, ws: Path, mode: str
) -> None:
    write(ws, "a.txt", "hit\nhit\n", age=2)
    write(ws, "b.txt", "miss\n", age=1)
    assert await grep(host, pattern="hit", outputMode=mode) == {
        "files": ["a.txt"],
        "count": 1,
        "truncated": False,
    }


async def test_context_lines_are_entries_with_their_own_line_numbers(
    host: ToolHost, ws: Path
) -> None:
    write(ws, "c.txt", "1\n2\nhit 3\n4\n5\n6\n7\nhit 8\n9\n")
    assert (await grep(host, pattern="hit", before=1, after=1))["matches"] == [
        c("c.txt", 2, "2"),
        m("c.txt", 3, "hit 3"),
        c("c.txt", 4, "4"),
        c("c.txt", 7, "7"),
        m("c.txt", 8, "hit 8"),
        c("c.txt", 9, "9"),
    ]


async def test_context_lines_are_marked_in_the_model_text(host: ToolHost, ws: Path) -> None:
    # As ripgrep's heading layout prints them: `12:text` for a match, `12-text` for context.
    write(ws, "c.txt", "1\nhit 2\n3\n")
    result = await grep(host, pattern="hit", before=1, after=1)
    assert model_text("Grep", result) == "c.txt\n1-1\n2:hit 2\n3-3"


async def test_a_multiline_match_gives_an_entry_per_line(host: ToolHost, ws: Path) -> None:
    write(ws, "f.py", "def f(\n    x,\n):\n    pass\n")
    result = await grep(host, pattern=r"def f\(.*?\):", multiline=True)
    assert result["matches"] == [m("f.py", 1, "def f("), m("f.py", 2, "    x,"), m("f.py", 3, "):")]


async def test_case_insensitive_glob_and_type_filters(host: ToolHost, ws: Path) -> None:
    write(ws, "a.py", "Hit\n", age=3)
    write(ws, "b.md", "HIT\n", age=2)
    write(ws, "c.py", "hit\n", age=1)
    assert (await grep(host, pattern="hit"))["matches"] == [m("c.py", 1, "hit")]
    insensitive = await grep(host, pattern="hit", caseInsensitive=True, glob="*.py")
    assert insensitive["matches"] == [m("c.py", 1, "hit"), m("a.py", 1, "Hit")]
    typed = await grep(host, pattern="hit", caseInsensitive=True, type="md")
    assert typed["matches"] == [m("b.md", 1, "HIT")]


async def test_crlf_line_endings_are_not_part_of_the_text(host: ToolHost, ws: Path) -> None:
    write(ws, "w.txt", b"hit one\r\nhit two\r\n")
    assert [e["text"] for e in (await grep(host, pattern="hit"))["matches"]] == [
        "hit one",
        "hit two",
    ]


async def test_a_search_past_the_timeout_returns_truncated_and_says_to_narrow(
    tmp_path: Path, ws: Path
) -> None:
    write(ws, "a.txt", "hit\n")
    limits = Limits(search_timeout_s=0.0)
    async with ToolHost(ws, tmp_path / "data", "s4", limits=limits) as host:
        result = await grep(host, pattern="hit")
    # What it has: rg may or may not have printed the one file before the stop.
    found = result.pop("matches")
    assert found in ([], [m("a.txt", 1, "hit")])
    assert result == {
        "count": len(found),
        "files": len(found),
        "truncated": True,
        "notice": "The search was stopped after 0s and shows only what it found by then, "
        "so newer matches may be missing. Narrow the path to search less.",
    }


async def test_a_binary_file_never_takes_a_text_files_place_on_the_page(
    host: ToolHost, ws: Path
) -> None:
    # The newest match is binary by content only (no NUL, no listed extension),
    # so rg reports it and the walk keeps it until the sniff drops it; the page
    # must still hold the next text file and know that one more exists.
    write(ws, "controls.dat", "hit\n" + "\x01\x02\x03" * 200, age=1)
    write(ws, "a.txt", "hit\n", age=2)
    write(ws, "b.txt", "hit\n", age=3)
    assert await grep(host, pattern="hit", outputMode="filesWithMatches", headLimit=1) == {
        "files": ["a.txt"],
        "count": 1,
        "truncated": True,
        "notice": "Showing entries 1-1; more exist. Call again with offset 1 for the next "
        "page, or narrow `path`, `glob` or `pattern`.",
    }
    second = await grep(host, pattern="hit", outputMode="filesWithMatches", offset=1)
    assert second == {"files": ["b.txt"], "count": 1, "truncated": False}


async def test_an_abort_stops_the_search_and_returns_what_it_has(host: ToolHost, ws: Path) -> None:
    for i in range(200):
        write(ws, f"d{i % 10}/f{i}.txt", "hit\n" * 50)
    call = asyncio.create_task(host.call("Grep", {"pattern": "hit"}, tool_call_id="g1"))
    # Abort the moment the call runs: yield to it once per try.
    await wait_for_async(lambda: host.abort("g1"), "the call to start", poll_s=0)
    result = await asyncio.wait_for(call, 10)
    assert result["truncated"] is True
    assert result["notice"].startswith(
        "The search was aborted and shows only what it found by then."
    )


def test_an_unreadable_folder_is_skipped_and_counted(
    tmp_path: Path, ws: Path, unprivileged: Any
) -> None:
    write(ws, "ok.txt", "hit\n")
    write(ws, "locked/secret.txt", "hit\n")
    (ws / "locked").chmod(0)
    try:
        done = unprivileged(str(ws), str(tmp_path / "data"), "Grep", '{"pattern": "hit"}')
    finally:
        (ws / "locked").chmod(0o755)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "matches": [m("ok.txt", 1, "hit")],
        "count": 1,
        "files": 1,
        "truncated": False,
        "notice": "1 path could not be read and was skipped "
        "(first: ./locked: Permission denied (os error 13)).",
    }


async def test_a_file_name_that_is_not_utf8_is_shown_with_its_bad_bytes_escaped(
    host: ToolHost, ws: Path
) -> None:
    # Valid UTF-8 (and JSON) that still names the file: \xHH for each bad byte,
    # and in such a name a backslash doubled.
    write(ws, os.fsdecode(b"d/caf\xe9\\x.txt"), "hit\n", age=2)
    write(ws, "d/caf\u00e9.txt", "hit\n", age=1)
    shown = "d/caf\\xe9\\\\x.txt"
    assert (await grep(host, pattern="hit"))["matches"] == [
        m("d/caf\u00e9.txt", 1, "hit"),
        m(shown, 1, "hit"),
    ]
    assert (await grep(host, pattern="hit", outputMode="count"))["counts"] == [
        {"path": "d/caf\u00e9.txt", "count": 1},
        {"path": shown, "count": 1},
    ]
    assert (await host.call("Glob", {"pattern": "**/*.txt"}))["matches"] == [
        "d/caf\u00e9.txt",
        shown,
    ]
    assert real_name(shown) == b"d/caf\xe9\\x.txt"
    # Read takes the shown name back (paths.Roots.resolve undoes the escape).
    assert (await host.call("Read", {"path": shown}))["content"] == "hit\n"
    json.dumps(shown, ensure_ascii=False).encode("utf-8")  # no lone surrogate in it


async def test_a_file_name_with_a_newline_survives_every_pass(host: ToolHost, ws: Path) -> None:
    write(ws, "two\nlines.txt", "a\nhit here\n", age=1)
    write(ws, "lines.txt", "nothing\n", age=2)
    assert await grep(host, pattern="hit") == {
        "matches": [m("two\nlines.txt", 2, "hit here")],
        "count": 1,
        "files": 1,
        "truncated": False,
    }
    assert (await grep(host, pattern="hit", outputMode="count"))["counts"] == [
        {"path": "two\nlines.txt", "count": 1}
    ]
    assert (await grep(host, pattern="hit", outputMode="filesWithMatches"))["files"] == [
        "two\nlines.txt"
    ]
    assert (await grep(host, pattern="hit", before=1))["matches"] == [
        c("two\nlines.txt", 1, "a"),
        m("two\nlines.txt", 2, "hit here"),
    ]


def _git_repo(ws: Path) -> None:
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    write(ws, ".git/objects/ab/cdef", "hit\n")
    write(ws, ".gitignore", "node_modules/\n*.log\n!.prettierrc.js\n")
    write(ws, "node_modules/lib/index.js", "hit\n")
    write(ws, ".cache/tmp.js", "hit\n")
    write(ws, "debug.log", "hit\n")
    write(ws, ".eslintrc.js", "hit\n")
    write(ws, ".prettierrc.js", "hit\n", age=3)
    write(ws, "src/app.js", "hit\n", age=1)
    write(ws, "README.md", "hit\n", age=2)


@pytest.mark.parametrize(
    ("arguments", "found"),
    [
        ({"glob": "*"}, ["src/app.js", "README.md", ".prettierrc.js"]),
        ({"glob": "**/*"}, ["src/app.js", "README.md", ".prettierrc.js"]),
        ({"glob": "*.js"}, ["src/app.js", ".prettierrc.js"]),
        ({"glob": "*.log"}, []),
        ({"glob": "src/*"}, ["src/app.js"]),
        ({"glob": "!*.md"}, ["src/app.js", ".prettierrc.js"]),
        ({"type": "js"}, ["src/app.js", ".prettierrc.js"]),
        ({"type": "js", "glob": "src/**"}, ["src/app.js"]),
    ],
)
async def test_glob_and_type_never_lift_an_ignore_rule(
    host: ToolHost, ws: Path, arguments: dict[str, Any], found: list[str]
) -> None:
    # Only what plain `rg --files` lists is searched: no .git, no gitignored
    # file or folder, no dot folder, no dot file an ignore file did not re-include.
    _git_repo(ws)
    result = await grep(host, pattern="hit", outputMode="filesWithMatches", **arguments)
    assert result == {"files": found, "count": len(found), "truncated": False}


async def test_an_explicit_path_still_reaches_into_an_ignored_folder_with_a_glob(
    host: ToolHost, ws: Path
) -> None:
    _git_repo(ws)
    result = await grep(host, pattern="hit", path="node_modules", glob="*.js")
    assert result["matches"] == [m("node_modules/lib/index.js", 1, "hit")]


async def test_the_rg_on_path_is_never_used(
    host: ToolHost, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    impostor = write(tmp_path, "bin/rg", "#!/bin/sh\necho impostor\nexit 2\n")
    impostor.chmod(0o755)
    monkeypatch.setenv("PATH", str(impostor.parent))
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(write(tmp_path, "rgrc", "--max-count=0\n")))
    write(ws, "a.txt", "hit\n")
    assert (await grep(host, pattern="hit"))["matches"] == [m("a.txt", 1, "hit")]


# The CLI's call in a fresh process, and the largest resident set of it and of the
# processes it waited for (rg among them), in KB.
_PEAK_RSS = """
import resource, subprocess, sys
done = subprocess.run([sys.executable, "-m", "toolbound", *sys.argv[1:]], capture_output=True,
                      text=True, timeout=120)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(done.stdout)
"""


def test_an_explicit_path_to_a_huge_sparse_file_answers_at_once_in_bounded_memory(
    tmp_path: Path, ws: Path
) -> None:
    holes = ws / "disk.img"
    with open(holes, "wb") as f:
        f.truncate(3 * 1024**3)  # 3 GB of NUL bytes, none of them on disk
    write(ws, "notes.txt", "x marks the spot\n")
    peaks, results = [], []
    for path in ("disk.img", "notes.txt"):  # the image, then a small text file beside it
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                _PEAK_RSS,
                "call",
                "Grep",
                json.dumps({"pattern": "marks", "path": path}),
                "--workspace",
                str(ws),
                "--data-dir",
                str(tmp_path / "data"),
            ],
            capture_output=True,
            text=True,
            timeout=180,
            check=True,
        )
        peak, result = done.stdout.split("\n", 1)
        peaks.append(int(peak))
        results.append(json.loads(result))
    assert results == [
        {"matches": [], "count": 0, "files": 0, "truncated": False},
        {
            "matches": [m("notes.txt", 1, "x marks the spot")],
            "count": 1,
            "files": 1,
            "truncated": False,
        },
    ]
    assert max(peaks) < 200 * 1024, peaks


async def test_head_limit_counts_matches_and_their_context_comes_with_them(
    host: ToolHost, ws: Path
) -> None:
    write(ws, "c.txt", "".join(f"hit {i}\n" if i % 4 == 0 else f"{i}\n" for i in range(1, 41)))
    first = await grep(host, pattern="hit", headLimit=3, before=2, after=2)
    assert first["matches"] == [
        *[c("c.txt", n, str(n)) for n in (2, 3)],
        m("c.txt", 4, "hit 4"),
        *[c("c.txt", n, str(n)) for n in (5, 6, 7)],
        m("c.txt", 8, "hit 8"),
        *[c("c.txt", n, str(n)) for n in (9, 10, 11)],
        m("c.txt", 12, "hit 12"),
        *[c("c.txt", n, str(n)) for n in (13, 14)],
    ]
    assert (first["count"], first["truncated"]) == (13, True)
    assert "offset 3" in first["notice"]
    # The next page starts with the before lines of the fourth match, none repeated.
    second = await grep(host, pattern="hit", headLimit=1, offset=3, before=2, after=2)
    assert second["matches"] == [
        c("c.txt", 15, "15"),
        m("c.txt", 16, "hit 16"),
        *[c("c.txt", n, str(n)) for n in (17, 18)],
    ]
