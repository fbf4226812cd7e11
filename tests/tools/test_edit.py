"""Edit and Write through ToolHost.call: read-before-write, refusals, file style, the diff."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from toolbound import SessionStore, ToolHost, model_text

CALL_TIMEOUT_S = 20


async def call(host: ToolHost, tool: str, **args: Any) -> dict[str, Any]:
    return await asyncio.wait_for(host.call(tool, args), CALL_TIMEOUT_S)


async def read(host: ToolHost, path: str, **args: Any) -> str:
    result = await call(host, "Read", path=path, **args)
    assert "error" not in result, result
    content: str = result["content"]
    return content


async def edit(host: ToolHost, path: str, old: str, new: str, **args: Any) -> dict[str, Any]:
    return await call(host, "Edit", path=path, oldString=old, newString=new, **args)


def code(result: dict[str, Any]) -> str:
    assert "error" in result, result
    value: str = result["error"]["code"]
    return value


# -- read before write -------------------------------------------------------------------


async def test_an_edit_of_a_file_not_read_is_refused(host: ToolHost, ws: Path) -> None:
    (ws / "a.py").write_text("x = 1\n")
    result = await edit(host, "a.py", "x = 1", "x = 2")
    assert code(result) == "TOOL_NOT_READ"
    assert "Read it first" in result["error"]["message"]
    # A client that opens an MCP session per call never keeps what it Read: say so.
    assert result["error"]["message"].endswith(
        "If you did Read it, your client may have opened a new session for this call "
        "(one MCP session per call): keep one session for the whole conversation."
    )
    overwrite = await call(host, "Write", path="a.py", content="y\n")
    assert code(overwrite) == "TOOL_NOT_READ"
    assert (ws / "a.py").read_text() == "x = 1\n"


async def test_a_read_then_an_edit_changes_the_file_and_returns_the_diff(
    host: ToolHost, ws: Path
) -> None:
    (ws / "a.py").write_text("import os\nx = 1\nprint(x)\n")
    await read(host, "a.py")
    result = await edit(host, "a.py", "x = 1", "x = 2")
    assert result == {
        "path": "a.py",
        "replacements": 1,
        "created": False,
        "diff": "--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n import os\n-x = 1\n+x = 2\n print(x)\n",
        "truncated": False,
    }
    assert (ws / "a.py").read_text() == "import os\nx = 2\nprint(x)\n"


async def test_another_process_changing_the_file_after_the_read_refuses_the_edit(
    host: ToolHost, ws: Path
) -> None:
    (ws / "a.py").write_text("x = 1\n")
    await read(host, "a.py")
    writer = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "open('a.py', 'w').write('x = 3\\n')", cwd=ws
    )
    assert await asyncio.wait_for(writer.wait(), CALL_TIMEOUT_S) == 0
    result = await edit(host, "a.py", "x = ", "y = ")
    assert code(result) == "TOOL_FILE_CHANGED"
    assert "Read it again" in result["error"]["message"]
    assert (ws / "a.py").read_text() == "x = 3\n"
    # A new Read lifts the refusal.
    await read(host, "a.py")
    assert (await edit(host, "a.py", "x = 3", "x = 4"))["replacements"] == 1


async def test_a_second_edit_needs_no_new_read(host: ToolHost, ws: Path) -> None:
    (ws / "a.py").write_text("a = 1\nb = 2\n")
    await read(host, "a.py")
    assert (await edit(host, "a.py", "a = 1", "a = 10"))["replacements"] == 1
    assert (await edit(host, "a.py", "b = 2", "b = 20"))["replacements"] == 1
    assert (ws / "a.py").read_text() == "a = 10\nb = 20\n"


async def change_in_another_process(path: Path, old: bytes, new: bytes) -> None:
    code = (
        "import sys; p = sys.argv[1]; d = open(p, 'rb').read(); "
        "open(p, 'wb').write(d.replace(sys.argv[2].encode(), sys.argv[3].encode(), 1))"
    )
    writer = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, str(path), old.decode(), new.decode()
    )
    assert await asyncio.wait_for(writer.wait(), CALL_TIMEOUT_S) == 0


async def test_an_empty_window_counts_as_a_read_of_where_the_file_ends(
    host: ToolHost, ws: Path
) -> None:
    (ws / "empty.txt").write_text("")
    assert await read(host, "empty.txt") == ""
    assert (await call(host, "Write", path="empty.txt", content="x\n"))["bytes"] == 2
    (ws / "short.txt").write_text("a\n")
    assert await read(host, "short.txt", offset=5) == ""
    assert (await edit(host, "short.txt", "a", "b"))["replacements"] == 1
    await read(host, "short.txt", offset=5)
    await change_in_another_process(ws / "short.txt", b"b\n", b"b\nc\n")
    assert code(await edit(host, "short.txt", "b", "d")) == "TOOL_FILE_CHANGED"


async def test_a_window_of_a_large_file_is_enough_and_only_its_bytes_are_checked(
    host: ToolHost, ws: Path
) -> None:
    big = ws / "big.log"
    big.write_text("".join(f"line {i}\n" for i in range(10_000)))
    window = await read(host, "big.log", offset=5000, limit=10)
    assert window.startswith("line 5000\n")
    # Outside the window: the agent made no claim about it, the Edit goes ahead.
    await change_in_another_process(big, b"line 9999\n", b"line END\n")
    assert (await edit(host, "big.log", "line 5003\n", "line THREE\n"))["replacements"] == 1
    # The Edit's own write is now what the session has seen; a change inside refuses.
    await change_in_another_process(big, b"line 5005\n", b"line FIVE\n")
    refused = await edit(host, "big.log", "line 5006\n", "line SIX\n")
    assert code(refused) == "TOOL_FILE_CHANGED"


async def test_a_window_changed_by_another_process_refuses_even_for_text_elsewhere(
    host: ToolHost, ws: Path
) -> None:
    big = ws / "big.log"
    big.write_text("".join(f"line {i}\n" for i in range(10_000)))
    await read(host, "big.log", offset=100, limit=5)
    await change_in_another_process(big, b"line 102\n", b"line TWO\n")
    refused = await edit(host, "big.log", "line 9000\n", "line NINE\n")
    assert code(refused) == "TOOL_FILE_CHANGED"
    assert "lines 101-105" in refused["error"]["message"]


async def test_a_read_with_a_clipped_long_line_counts_and_guards_what_it_showed(
    host: ToolHost, ws: Path
) -> None:
    path = ws / "min.js"
    path.write_text("head = 1\n" + "x" * 200_000 + "\ntail = 1\n")
    result = await call(host, "Read", path="min.js")
    assert result["truncated"] is True
    await change_in_another_process(path, b"head = 1", b"head = 9")
    assert code(await edit(host, "min.js", "tail = 1", "tail = 2")) == "TOOL_FILE_CHANGED"
    await read(host, "min.js")
    assert (await edit(host, "min.js", "tail = 1", "tail = 2"))["replacements"] == 1


async def test_one_session_s_read_does_not_count_for_another(
    host: ToolHost, tmp_path: Path, ws: Path
) -> None:
    (ws / "a.py").write_text("x = 1\n")
    await read(host, "a.py")
    async with ToolHost(ws, data_dir=tmp_path / "data", session_id="s2") as other:
        assert code(await edit(other, "a.py", "x = 1", "x = 2")) == "TOOL_NOT_READ"


# -- matching ------------------------------------------------------------------------------


async def test_no_match_and_ambiguous_match_name_what_to_do(host: ToolHost, ws: Path) -> None:
    (ws / "a.py").write_text("x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n")
    await read(host, "a.py")
    missing = await edit(host, "a.py", "w = 9", "w = 0")
    assert code(missing) == "TOOL_NO_MATCH"
    assert "Read the file again and copy the text exactly" in missing["error"]["message"]
    twice = await edit(host, "a.py", "x = 1", "x = 2")
    assert code(twice) == "TOOL_AMBIGUOUS_MATCH"
    assert "occurs 3 times in a.py (at lines 1, 3, 5)" in twice["error"]["message"]
    every = await edit(host, "a.py", "x = 1", "x = 2", replaceAll=True)
    assert every["replacements"] == 3
    assert (ws / "a.py").read_text() == "x = 2\ny = 2\nx = 2\nz = 3\nx = 2\n"


async def test_a_binary_file_is_refused(host: ToolHost, ws: Path) -> None:
    (ws / "blob.dat").write_bytes(b"\x00\x01\x02 x = 1\n")
    result = await edit(host, "blob.dat", "x = 1", "x = 2")
    assert code(result) == "TOOL_BINARY_CONTENT"
    assert (ws / "blob.dat").read_bytes() == b"\x00\x01\x02 x = 1\n"


async def test_arguments_have_strict_types(host: ToolHost, ws: Path) -> None:
    (ws / "a.py").write_text("x\n")
    await read(host, "a.py")
    assert code(await edit(host, "a.py", "x", "y", replaceAll="yes")) == "TOOL_INVALID_ARGUMENT"
    assert code(await call(host, "Write", path="a.py", content=5)) == "TOOL_INVALID_ARGUMENT"
    assert code(await call(host, "Edit", path="a.py", oldString="x")) == "TOOL_INVALID_ARGUMENT"


# -- several edits in one call ---------------------------------------------------------------


async def test_several_edits_apply_in_order_in_one_atomic_change(host: ToolHost, ws: Path) -> None:
    (ws / "a.py").write_text("import os\nx = 1\nprint(x)\n")
    await read(host, "a.py")
    edits = [
        {"oldString": "x = 1", "newString": "x = 2"},
        {"oldString": "print(x)", "newString": "print(x, y)"},
        {"oldString": "x", "newString": "v", "replaceAll": True},
    ]
    result = await call(host, "Edit", path="a.py", edits=edits)
    assert result == {
        "path": "a.py",
        "replacements": 4,
        "created": False,
        "diff": "--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n import os\n-x = 1\n-print(x)\n"
        "+v = 2\n+print(v, y)\n",
        "truncated": False,
    }
    assert (ws / "a.py").read_text() == "import os\nv = 2\nprint(v, y)\n"
    # The session wrote the whole file: a further Edit needs no Read.
    again = await call(host, "Edit", path="a.py", edits=[{"oldString": "y", "newString": "w"}])
    assert again["replacements"] == 1


async def test_a_failing_edit_among_several_changes_nothing(host: ToolHost, ws: Path) -> None:
    (ws / "a.py").write_text("a = 1\nb = 2\n")
    await read(host, "a.py")
    edits = [{"oldString": "a = 1", "newString": "a = 3"}, {"oldString": "c", "newString": "d"}]
    result = await call(host, "Edit", path="a.py", edits=edits)
    assert code(result) == "TOOL_NO_MATCH"
    assert result["error"]["message"].startswith("Edit 2 of 2 (edits[1]) failed")
    assert (ws / "a.py").read_text() == "a = 1\nb = 2\n"


async def test_edits_and_the_single_form_do_not_mix(host: ToolHost, ws: Path) -> None:
    (ws / "a.py").write_text("x\n")
    await read(host, "a.py")
    one = [{"oldString": "x", "newString": "y"}]
    both = await call(host, "Edit", path="a.py", oldString="x", newString="y", edits=one)
    assert code(both) == "TOOL_INVALID_ARGUMENT"
    assert (
        "give either 'edits' or 'oldString'/'newString'/'replaceAll', not both"
        in (both["error"]["message"])
    )
    assert code(await call(host, "Edit", path="a.py", edits=[])) == "TOOL_INVALID_ARGUMENT"
    wrong = await call(host, "Edit", path="a.py", edits=[{"oldString": "x"}])
    assert code(wrong) == "TOOL_INVALID_ARGUMENT"
    assert "'edits.0.newString' is required" in wrong["error"]["message"]
    neither = await call(host, "Edit", path="a.py")
    assert "'oldString' is required (or 'edits'" in neither["error"]["message"]
    assert (ws / "a.py").read_text() == "x\n"
    single = await call(host, "Edit", path="a.py", edits=one)
    assert single["replacements"] == 1
    assert single["diff"] == "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n"


# -- where it may write ----------------------------------------------------------------------


@pytest.fixture
async def roomy(tmp_path: Path, ws: Path) -> Any:
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "e.txt").write_text("x\n")
    (tmp_path / "outside.txt").write_text("x\n")
    (ws / "out").symlink_to(tmp_path / "outside.txt")
    async with ToolHost(ws, data_dir=tmp_path / "data", session_id="s1", allow_external=[ext]) as h:
        h.scratch.dir.mkdir(parents=True, exist_ok=True)
        (h.scratch.dir / "spill.txt").write_text("x\n")
        yield h


@pytest.mark.parametrize("tool", ["Edit", "Write"])
async def test_paths_outside_the_workspace_are_not_allowed(
    roomy: ToolHost, tmp_path: Path, tool: str
) -> None:
    args = {"oldString": "x", "newString": "y"} if tool == "Edit" else {"content": "y\n"}
    places = [
        "../outside.txt",
        "out",
        str(roomy.scratch.dir / "spill.txt"),
        str(tmp_path / "ext" / "e.txt"),
    ]
    for path in places:
        if not path.startswith(".."):
            # Readable roots (and the link, which Read refuses to leave by): read if it can.
            await call(roomy, "Read", path=path)
        result = await call(roomy, tool, path=path, **args)
        assert code(result) == "TOOL_PATH_NOT_ALLOWED", path
        assert "workspace only" in result["error"]["message"]
    assert (tmp_path / "outside.txt").read_text() == "x\n"
    assert (tmp_path / "ext" / "e.txt").read_text() == "x\n"
    assert (roomy.scratch.dir / "spill.txt").read_text() == "x\n"


# -- file style ------------------------------------------------------------------------------


async def test_crlf_and_a_bom_are_kept_with_text_copied_from_read(host: ToolHost, ws: Path) -> None:
    (ws / "win.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nthree\r\n")
    content = await read(host, "win.txt")
    old = content.splitlines(keepends=True)[1]
    assert old == "two\r\n"
    result = await edit(host, "win.txt", old, "TWO\r\n")
    assert result["replacements"] == 1
    assert (ws / "win.txt").read_bytes() == b"\xef\xbb\xbfone\r\nTWO\r\nthree\r\n"
    # Text typed with \n (not copied) still keeps the file CRLF.
    await edit(host, "win.txt", "TWO\nthree\n", "2\n3\n")
    assert (ws / "win.txt").read_bytes() == b"\xef\xbb\xbfone\r\n2\r\n3\r\n"
    assert (await read(host, "win.txt")) == "\ufeffone\r\n2\r\n3\r\n"


async def test_the_file_mode_is_kept(host: ToolHost, ws: Path) -> None:
    script = ws / "run.sh"
    script.write_text("echo one\n")
    script.chmod(0o751)
    await read(host, "run.sh")
    await edit(host, "run.sh", "one", "two")
    assert script.stat().st_mode & 0o7777 == 0o751
    assert script.read_text() == "echo two\n"


async def test_a_read_only_file_is_refused_by_edit_and_write_saying_how_to_change_it(
    host: ToolHost, ws: Path
) -> None:
    # Mode bits, not access(): the refusal holds for root, whom access() lets write.
    kept = ws / "kept.txt"
    kept.write_text("one\n")
    kept.chmod(0o444)
    await read(host, "kept.txt")
    refused = [
        await edit(host, "kept.txt", "one", "two"),
        await call(host, "Write", path="kept.txt", content="two\n"),
    ]
    assert refused == [
        {
            "error": {
                "code": "TOOL_PERMISSION_DENIED",
                "message": f"kept.txt is read-only (mode 0444); {tool} does not change a "
                "read-only file. If it should change, make it writable first (Bash: `chmod u+w "
                "kept.txt`), then call again.",
            }
        }
        for tool in ("Edit", "Write")
    ]
    assert (kept.read_text(), kept.stat().st_mode & 0o7777) == ("one\n", 0o444)
    kept.chmod(0o644)
    assert "error" not in await edit(host, "kept.txt", "one", "two")
    assert kept.read_text() == "two\n"


# -- Write -------------------------------------------------------------------------------------


async def test_write_creates_missing_parents_then_overwrites_without_a_read(
    host: ToolHost, ws: Path
) -> None:
    created = await call(host, "Write", path="src/pkg/new.py", content="a\nb\n")
    assert created == {
        "path": "src/pkg/new.py",
        "bytes": 4,
        "created": True,
        "diff": "--- /dev/null\n+++ b/src/pkg/new.py\n@@ -0,0 +1,2 @@\n+a\n+b\n",
        "truncated": False,
    }
    assert (ws / "src/pkg/new.py").read_text() == "a\nb\n"
    # It wrote the file, so it has seen all of it: overwriting needs no Read.
    again = await call(host, "Write", path="src/pkg/new.py", content="a\nc\n")
    assert again["created"] is False
    assert (
        again["diff"] == "--- a/src/pkg/new.py\n+++ b/src/pkg/new.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    )
    assert model_text("Write", again).startswith("Wrote src/pkg/new.py (4 bytes).\n--- a/")


async def test_a_large_diff_is_bounded_by_the_search_budget(host: ToolHost, ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"line {i}\n" for i in range(5000)))
    await read(host, "big.txt")
    result = await edit(host, "big.txt", "line", "LINE", replaceAll=True)
    assert result["replacements"] == 5000
    assert result["truncated"] is True
    assert result["notice"]
    assert result["diff"].count("\n") <= host.limits.search.max_lines
    assert len(result["diff"].encode()) <= host.limits.search.max_bytes
    assert (ws / "big.txt").read_text().count("LINE") == 5000


# -- recorded ----------------------------------------------------------------------------------


async def test_an_edit_is_recorded_and_replays_from_the_store(
    host: ToolHost, tmp_path: Path, ws: Path
) -> None:
    (ws / "a.py").write_text("x = 1\n")
    await read(host, "a.py")
    events = [
        e
        async for e in host.stream(
            "Edit", {"path": "a.py", "oldString": "1", "newString": "2"}, tool_call_id="e1"
        )
    ]
    with SessionStore(str(tmp_path / "data"), scratch_dir=tmp_path / "data") as store:
        assert store.events("e1") == events
    assert events[-1]["text"].startswith("Edited a.py: 1 replacement.\n--- a/a.py")


async def test_a_write_of_broken_text_answers_and_is_recorded_with_its_arguments(
    tmp_path: Path, ws: Path
) -> None:
    # A lone surrogate cannot go into a UTF-8 column as it is; the call is still recorded.
    async with ToolHost(ws, data_dir=tmp_path / "data", session_id="s1") as host:
        events = [
            e
            async for e in host.stream(
                "Write", {"path": "bad.txt", "content": "a\udcffb"}, tool_call_id="w1"
            )
        ]
    assert events[-1]["result"] == {
        "error": {
            "code": "TOOL_INVALID_ARGUMENT",
            "message": "Invalid arguments for Write: 'content' holds a lone surrogate (U+DCFF "
            "at character 1), which is not Unicode text; send the text itself (a file name "
            "that is not UTF-8 is written as the tools print it, each such byte as \\xHH). "
            "Fix the arguments and call again.",
        }
    }
    with SessionStore(str(tmp_path / "data"), scratch_dir=tmp_path / "data") as store:
        assert store.events("w1") == events
        calls = store.tool_calls("s1")
    assert [(c["tool"], c["args"]) for c in calls] == [
        ("Write", {"path": "bad.txt", "content": "a\udcffb"})
    ]
