"""Read through ToolHost.call: windows, paging, refusals, roots."""

from __future__ import annotations

import asyncio
import json
import os
import random
import socket
from pathlib import Path
from typing import Any

import pytest

from toolbound import ToolHost
from toolbound.arguments import ReadArgs
from toolbound.tools import ToolContext
from toolbound.tools import read as read_tool
from toolbound.tools.lineindex import SCAN_BLOCK_BYTES

CALL_TIMEOUT_S = 20


async def read(host: ToolHost, path: str, **args: Any) -> dict[str, Any]:
    return await asyncio.wait_for(host.call("Read", {"path": path, **args}), CALL_TIMEOUT_S)


def error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


# -- windows -----------------------------------------------------------------------------


async def test_a_small_file_reads_whole_with_its_line_count(host: ToolHost, ws: Path) -> None:
    (ws / "a.py").write_text("import os\n\nprint(os.getcwd())\n")
    assert await read(host, "a.py") == {
        "path": "a.py",
        "root": "workspace",
        "content": "import os\n\nprint(os.getcwd())\n",
        "offset": 0,
        "lineCount": 3,
        "totalLines": 3,
        "fileBytes": 30,
        "truncated": False,
    }


async def test_crlf_stays_crlf_and_a_missing_final_newline_stays_missing(
    host: ToolHost, ws: Path
) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "win.txt").write_bytes(b"one\r\ntwo\r\nthree")
    result = await read(host, "sub/win.txt", offset=1)
    assert result == {
        "path": "sub/win.txt",
        "root": "workspace",
        "content": "two\r\nthree",
        "offset": 1,
        "lineCount": 2,
        "totalLines": 3,
        "fileBytes": 15,
        "truncated": False,
    }


async def test_an_empty_file_is_an_empty_window(host: ToolHost, ws: Path) -> None:
    (ws / "empty.txt").write_bytes(b"")
    assert await read(host, "empty.txt") == {
        "path": "empty.txt",
        "root": "workspace",
        "content": "",
        "offset": 0,
        "lineCount": 0,
        "totalLines": 0,
        "fileBytes": 0,
        "truncated": False,
        "notice": "The file is empty.",
    }


@pytest.mark.parametrize("offset", [3, 50])
async def test_an_offset_past_the_end_says_how_many_lines_there_are(
    host: ToolHost, ws: Path, offset: int
) -> None:
    (ws / "three.txt").write_text("a\nb\nc\n")
    assert await read(host, "three.txt", offset=offset) == {
        "path": "three.txt",
        "root": "workspace",
        "content": "",
        "offset": offset,
        "lineCount": 0,
        "totalLines": 3,
        "fileBytes": 6,
        "truncated": False,
        "notice": f"offset {offset} is past the end: the file has 3 lines. "
        "Use an offset below 3 (all of them fit one window of 2000 lines, from offset 0).",
    }


async def test_the_window_stops_at_the_limit_and_names_the_next_offset(
    host: ToolHost, ws: Path
) -> None:
    (ws / "five.txt").write_text("1\n2\n3\n4\n5\n")
    assert await read(host, "five.txt", offset=1, limit=2) == {
        "path": "five.txt",
        "root": "workspace",
        "content": "2\n3\n",
        "offset": 1,
        "lineCount": 2,
        "fileBytes": 10,
        "truncated": True,
        "notice": "Showing lines 2-3; stopped at the 2-line limit. "
        "The file continues: call Read with offset 3 for the next lines.",
    }


async def test_a_window_ending_exactly_at_the_end_reports_the_total(
    host: ToolHost, ws: Path
) -> None:
    (ws / "two.txt").write_text("a\nb\n")
    result = await read(host, "two.txt", limit=2)
    assert (result["lineCount"], result.get("totalLines"), result["truncated"]) == (2, 2, False)


async def test_the_window_stops_at_the_48kb_budget_on_whole_lines(host: ToolHost, ws: Path) -> None:
    lines = [f"{i:04d}" + "x" * 95 + "\n" for i in range(1000)]  # 100 bytes each
    (ws / "wide.txt").write_text("".join(lines))
    result = await read(host, "wide.txt")
    assert result == {
        "path": "wide.txt",
        "root": "workspace",
        "content": "".join(lines[:491]),
        "offset": 0,
        "lineCount": 491,
        "fileBytes": 100_000,
        "truncated": True,
        "notice": "Showing lines 1-491; stopped at the 48KB budget. "
        "The file continues: call Read with offset 491 for the next lines.",
    }


async def test_lines_over_2000_characters_are_clipped_and_counted(host: ToolHost, ws: Path) -> None:
    text = "short\n" + "é" * 2500 + "\r\n" + "😀" * 2001 + "\n" + "end"
    (ws / "long.txt").write_text(text, newline="")
    result = await read(host, "long.txt")
    assert result == {
        "path": "long.txt",
        "root": "workspace",
        "content": "short\n" + "é" * 2000 + "\r\n" + "😀" * 2000 + "\n" + "end",
        "offset": 0,
        "lineCount": 4,
        "totalLines": 4,
        "fileBytes": len(text.encode()),
        "truncated": True,
        "notice": "Showing lines 1-4 of 4 (end of file). "
        "2 lines longer than 2000 characters were clipped to 2000.",
    }


async def test_a_single_huge_line_is_clipped_without_holding_it(host: ToolHost, ws: Path) -> None:
    (ws / "one.min.js").write_bytes(b"a" * 3_000_000 + b"\nnext\n")
    result = await read(host, "one.min.js")
    assert (result["content"], result["lineCount"], result["totalLines"]) == (
        "a" * 2000 + "\nnext\n",
        2,
        2,
    )
    assert result["truncated"] is True


async def test_invalid_utf8_becomes_replacement_characters_counted_in_the_notice(
    host: ToolHost, ws: Path
) -> None:
    (ws / "latin1.txt").write_bytes(b"caf\xe9\nna\xefve \xff\xfe\n")
    result = await read(host, "latin1.txt")
    assert result["content"] == "caf\ufffd\nna\ufffdve \ufffd\ufffd\n"
    assert result["notice"] == (
        "Showing lines 1-2 of 2 (end of file). 4 bytes of invalid UTF-8 were replaced with U+FFFD."
    )
    assert result["truncated"] is False


async def test_text_in_chinese_and_emoji_is_read_not_refused(host: ToolHost, ws: Path) -> None:
    text = "中文文本，没有问题。\n" * 50 + "emoji 😀🎉🚀\n"
    (ws / "文档.md").write_text(text)
    result = await read(host, "文档.md")
    assert (result["path"], result["content"], result["totalLines"]) == ("文档.md", text, 51)


# -- paging a big file --------------------------------------------------------------------


def mixed_text(n_lines: int, seed: int) -> str:
    """Lines of varied length and script, LF and CRLF, none over 2000 characters."""
    rng = random.Random(seed)
    words = ["alpha", "β", "中文", "😀", "x" * 40, "", "\t"]
    out = []
    for i in range(n_lines):
        body = f"{i}:" + " ".join(rng.choice(words) for _ in range(rng.randrange(0, 30)))
        out.append(body + rng.choice(["\n", "\n", "\r\n"]))
    return "".join(out) + "no final newline"


@pytest.fixture(scope="module")
def big_text() -> str:
    # Well over several scan blocks, so the line index records entries.
    text = mixed_text(60_000, seed=7)
    assert len(text.encode()) > 3 * SCAN_BLOCK_BYTES
    return text


async def test_paging_a_multi_megabyte_file_reassembles_it_exactly(
    host: ToolHost, ws: Path, big_text: str
) -> None:
    (ws / "big.log").write_text(big_text, newline="")
    pages: list[str] = []
    offset = 0
    for _ in range(1000):
        result = await read(host, "big.log", offset=offset)
        pages.append(result["content"])
        if "totalLines" in result:
            break
        assert result["truncated"] is True
        assert f"call Read with offset {offset + result['lineCount']}" in result["notice"]
        offset += result["lineCount"]
    assert "".join(pages) == big_text
    assert result["totalLines"] == 60_001
    assert result["fileBytes"] == len(big_text.encode())


async def test_any_offset_shows_the_right_lines_in_any_order(
    host: ToolHost, ws: Path, big_text: str
) -> None:
    (ws / "big.log").write_text(big_text, newline="")
    lines = big_text.splitlines(keepends=True)
    for offset in [59_990, 30_000, 0, 45_123, 1, 59_990, 12_345, 60_000, 44_000]:
        result = await read(host, "big.log", offset=offset, limit=3)
        assert result["content"] == "".join(lines[offset : offset + 3]), offset


async def test_a_file_that_grows_between_pages_continues_at_the_right_line(
    host: ToolHost, ws: Path
) -> None:
    log = ws / "app.log"
    log.write_text("".join(f"first {i}\n" for i in range(3000)))
    first = await read(host, "app.log", offset=2990)
    assert first["totalLines"] == 3000
    with log.open("a") as f:
        f.write("".join(f"second {i}\n" for i in range(500)))
    result = await read(host, "app.log", offset=2998, limit=4)
    assert result["content"] == "first 2998\nfirst 2999\nsecond 0\nsecond 1\n"
    assert result["fileBytes"] == log.stat().st_size


async def test_a_file_rewritten_with_the_same_size_is_read_afresh(host: ToolHost, ws: Path) -> None:
    doc = ws / "doc.txt"
    doc.write_text("aa\nbb\ncc\n")
    assert (await read(host, "doc.txt", offset=2))["content"] == "cc\n"
    doc.write_text("a\nb\nc\nd\ne\n"[:9])
    os.utime(doc, ns=(1, 1))
    assert (await read(host, "doc.txt", offset=2))["content"] == "c\nd\ne"


async def test_an_aborted_deep_read_says_so_and_the_next_call_continues(
    host: ToolHost, ws: Path
) -> None:
    (ws / "deep.txt").write_text("".join(f"row {i}\n" for i in range(100_000)))
    ctx = ToolContext(
        limits=host.limits,
        roots=host.roots,
        scratch=host.scratch,
        tool_call_id="aborted",
        emit=lambda _stream, _data: None,
        abort=asyncio.Event(),
    )
    ctx.abort.set()
    result = await asyncio.wait_for(
        read_tool.run(ReadArgs(path="deep.txt", offset=99_999), ctx), CALL_TIMEOUT_S
    )
    assert result.content == ""
    assert result.truncated is True
    assert result.notice is not None
    assert result.notice.startswith("Read was aborted while counting lines to offset 99999 (")
    again = await read(host, "deep.txt", offset=99_999)
    assert (again["content"], again["totalLines"]) == ("row 99999\n", 100_000)


# -- refusals -----------------------------------------------------------------------------


async def test_a_binary_extension_is_refused_naming_type_size_and_a_command(
    host: ToolHost, ws: Path
) -> None:
    # An icon: an image Read does not show (png, jpeg, gif and webp it does).
    (ws / "logo.ico").write_bytes(b"\x00\x00\x01\x00" + b"\x00" * 3004)
    assert await read(host, "logo.ico") == error(
        "TOOL_BINARY_CONTENT",
        "logo.ico is binary, not text: likely image, 2.9 KB (3008 bytes) (judged by "
        "its extension). Read shows text only. Inspect it with Bash instead: `file logo.ico` "
        "or `xxd logo.ico | head -n 20`.",
    )


async def test_a_nul_byte_in_the_first_4kb_is_refused(host: ToolHost, ws: Path) -> None:
    (ws / "my data.txt").write_bytes(b"header\x00\x01\x02 rest" * 10)
    assert await read(host, "my data.txt") == error(
        "TOOL_BINARY_CONTENT",
        "my data.txt is binary, not text: likely binary data, 140 bytes (its first 4 KB hold "
        "NUL bytes). Read shows text only. Inspect it with Bash instead: `file 'my data.txt'` "
        "or `xxd 'my data.txt' | head -n 20`.",
    )


async def test_a_text_file_rewritten_as_binary_is_refused_on_its_next_read(
    host: ToolHost, ws: Path
) -> None:
    (ws / "data.txt").write_bytes(b"plain text\n")
    assert (await read(host, "data.txt"))["content"] == "plain text\n"
    # Judged text once; the rewrite (same mtime second, say) is judged again.
    stat = (ws / "data.txt").stat()
    (ws / "data.txt").write_bytes(b"header\x00\x01\x02 rest")
    os.utime(ws / "data.txt", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (await read(host, "data.txt"))["error"]["code"] == "TOOL_BINARY_CONTENT"


async def test_mostly_unprintable_content_is_refused(host: ToolHost, ws: Path) -> None:
    (ws / "blob").write_bytes(bytes(range(1, 8)) * 100 + b"text" * 10)
    result = await read(host, "blob")
    assert result["error"]["code"] == "TOOL_BINARY_CONTENT"
    assert "over 30% of its first 4 KB is not printable text" in result["error"]["message"]


async def test_a_directory_is_refused_pointing_at_glob(host: ToolHost, ws: Path) -> None:
    (ws / "src").mkdir()
    assert await read(host, "src") == error(
        "TOOL_IS_DIRECTORY",
        'src is a directory; Read reads files. List what it holds with Glob (path "src", '
        'pattern "*"), then Read one of the files.',
    )


def not_regular(shown: str, kind: str) -> dict[str, Any]:
    return error(
        "TOOL_NOT_REGULAR_FILE",
        f"{shown} is a {kind}, not a regular file. Read does not open it (reading could block "
        "or never end); read a regular file instead.",
    )


async def test_a_fifo_without_a_writer_is_refused_at_once(host: ToolHost, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    assert await read(host, "pipe") == not_regular("pipe", "FIFO (named pipe)")


async def test_a_socket_is_refused(host: ToolHost, ws: Path) -> None:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(ws / "s.sock"))
        assert await read(host, "s.sock") == not_regular("s.sock", "socket")


async def test_a_device_is_refused(tmp_path: Path, ws: Path) -> None:
    devices = Path(os.devnull).parent
    async with ToolHost(ws, data_dir=tmp_path / "data", allow_external=[devices]) as host:
        assert await read(host, os.devnull) == not_regular(os.devnull, "character device")


async def test_a_missing_file_suggests_the_nearest_names(host: ToolHost, ws: Path) -> None:
    (ws / "pkg").mkdir()
    for name in ("config.yaml", "config.yml", "conftest.py", "README.md"):
        (ws / "pkg" / name).write_text("x\n")
    assert await read(host, "pkg/config.yalm") == error(
        "TOOL_NOT_FOUND",
        "pkg/config.yalm does not exist. Did you mean: pkg/config.yaml, pkg/config.yml? "
        'Otherwise find it with Glob (pattern "**/config.yalm").',
    )
    assert await read(host, "pkg/README.md/x") == error(
        "TOOL_NOT_FOUND", "pkg/README.md/x does not exist: pkg/README.md is a file, not a folder."
    )
    assert await read(host, "nowhere/x.txt") == error(
        "TOOL_NOT_FOUND",
        "nowhere/x.txt does not exist, nor does its folder nowhere; "
        'find it with Glob (pattern "**/x.txt").',
    )


PERMISSION_DENIED = error(
    "TOOL_PERMISSION_DENIED",
    "Permission denied reading secret.txt: toolbound's user may not read it (or search its "
    "folder). Read a file you have access to, or change its permissions.",
)


def test_an_unreadable_file_is_permission_denied(
    tmp_path: Path, ws: Path, unprivileged: Any
) -> None:
    secret = ws / "secret.txt"
    secret.write_text("no\n")
    secret.chmod(0)
    done = unprivileged(str(ws), str(tmp_path / "data"), "Read", '{"path": "secret.txt"}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == PERMISSION_DENIED


# -- roots --------------------------------------------------------------------------------


def outside(path: str, real: Path, ws: Path) -> dict[str, Any]:
    return error(
        "TOOL_PATH_NOT_ALLOWED",
        f"{path} resolves to {real}, outside the workspace ({ws}), this session's scratch "
        "dir and the approved external folders. Use a path inside the workspace, or start "
        "toolbound with --allow-external DIR to approve that folder.",
    )


async def test_paths_outside_the_roots_are_not_allowed(
    host: ToolHost, ws: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "outside.txt"
    secret.write_text("secret\n")
    (ws / "link.txt").symlink_to(secret)
    real_ws = host.roots.workspace  # already resolved: tmp dirs may sit behind a symlink
    real = real_ws.parent / "outside.txt"
    assert await read(host, "../outside.txt") == outside("../outside.txt", real, real_ws)
    assert await read(host, str(secret)) == outside(str(secret), real, real_ws)
    assert await read(host, "link.txt") == outside("link.txt", real, real_ws)


async def test_a_spill_file_reads_back_from_the_scratch_root(host: ToolHost) -> None:
    spilled = host.scratch.spill("bash-stdout", b"line 1\nline 2\n")
    assert spilled is not None
    assert await read(host, str(spilled)) == {
        "path": str(spilled.resolve()),
        "root": "scratch",
        "content": "line 1\nline 2\n",
        "offset": 0,
        "lineCount": 2,
        "totalLines": 2,
        "fileBytes": 14,
        "truncated": False,
    }


async def test_an_approved_external_folder_reads_with_an_absolute_path(
    tmp_path: Path, ws: Path
) -> None:
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "notes.txt").write_text("outside but approved\n")
    async with ToolHost(ws, data_dir=tmp_path / "data", allow_external=[ext]) as host:
        result = await read(host, str(ext / "notes.txt"))
    assert result == {
        "path": str((ext / "notes.txt").resolve()),
        "root": "external",
        "content": "outside but approved\n",
        "offset": 0,
        "lineCount": 1,
        "totalLines": 1,
        "fileBytes": 21,
        "truncated": False,
    }
