"""The glob translation against ripgrep itself: same files, same errors."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from toolbound.results import ToolError
from toolbound.search.globs import compile_glob
from toolbound.search.rg import rg_binary
from toolbound.search.select import FileSelection

# A tree with no ignore file and no hidden name: there rg's override meaning of
# `--glob` (whitelist what matches) lists exactly the files a glob matches.
FILES = [
    "a.py",
    "b.txt",
    "src/a.py",
    "src/b.ts",
    "src/c.tsx",
    "src/deep/x/y.ts",
    "src/deep/x/z.min.js",
    "lib/src/q.ts",
    "lib/a,b}",
    "docs/guide.md",
    "docs/Guide.MD",
    "caf\u00e9/men\u00fc.txt",
    "weird[1].txt",
    "sp ace.txt",
    "tab\tname.txt",
    "two\nlines.txt",
    "x/xa",
    "x/xb",
    "x/a/b/c/xz",
    "node_modules/pkg/index.js",
]
GLOBS = [
    "*",
    "**",
    "**/*",
    "*.py",
    "**/*.py",
    "src/*",
    "src/**",
    "src/**/*.ts",
    "/a.py",
    "/src/*.ts",
    "src/*.{ts,tsx}",
    "{src,lib}/**/*.ts",
    "*.{py,md}",
    "**/deep/**/*.js",
    "x/**/x?",
    "x/x[ab]",
    "x/x[!a]",
    "x/x[a-b]",
    "*[0-9]*",
    "weird\\[1\\].txt",
    "caf\u00e9/*",
    "*\u00fc*",
    "men?.txt",
    "*.MD",
    "docs/",
    "a**",
    "**a",
    "src/**b.ts",
    "lib/a,b}",
    "a,b}",
    "*.txt ",
    "tab*",
    "two*",
    "*lines.txt",
    "node_modules",
    "node_modules/**",
    "**/pkg/*.js",
    "src/deep",
    "sr[c]/a.py",
    "s*/a.py",
]


def rg_lists(root: Path, *args: str) -> set[bytes]:
    out = subprocess.run(
        [str(rg_binary()), "--no-config", "--files", "--null", *args, "."],
        cwd=root,
        capture_output=True,
        check=False,
    )
    return {p.removeprefix(b"./") for p in out.stdout.split(b"\0") if p}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("globs")
    names = [*FILES]
    for rel in names:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")
    bad = os.fsencode(root) + b"/caf\xe9.bin"
    with open(bad, "wb") as f:
        f.write(b"x\n")
    return root


@pytest.mark.parametrize("pattern", GLOBS)
def test_a_glob_selects_the_files_rg_selects(tree: Path, pattern: str) -> None:
    every = rg_lists(tree)
    glob = compile_glob(pattern, argument="pattern")
    ours = every if glob is None else {p for p in every if glob.matches(p)}
    assert ours == rg_lists(tree, "--glob", pattern)


@pytest.mark.parametrize("pattern", ["caf?.bin", "caf??.bin", "caf*.bin", "*.bin"])
def test_a_non_utf8_name_is_matched_on_its_bytes(tree: Path, pattern: str) -> None:
    # `?` is one byte, as in rg: it matches the lone \xe9 but not the two bytes of "é".
    glob = compile_glob(pattern, argument="pattern")
    assert glob is not None
    ours = {p for p in rg_lists(tree) if glob.matches(p)}
    assert ours == rg_lists(tree, "--glob", pattern)


@pytest.mark.parametrize("pattern", ["src/[a", "[]", "{a,b", "{a,{b,c}}", "x\\", "[z-a]", "[a-]]"])
def test_an_invalid_glob_gets_rgs_own_message(tree: Path, pattern: str) -> None:
    done = subprocess.run(
        [str(rg_binary()), "--no-config", "--files", "--glob", pattern, "."],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 2:
        assert compile_glob(pattern, argument="pattern") is not None
        return
    with pytest.raises(ToolError) as caught:
        compile_glob(pattern, argument="pattern")
    assert caught.value.message == (
        f"Invalid glob: {done.stderr.strip().removeprefix('rg: ')}\n"
        "Fix `pattern` (e.g. `**/*.py`) and call again."
    )


def test_a_basename_is_offered_only_when_every_match_has_it() -> None:
    def base(p: str) -> str | None:
        g = compile_glob(p, argument="pattern")
        assert g is not None
        return g.basename

    assert base("*.py") == "*.py"
    assert base("src/**/*.ts") == "*.ts"
    assert base("src/*.{ts,tsx}") == "*.{ts,tsx}"
    assert base("**/*") is None
    assert base("src/**") is None
    assert base("{a/x,b/y}.py") is None
    assert base("a[!z]b") is None


def test_a_glob_under_a_literal_folder_is_a_prefix_test() -> None:
    def under(p: str) -> tuple[bytes | None, bool]:
        g = compile_glob(p, argument="pattern")
        assert g is not None
        return g.under, g.any_name

    assert under("src/**") == (b"./src/", True)
    assert under("/src/deep/**") == (b"./src/deep/", True)
    assert under("src/**/*.ts") == (b"./src/", False)
    assert under("src/**/*.{ts,tsx}") == (b"./src/", False)
    for other in (
        "**/*.py",
        "src/*.ts",
        "s*/**",
        "{src,lib}/**/*.ts",
        "src/**/x[ab]",
        "src/**b.ts",
    ):
        assert under(other) == (None, False), other


@pytest.mark.parametrize("pattern", GLOBS)
def test_a_selection_narrows_rg_and_filters_to_what_rg_selects(tree: Path, pattern: str) -> None:
    # The walk's own path: rg narrowed by the selection's flags, then its
    # batch filter on what rg printed (a prefix test, a regex, or nothing).
    selection = FileSelection.of(glob=pattern, type_name=None, argument="pattern")
    out = subprocess.run(
        [str(rg_binary()), "--no-config", "--files", "--null", *selection.rg_args(), "."],
        cwd=tree,
        capture_output=True,
        check=False,
    )
    printed = [p for p in out.stdout.split(b"\0") if p]
    keep = selection.printed_filter()
    kept = printed if keep is None else keep(printed)
    assert {p.removeprefix(b"./") for p in kept} == rg_lists(tree, "--glob", pattern)
