"""Edit and Write on real files: read-before-write, refusals, mode, endings, symlinks, diff."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from toolbound.edit import (
    ReadRecord,
    edit_file,
    resolve_target,
    write_file,
)
from toolbound.paths import Roots
from toolbound.results import ErrorCode, ToolError

ReadFn = Callable[..., str]


def edit(roots: Roots, record: ReadRecord, path: str, old: str, new: str, **kw: bool) -> dict:
    target = resolve_target(roots, path, tool="Edit")
    return edit_file(
        target, old_string=old, new_string=new, record=record, call_id="e1", **kw
    ).to_wire()


def write(roots: Roots, record: ReadRecord, path: str, content: str) -> dict:
    target = resolve_target(roots, path, tool="Write")
    return write_file(target, content=content, record=record, call_id="w1").to_wire()


def test_edit_after_read_replaces_and_returns_the_diff(
    roots: Roots, ws: Path, record: ReadRecord, read: ReadFn
) -> None:
    (ws / "app.py").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    read("app.py")
    result = edit(roots, record, "app.py", "line 5\n", "line five\n")
    assert result == {
        "path": "app.py",
        "replacements": 1,
        "created": False,
        "diff": "--- a/app.py\n+++ b/app.py\n@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n"
        "-line 5\n+line five\n line 6\n line 7\n line 8\n",
        "truncated": False,
    }
    assert (ws / "app.py").read_text().count("line five\n") == 1


def test_an_unread_file_is_not_read_and_left_alone(
    roots: Roots, ws: Path, record: ReadRecord
) -> None:
    (ws / "a.txt").write_text("x\n")
    with pytest.raises(ToolError) as caught:
        edit(roots, record, "a.txt", "x", "y")
    assert caught.value.code == ErrorCode.NOT_READ
    with pytest.raises(ToolError) as caught:
        write(roots, record, "a.txt", "y\n")
    assert caught.value.code == ErrorCode.NOT_READ
    assert (ws / "a.txt").read_text() == "x\n"


def test_a_change_by_another_process_after_the_read_is_file_changed(
    roots: Roots, ws: Path, record: ReadRecord, read: ReadFn
) -> None:
    path = ws / "a.txt"
    path.write_text("alpha\nbeta\n")
    read("a.txt")
    subprocess.run(
        [sys.executable, "-c", f"open({str(path)!r}, 'w').write('alpha\\nBETA\\n')"],
        check=True,
        timeout=30,
    )
    with pytest.raises(ToolError) as caught:
        edit(roots, record, "a.txt", "alpha", "ALPHA")
    assert caught.value.code == ErrorCode.FILE_CHANGED
    assert caught.value.message == (
        "a.txt changed since your Read of lines 1-2 (call r1): another process or tool wrote "
        "it meanwhile. Read it again, then repeat the Edit with text taken from the new Read."
    )
    assert path.read_text() == "alpha\nBETA\n"
    read("a.txt")
    assert edit(roots, record, "a.txt", "alpha", "ALPHA")["replacements"] == 1


def test_a_second_edit_needs_no_new_read_but_a_foreign_change_still_refuses(
    roots: Roots, ws: Path, record: ReadRecord, read: ReadFn
) -> None:
    (ws / "a.txt").write_text("a\nb\nc\n")
    read("a.txt")
    edit(roots, record, "a.txt", "a", "A")
    edit(roots, record, "a.txt", "b", "B")
    (ws / "a.txt").write_text("A\nB\nc\nd\n")
    with pytest.raises(ToolError) as caught:
        edit(roots, record, "a.txt", "c", "C")
    assert caught.value.message.startswith("a.txt changed since your Edit (call e1)")


def test_a_partly_read_file_refuses_only_changes_to_what_was_read(
    roots: Roots, ws: Path, record: ReadRecord, read: ReadFn
) -> None:
    path = ws / "big.log"
    path.write_text("".join(f"{i}\n" for i in range(100)))
    read("big.log", limit=10)
    path.write_text(path.read_text().replace("50\n", "fifty\n"))
    assert edit(roots, record, "big.log", "\n3\n", "\nthree\n")["replacements"] == 1
    read("big.log", offset=90, limit=10)
    with path.open("a") as f:
        f.write("100\n")
    with pytest.raises(ToolError) as caught:
        edit(roots, record, "big.log", "\n4\n", "\nfour\n")
    assert caught.value.message.startswith("big.log changed since your Read of lines 91-100")


def test_no_match_and_ambiguous_leave_the_file_untouched(
    roots: Roots, ws: Path, record: ReadRecord, read: ReadFn
) -> None:
    (ws / "a.txt").write_text("x\nx\n")
    read("a.txt")
    with pytest.raises(ToolError) as caught:
        edit(roots, record, "a.txt", "y", "z")
    assert caught.value.code == ErrorCode.NO_MATCH
    with pytest.raises(ToolError) as caught:
        edit(roots, record, "a.txt", "x", "z")
    assert caught.value.code == ErrorCode.AMBIGUOUS_MATCH
    assert (ws / "a.txt").read_text() == "x\nx\n"
    assert os.listdir(ws) == ["a.txt"]
    assert edit(roots, record, "a.txt", "x", "z", replace_all=True)["replacements"] == 2


def test_crlf_file_edited_with_lf_text_stays_crlf(
    roots: Roots, ws: Path, record: ReadRecord, read: ReadFn
) -> None:
    (ws / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    copied = read("win.txt")
    assert copied == "one\r\ntwo\r\nthree\r\n"
    edit(roots, record, "win.txt", "one\ntwo", "1\n2")
    assert (ws / "win.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"
    edit(roots, record, "win.txt", "2\r\nthree\r\n", "2\r\n3\r\n")
    assert (ws / "win.txt").read_bytes() == b"1\r\n2\r\n3\r\n"


def test_write_keeps_crlf_and_the_bom_of_the_file_it_replaces(
    roots: Roots, ws: Path, record: ReadRecord, read: ReadFn
) -> None:
    (ws / "w.txt").write_bytes(b"\xef\xbb\xbfold\r\n")
    read("w.txt")
    result = write(roots, record, "w.txt", "new\nlines\n")
    assert (ws / "w.txt").read_bytes() == b"\xef\xbb\xbfnew\r\nlines\r\n"
    assert result["bytes"] == len(b"\xef\xbb\xbfnew\r\nlines\r\n")


def test_edit_keeps_the_bom(roots: Roots, ws: Path, record: ReadRecord, read: ReadFn) -> None:
    (ws / "b.py").write_bytes(b"\xef\xbb\xbfimport os\n")
    copied = read("b.py")
    edit(roots, record, "b.py", copied.rstrip("\n"), "import sys")
    assert (ws / "b.py").read_bytes() == b"\xef\xbb\xbfimport sys\n"


def test_the_mode_is_kept_and_a_new_file_gets_the_umask_mode(
    roots: Roots, ws: Path, record: ReadRecord, read: ReadFn
) -> None:
    (ws / "run.sh").write_text("echo hi\n")
    os.chmod(ws / "run.sh", 0o750)
    read("run.sh")
    edit(roots, record, "run.sh", "hi", "there")
    assert (ws / "run.sh").stat().st_mode & 0o7777 == 0o750
    old_umask = os.umask(0o027)
    try:
        result = write(roots, record, "deep/er/new.txt", "hello\n")
    finally:
        os.umask(old_umask)
    assert result == {
        "path": "deep/er/new.txt",
        "bytes": 6,
        "created": True,
        "diff": "--- /dev/null\n+++ b/deep/er/new.txt\n@@ -0,0 +1 @@\n+hello\n",
        "truncated": False,
    }
    assert (ws / "deep/er/new.txt").stat().st_mode & 0o777 == 0o640
    assert (ws / "deep/er").stat().st_mode & 0o777 == 0o750


def test_binary_files_are_refused(roots: Roots, ws: Path, record: ReadRecord) -> None:
    (ws / "blob.dat").write_bytes(b"abc\x00def\n")
    (ws / "logo.png").write_bytes(b"not really\n")
    for path in ("blob.dat", "logo.png"):
        with pytest.raises(ToolError) as caught:
            edit(roots, record, path, "abc", "x")
        assert caught.value.code == ErrorCode.BINARY_CONTENT
        with pytest.raises(ToolError) as caught:
            write(roots, record, path, "x")
        assert caught.value.code == ErrorCode.BINARY_CONTENT


def test_missing_files_folders_and_fifos_are_refused(
    roots: Roots, ws: Path, record: ReadRecord
) -> None:
    (ws / "dir").mkdir()
    os.mkfifo(ws / "pipe")
    cases = {"nope.txt": ErrorCode.NOT_FOUND, "dir": ErrorCode.IS_DIRECTORY}
    cases["pipe"] = ErrorCode.NOT_REGULAR_FILE
    for path, code in cases.items():
        with pytest.raises(ToolError) as caught:
            edit(roots, record, path, "a", "b")
        assert caught.value.code == code, path


def test_paths_leaving_the_workspace_are_refused(roots: Roots, ws: Path, tmp_path: Path) -> None:
    (tmp_path / "outside/secret.txt").write_text("s\n")
    (ws / "out").symlink_to(tmp_path / "outside")
    (ws / "scr").symlink_to(roots.scratch)
    for path in (
        "../outside/secret.txt",
        "out/secret.txt",
        str(tmp_path / "outside/secret.txt"),
        str(roots.scratch / "x.txt"),
        "scr/x.txt",
        str(tmp_path / "ext/x.txt"),
    ):
        with pytest.raises(ToolError) as caught:
            resolve_target(roots, path, tool="Write")
        assert caught.value.code == ErrorCode.PATH_NOT_ALLOWED, path
    with pytest.raises(ToolError) as caught:
        resolve_target(roots, "../outside/secret.txt", tool="Edit")
    assert caught.value.message == (
        f"../outside/secret.txt leads elsewhere, outside the workspace ({ws}). Edit changes "
        "files in the workspace only (not the scratch dir, not approved external folders); "
        "give a path inside the workspace."
    )
    assert (tmp_path / "outside/secret.txt").read_text() == "s\n"


def test_a_symlink_inside_the_workspace_changes_its_target_and_stays_a_link(
    roots: Roots, ws: Path, record: ReadRecord, read: ReadFn
) -> None:
    (ws / "real.txt").write_text("v1\n")
    (ws / "link.txt").symlink_to("real.txt")
    read("link.txt")
    assert edit(roots, record, "link.txt", "v1", "v2")["path"] == "real.txt"
    assert (ws / "link.txt").is_symlink()
    assert (ws / "real.txt").read_text() == "v2\n"


def test_a_long_diff_is_cut_within_the_search_budget(
    roots: Roots, ws: Path, record: ReadRecord, read: ReadFn
) -> None:
    (ws / "many.txt").write_text("x = 1\n" * 3000)
    read("many.txt")
    result = edit(roots, record, "many.txt", "x = 1", "y = 2", replace_all=True)
    assert result["replacements"] == 3000
    assert result["truncated"] is True
    assert result["notice"] == (
        "The diff was cut after 2000 of 6003 lines (limit 2000 lines / 48KB); the change "
        "itself was made in full. Read many.txt to see the rest."
    )
    assert result["diff"].count("\n") == 2000
    assert (ws / "many.txt").read_text() == "y = 2\n" * 3000


def test_write_over_a_read_file_diffs_old_against_new(
    roots: Roots, ws: Path, record: ReadRecord, read: ReadFn
) -> None:
    (ws / "c.txt").write_text("a\nb\nc\nd\ne\nf\ng\nh\n")
    read("c.txt")
    result = write(roots, record, "c.txt", "a\nb\nc\nD\ne\nf\ng\nh")
    assert result["diff"] == (
        "--- a/c.txt\n+++ b/c.txt\n@@ -1,8 +1,8 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n-h\n+h\n"
        "\\ No newline at end of file\n"
    )
