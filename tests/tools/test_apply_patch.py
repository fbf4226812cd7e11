"""ApplyPatch through ToolHost.call: Codex's file-level cases, all-or-none, the read record.

The scenario names follow Codex CLI's apply-patch fixtures
(codex-rs/apply-patch/tests/fixtures/scenarios) and CLI tests; where toolbound
refuses what Codex does (overwriting a file never Read, leaving a partial
change), the test says so.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from support import run_cli
from toolbound import ToolHost, model_text

CALL_TIMEOUT_S = 20


async def call(host: ToolHost, tool: str, **args: Any) -> dict[str, Any]:
    return await asyncio.wait_for(host.call(tool, args), CALL_TIMEOUT_S)


async def apply(host: ToolHost, body: str) -> dict[str, Any]:
    return await call(host, "ApplyPatch", patch=f"*** Begin Patch\n{body}\n*** End Patch\n")


def error(result: dict[str, Any]) -> tuple[str, str]:
    assert "error" in result, result
    return result["error"]["code"], result["error"]["message"]


def tree(root: Path) -> dict[str, bytes | None]:
    """Every file (bytes) and folder (None) under ``root``, by relative path."""
    out: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        out[path.relative_to(root).as_posix()] = path.read_bytes() if path.is_file() else None
    return out


async def test_an_added_file_is_created_with_its_folders_and_the_result_shape(
    host: ToolHost, ws: Path
) -> None:
    result = await apply(host, "*** Add File: nested/bar.md\n+This is a new file\n+second")
    assert result == {
        "files": [{"path": "nested/bar.md", "action": "add", "hunks": []}],
        "diff": "--- /dev/null\n+++ b/nested/bar.md\n@@ -0,0 +1,2 @@\n+This is a new file\n"
        "+second\n",
        "truncated": False,
    }
    assert (ws / "nested/bar.md").read_text() == "This is a new file\nsecond\n"
    assert model_text("ApplyPatch", result) == (
        "Added nested/bar.md.\n--- /dev/null\n+++ b/nested/bar.md\n@@ -0,0 +1,2 @@\n"
        "+This is a new file\n+second\n"
    )


async def test_add_delete_and_update_in_one_patch(host: ToolHost, ws: Path) -> None:
    (ws / "modify.txt").write_text("line1\nline2\n")
    (ws / "delete.txt").write_text("obsolete\n")
    result = await apply(
        host,
        "*** Add File: nested/new.txt\n+created\n*** Delete File: delete.txt\n"
        "*** Update File: modify.txt\n@@\n-line2\n+changed",
    )
    assert result["files"] == [
        {"path": "nested/new.txt", "action": "add", "hunks": []},
        {"path": "delete.txt", "action": "delete", "hunks": []},
        {"path": "modify.txt", "action": "update", "hunks": [{"matched": "exact", "line": 2}]},
    ]
    assert tree(ws) == {
        "modify.txt": b"line1\nchanged\n",
        "nested": None,
        "nested/new.txt": b"created\n",
    }
    assert model_text("ApplyPatch", result).startswith(
        "Added nested/new.txt.\nDeleted delete.txt.\nUpdated modify.txt: exact at line 2.\n"
        "--- /dev/null\n+++ b/nested/new.txt\n"
    )


async def test_several_chunks_in_one_file_report_each_grade_and_line(
    host: ToolHost, ws: Path
) -> None:
    (ws / "multi.txt").write_text("line1\nline2  \nline3\n    line4\n")
    result = await apply(
        host, "*** Update File: multi.txt\n@@\n-line2\n+changed2\n@@\n-line4\n+changed4"
    )
    assert result["files"] == [
        {
            "path": "multi.txt",
            "action": "update",
            "hunks": [
                {"matched": "trailing-space", "line": 2},
                {"matched": "whitespace", "line": 4},
            ],
        }
    ]
    assert (ws / "multi.txt").read_text() == "line1\nchanged2\nline3\nchanged4\n"
    assert result["diff"] == (
        "--- a/multi.txt\n+++ b/multi.txt\n@@ -2 +2 @@\n-line2  \n+changed2\n"
        "@@ -4 +4 @@\n-    line4\n+changed4\n"
    )


async def test_a_move_to_a_new_folder_changes_and_renames(host: ToolHost, ws: Path) -> None:
    (ws / "old").mkdir()
    (ws / "old/name.txt").write_text("old content\n")
    (ws / "old/other.txt").write_text("unrelated\n")
    result = await apply(
        host,
        "*** Update File: old/name.txt\n*** Move to: renamed/dir/name.txt\n@@\n-old content\n"
        "+new content",
    )
    assert result["files"] == [
        {
            "path": "renamed/dir/name.txt",
            "action": "move",
            "from": "old/name.txt",
            "hunks": [{"matched": "exact", "line": 1}],
        }
    ]
    assert tree(ws) == {
        "old": None,
        "old/other.txt": b"unrelated\n",
        "renamed": None,
        "renamed/dir": None,
        "renamed/dir/name.txt": b"new content\n",
    }
    assert model_text("ApplyPatch", result).startswith(
        "Moved old/name.txt to renamed/dir/name.txt: exact at line 1.\n"
    )


async def test_an_empty_patch_is_refused(host: ToolHost, ws: Path) -> None:
    (ws / "foo.txt").write_text("stay\n")
    result = await call(host, "ApplyPatch", patch="*** Begin Patch\n*** End Patch")
    assert error(result) == (
        "TOOL_INVALID_ARGUMENT",
        "The patch has no file operation; nothing was changed. Give at least one '*** Add "
        "File:', '*** Delete File:' or '*** Update File:' section between '*** Begin Patch' "
        "and '*** End Patch'.",
    )
    assert tree(ws) == {"foo.txt": b"stay\n"}


async def test_missing_context_is_no_match_and_changes_nothing(host: ToolHost, ws: Path) -> None:
    (ws / "modify.txt").write_text("line1\nline2\n")
    result = await apply(host, "*** Update File: modify.txt\n@@\n-missing\n+changed")
    code, message = error(result)
    assert code == "TOOL_NO_MATCH"
    assert message.startswith(
        "Chunk 1 of the update of modify.txt (patch line 3) was not found: these lines are "
        "not in modify.txt, not even ignoring whitespace:\n  -missing\n"
    )
    assert tree(ws) == {"modify.txt": b"line1\nline2\n"}


async def test_deleting_a_missing_file_or_a_folder_is_refused(host: ToolHost, ws: Path) -> None:
    (ws / "dir").mkdir()
    (ws / "dir/foo.txt").write_text("x\n")
    missing = await apply(host, "*** Delete File: missing.txt")
    assert error(missing) == (
        "TOOL_NOT_FOUND",
        "missing.txt does not exist, so '*** Delete File: missing.txt' (patch line 2) cannot "
        "delete it. Nothing was changed; check the path with Glob.",
    )
    folder = await apply(host, "*** Delete File: dir")
    assert error(folder)[0] == "TOOL_IS_DIRECTORY"
    assert tree(ws) == {"dir": None, "dir/foo.txt": b"x\n"}


async def test_an_update_without_chunks_is_refused_at_its_line(host: ToolHost, ws: Path) -> None:
    result = await apply(host, "*** Update File: foo.txt")
    assert error(result) == (
        "TOOL_INVALID_ARGUMENT",
        "The patch is not valid at line 2: the update of foo.txt is empty; give its chunks "
        "('@@' then the lines). Fix that line and send the whole patch again; no file was "
        "changed.",
    )


async def test_an_update_of_a_missing_file_is_refused(host: ToolHost, ws: Path) -> None:
    result = await apply(host, "*** Update File: missing.txt\n@@\n-old\n+new")
    assert error(result)[0] == "TOOL_NOT_FOUND"
    assert "'*** Add File:'" in error(result)[1]


async def test_an_invalid_file_header_is_refused(host: ToolHost, ws: Path) -> None:
    result = await apply(host, "*** Frobnicate File: foo")
    code, message = error(result)
    assert code == "TOOL_INVALID_ARGUMENT"
    assert message.startswith(
        "The patch is not valid at line 2: '*** Frobnicate File: foo' is not a file operation"
    )


async def test_overwriting_an_existing_file_needs_a_read_first_unlike_codex(
    host: ToolHost, ws: Path
) -> None:
    (ws / "duplicate.txt").write_text("old content\n")
    (ws / "old").mkdir()
    (ws / "old/name.txt").write_text("from\n")
    (ws / "renamed").mkdir()
    (ws / "renamed/name.txt").write_text("existing\n")
    add = await apply(host, "*** Add File: duplicate.txt\n+new content")
    assert error(add)[0] == "TOOL_NOT_READ"
    move = "*** Update File: old/name.txt\n*** Move to: renamed/name.txt\n@@\n-from\n+new"
    assert error(await apply(host, move))[0] == "TOOL_NOT_READ"
    assert (ws / "duplicate.txt").read_text() == "old content\n"
    # Once Read, Codex's outcome: the file is replaced, the move lands on the destination.
    await call(host, "Read", path="duplicate.txt")
    await call(host, "Read", path="renamed/name.txt")
    assert "error" not in await apply(host, "*** Add File: duplicate.txt\n+new content")
    assert "error" not in await apply(host, move)
    assert (ws / "duplicate.txt").read_text() == "new content\n"
    assert not (ws / "old/name.txt").exists()
    assert (ws / "renamed/name.txt").read_text() == "new\n"


async def test_a_failure_in_a_later_file_leaves_the_earlier_ones_untouched(
    host: ToolHost, ws: Path
) -> None:
    # Codex leaves created.txt behind; ApplyPatch changes every file or none.
    (ws / "a.txt").write_text("a\n")
    (ws / "b.txt").write_text("b\n")
    result = await apply(
        host,
        "*** Add File: created.txt\n+hello\n*** Update File: a.txt\n@@\n-a\n+A\n"
        "*** Update File: b.txt\n@@\n-nope\n+B",
    )
    assert error(result)[0] == "TOOL_NO_MATCH"
    assert tree(ws) == {"a.txt": b"a\n", "b.txt": b"b\n"}


async def test_an_updated_file_gets_a_final_newline(host: ToolHost, ws: Path) -> None:
    (ws / "no_newline.txt").write_text("no newline at end")
    body = "*** Update File: no_newline.txt\n@@\n-no newline at end\n+first line\n+second line"
    await apply(host, body)
    assert (ws / "no_newline.txt").read_text() == "first line\nsecond line\n"


async def test_padded_markers_unicode_deletion_only_and_end_of_file(
    host: ToolHost, ws: Path
) -> None:
    (ws / "foo.txt").write_text("line1\nnaïve café\nline3\n")
    (ws / "lines.txt").write_text("line1\nline2\nline3\n")
    (ws / "tail.txt").write_text("first\nsecond\n")
    (ws / "obsolete.txt").write_text("x\n")
    patch = (
        " *** Begin Patch \n"
        "  *** Update File: foo.txt\n@@\n line1\n-naïve café\n+naïve café ✅\n"
        "*** Update File: lines.txt\n@@\n line1\n-line2\n line3\n"
        "*** Update File: tail.txt\n@@\n first\n-second\n+second updated\n*** End of File\n"
        "*** Delete File: obsolete.txt\n"
        " *** End Patch\n"
    )
    result = await call(host, "ApplyPatch", patch=patch)
    assert "error" not in result, result
    assert tree(ws) == {
        "foo.txt": "line1\nnaïve café ✅\nline3\n".encode(),
        "lines.txt": b"line1\nline3\n",
        "tail.txt": b"first\nsecond updated\n",
    }


async def test_a_file_never_read_may_be_patched_but_not_one_changed_since_its_read(
    host: ToolHost, ws: Path
) -> None:
    (ws / "a.py").write_text("x = 1\n")
    await call(host, "Read", path="a.py")
    writer = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "open('a.py', 'w').write('x = 3\\n')", cwd=ws
    )
    assert await asyncio.wait_for(writer.wait(), CALL_TIMEOUT_S) == 0
    result = await apply(host, "*** Update File: a.py\n@@\n-x = 3\n+x = 4")
    assert error(result)[0] == "TOOL_FILE_CHANGED"
    assert (ws / "a.py").read_text() == "x = 3\n"
    await call(host, "Read", path="a.py")
    assert "error" not in await apply(host, "*** Update File: a.py\n@@\n-x = 3\n+x = 4")
    # The session wrote it: an Edit needs no Read now.
    edit = await call(host, "Edit", path="a.py", oldString="x = 4", newString="x = 5")
    assert edit["replacements"] == 1


async def test_a_patch_applied_twice_says_already_applied(host: ToolHost, ws: Path) -> None:
    (ws / "a.py").write_text("def f():\n    return 1\n")
    body = "*** Update File: a.py\n@@ def f():\n-    return 1\n+    return 2"
    first = await apply(host, body)
    assert "error" not in first
    second = await apply(host, body)
    assert second == {
        "files": [
            {
                "path": "a.py",
                "action": "update",
                "hunks": [{"matched": "exact", "line": 2, "alreadyApplied": True}],
                "alreadyApplied": True,
            }
        ],
        "diff": "",
        "truncated": False,
        "notice": "The patch was already applied: every file already is as it makes it; "
        "nothing was written.",
    }
    assert model_text("ApplyPatch", second) == (
        "a.py: already applied, unchanged (exact at line 2).\n"
        "[The patch was already applied: every file already is as it makes it; nothing was "
        "written.]"
    )


async def test_an_ambiguous_chunk_names_its_lines(host: ToolHost, ws: Path) -> None:
    (ws / "a.py").write_text("if a:\n    go()\nif b:\n    go()\n")
    result = await apply(host, "*** Update File: a.py\n@@\n-    go()\n+    stop()")
    code, message = error(result)
    assert code == "TOOL_AMBIGUOUS_MATCH"
    assert "matches 2 places, at lines 2, 4." in message


async def test_mode_crlf_and_bom_are_kept(host: ToolHost, ws: Path) -> None:
    path = ws / "run.sh"
    path.write_bytes(b"\xef\xbb\xbf#!/bin/sh\r\necho one\r\n")
    path.chmod(0o754)
    await apply(host, "*** Update File: run.sh\n@@\n-echo one\n+echo two\n+echo three")
    assert path.read_bytes() == b"\xef\xbb\xbf#!/bin/sh\r\necho two\r\necho three\r\n"
    assert os.stat(path).st_mode & 0o777 == 0o754


async def test_paths_outside_the_workspace_are_not_allowed(
    host: ToolHost, ws: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    (ws / "a.txt").write_text("a\n")
    result = await apply(host, f"*** Update File: a.txt\n@@\n-a\n+A\n*** Delete File: {outside}")
    assert error(result)[0] == "TOOL_PATH_NOT_ALLOWED"
    escape = await apply(host, "*** Add File: ../escape.txt\n+x")
    assert error(escape)[0] == "TOOL_PATH_NOT_ALLOWED"
    assert outside.read_text() == "keep\n"
    assert (ws / "a.txt").read_text() == "a\n"
    assert not (tmp_path / "escape.txt").exists()


async def test_a_binary_file_is_not_updated(host: ToolHost, ws: Path) -> None:
    (ws / "blob.bin").write_bytes(b"\x00\x01 x\n")
    result = await apply(host, "*** Update File: blob.bin\n@@\n- x\n+ y")
    assert error(result)[0] == "TOOL_BINARY_CONTENT"


@pytest.mark.parametrize("patch", ["", "no patch here", "*** Begin Patch\n*** Add File: a"])
async def test_a_patch_that_does_not_parse_changes_nothing(
    host: ToolHost, ws: Path, patch: str
) -> None:
    result = await call(host, "ApplyPatch", patch=patch)
    assert error(result)[0] == "TOOL_INVALID_ARGUMENT"
    assert tree(ws) == {}


def test_the_cli_applies_a_patch_and_prints_the_model_text(tmp_path: Path, ws: Path) -> None:
    (ws / "a.txt").write_text("one\ntwo\n")
    patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+2\n*** End Patch"
    args = json.dumps({"patch": patch})
    out = run_cli("call", "ApplyPatch", args, "--text", "--data-dir", str(tmp_path / "d"), cwd=ws)
    assert (out.returncode, out.stdout) == (
        0,
        "Updated a.txt: exact at line 1.\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n"
        "-two\n+2\n",
    )
    assert (ws / "a.txt").read_text() == "one\n2\n"


async def test_a_symlink_is_not_deleted_or_moved_through(host: ToolHost, ws: Path) -> None:
    (ws / "real.txt").write_text("x\n")
    (ws / "link.txt").symlink_to("real.txt")
    deleted = await apply(host, "*** Delete File: link.txt")
    assert error(deleted) == (
        "TOOL_NOT_REGULAR_FILE",
        "link.txt (patch line 2) is a symlink (to real.txt); ApplyPatch deletes and moves "
        "files, not links. Nothing was changed; name the file itself, or remove the link "
        "with Bash.",
    )
    moved = await apply(host, "*** Update File: link.txt\n*** Move to: b.txt\n@@\n-x\n+y")
    assert error(moved)[0] == "TOOL_NOT_REGULAR_FILE"
    # Changing the file through the link is an Edit's rule: the file changes, the link stays.
    assert "error" not in await apply(host, "*** Update File: link.txt\n@@\n-x\n+y")
    assert (ws / "real.txt").read_text() == "y\n"
    assert (ws / "link.txt").is_symlink()


async def test_a_path_through_a_file_is_a_clear_error(host: ToolHost, ws: Path) -> None:
    (ws / "blocker").write_text("a file, not a folder\n")
    result = await apply(host, "*** Add File: blocker/x.txt\n+x")
    assert "error" in result, result
    assert result["error"]["code"].startswith("TOOL_")
    assert tree(ws) == {"blocker": b"a file, not a folder\n"}


def test_a_commit_that_fails_before_renaming_leaves_no_file_and_no_new_folder(
    tmp_path: Path,
) -> None:
    from toolbound.paths import Resolved
    from toolbound.results import ToolError
    from toolbound.tools.apply_patch import _commit, _File

    (tmp_path / "kept.txt").write_text("kept\n")
    other = tmp_path / "other.txt"
    other.write_text("o\n")
    new = _File(
        Resolved(
            tmp_path / "n1/n2/new.txt",
            "workspace",
            "n1/n2/new.txt",
            tmp_path,
            ("n1", "n2", "new.txt"),
        ),
        None,
        None,
        b"n\n",
    )
    # The stat of another file: the check before the renames sees a change.
    changed = _File(
        Resolved(tmp_path / "kept.txt", "workspace", "kept.txt", tmp_path, ("kept.txt",)),
        os.stat(other),
        b"kept\n",
        b"changed\n",
    )
    with pytest.raises(ToolError) as caught:
        _commit([new, changed])
    assert caught.value.code == "TOOL_FILE_CHANGED"
    assert tree(tmp_path) == {"kept.txt": b"kept\n", "other.txt": b"o\n"}


async def test_a_partly_applied_patch_applies_the_rest_and_says_which(
    host: ToolHost, ws: Path
) -> None:
    (ws / "a.txt").write_text("A\nb\n")
    result = await apply(host, "*** Update File: a.txt\n@@\n-a\n+A\n@@\n-b\n+B")
    assert result["notice"] == (
        "1 chunk was already applied (the new lines were in the file) and left as they are."
    )
    assert model_text("ApplyPatch", result) == (
        "Updated a.txt: exact at line 1 (already applied), exact at line 2.\n"
        "--- a/a.txt\n+++ b/a.txt\n@@ -2 +2 @@\n-b\n+B\n"
        "[1 chunk was already applied (the new lines were in the file) and left as they are.]"
    )
    assert (ws / "a.txt").read_text() == "A\nB\n"
