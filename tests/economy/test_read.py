"""Read under the economy profile: re-reads answered ``unchanged``, measured windows.

Every reduction is shown with the way its fact comes back: the earlier call's
result holds what an ``unchanged`` re-read stands for; a changed byte, another
window or a checkpoint of the session brings the content back in full.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from support import run_cli
from toolbound import ToolHost, model_text
from toolbound.edit import ReadRecord
from toolbound.limits import DEFAULT_LIMITS, KB
from toolbound.paths import Roots
from toolbound.store import SessionStore
from toolbound.tools.read import read_window

ECONOMY_WINDOW_LINES = DEFAULT_LIMITS.economy.read_window.max_lines
ECONOMY_WINDOW_BYTES = DEFAULT_LIMITS.economy.read_window.max_bytes

CALL_TIMEOUT_S = 20
SESSION = "econ-read"
# 60 lines of 40 bytes: a text the unchanged notice is much shorter than.
TEXT = "".join(f"line {n:02d} {'.' * 31}\n" for n in range(60))


def unchanged_notice(call_id: str, shown: str, *, next_offset: int | None = None) -> str:
    said = (
        f"Unchanged since {call_id} ({shown}, same bytes; that result is in your context). "
        "Read another offset or limit for the text again; after a checkpoint this Read "
        "returns it in full."
    )
    if next_offset is not None:
        said += f" The file continues: call Read with offset {next_offset} for the next lines."
    return said


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text(TEXT)
    return root


@pytest.fixture
async def host(tmp_path: Path, ws: Path) -> AsyncIterator[ToolHost]:
    async with ToolHost(ws, data_dir=tmp_path / "data", session_id=SESSION, profile="economy") as h:
        yield h


async def read(host: ToolHost, call_id: str, path: str = "a.txt", **args: Any) -> dict[str, Any]:
    return await asyncio.wait_for(
        host.call("Read", {"path": path, **args}, tool_call_id=call_id), CALL_TIMEOUT_S
    )


def full(content: str = TEXT, *, lines: int = 60) -> dict[str, Any]:
    return {
        "path": "a.txt",
        "root": "workspace",
        "content": content,
        "offset": 0,
        "lineCount": lines,
        "totalLines": lines,
        "fileBytes": len(content.encode()),
        "truncated": False,
    }


# -- re-reads ----------------------------------------------------------------------------


async def test_a_re_read_of_an_unchanged_window_is_answered_by_the_earlier_call(
    host: ToolHost, tmp_path: Path
) -> None:
    assert await read(host, "c1") == full()
    events = [e async for e in host.stream("Read", {"path": "a.txt"}, tool_call_id="c2")]
    notice = unchanged_notice("c1", "lines 1-60")
    assert events[-1]["result"] == {
        **full(""),
        "fileBytes": len(TEXT),
        "notice": notice,
        "unchanged": True,
    }
    # The model text is the notice alone, and the call it names holds the content.
    assert events[-1]["text"] == f"[{notice}]"
    with SessionStore(tmp_path / "data") as store:
        named = store.events("c1", session_id=SESSION)
    assert named[-1]["result"] == full()
    assert named[-1]["result"]["content"] == (host.workspace / "a.txt").read_text()
    # A third re-read names the call that holds the content, not the one that had none.
    assert (await read(host, "c3"))["notice"] == notice


async def test_the_unchanged_flag_is_true_and_absent_from_full_reads(host: ToolHost) -> None:
    first = await read(host, "c1")
    again = await read(host, "c2")
    assert "unchanged" not in first
    assert again["unchanged"] is True


async def test_a_changed_byte_in_the_window_reads_in_full_even_with_the_same_mtime(
    host: ToolHost, ws: Path
) -> None:
    path = ws / "a.txt"
    await read(host, "c1")
    before = path.stat()
    changed = TEXT.replace("line 30 .", "line 30 :")
    path.write_text(changed)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    assert await read(host, "c2") == full(changed)
    # The changed window is now the one in context.
    assert (await read(host, "c3"))["notice"] == unchanged_notice("c2", "lines 1-60")


async def test_another_offset_or_limit_brings_the_text_back_in_full(host: ToolHost) -> None:
    await read(host, "c1")
    assert (await read(host, "c2"))["unchanged"] is True
    assert (await read(host, "c3", limit=59))["content"] == TEXT[: 59 * 40]
    assert (await read(host, "c4", offset=1))["content"] == TEXT[40:]


async def test_a_change_outside_the_window_leaves_it_unchanged(host: ToolHost, ws: Path) -> None:
    lines = [f"row {n:04d} {'-' * 30}\n" for n in range(ECONOMY_WINDOW_LINES + 100)]
    (ws / "b.txt").write_text("".join(lines))
    first = await read(host, "c1", "b.txt")
    assert first["lineCount"] == ECONOMY_WINDOW_LINES
    lines[-1] = "changed past the window\n"
    (ws / "b.txt").write_text("".join(lines))
    again = await read(host, "c2", "b.txt")
    shown = f"lines 1-{ECONOMY_WINDOW_LINES}"
    assert again["notice"] == unchanged_notice("c1", shown, next_offset=ECONOMY_WINDOW_LINES)
    assert again["truncated"] is True
    # Lines inserted above a window move its text: the same offset reads in full.
    await read(host, "c3", "b.txt", offset=100, limit=50)
    (ws / "b.txt").write_text("new first line\n" + "".join(lines))
    moved = await read(host, "c4", "b.txt", offset=100, limit=50)
    assert moved["content"] == "".join(lines[99:149])


async def test_a_re_read_shorter_than_its_notice_is_returned_whole(
    host: ToolHost, ws: Path
) -> None:
    (ws / "t.txt").write_text("tiny\n")
    await read(host, "c1", "t.txt")
    again = await read(host, "c2", "t.txt")
    assert again["content"] == "tiny\n"
    assert "unchanged" not in again
    # While the same host answers a longer re-read unchanged: it is the size that chose.
    await read(host, "c3")
    assert (await read(host, "c4"))["unchanged"] is True


async def test_after_a_checkpoint_of_the_session_the_same_read_is_full_again(
    host: ToolHost, tmp_path: Path
) -> None:
    await read(host, "c1")
    assert (await read(host, "c2"))["unchanged"] is True
    # Another writer of the store (as `toolbound session checkpoint` would be).
    with SessionStore(tmp_path / "data") as other:
        other.session(SESSION).checkpoint(summary="reading a.txt")
    assert await read(host, "c3") == full()
    assert (await read(host, "c4"))["notice"] == unchanged_notice("c3", "lines 1-60")


async def test_the_exact_profile_reads_every_re_read_in_full(tmp_path: Path, ws: Path) -> None:
    async with ToolHost(ws, data_dir=tmp_path / "data", session_id=SESSION) as exact:
        assert await read(exact, "c1") == full()
        assert await read(exact, "c2") == full()


def test_a_record_that_cannot_learn_the_checkpoints_never_answers_unchanged(
    tmp_path: Path, ws: Path
) -> None:
    (tmp_path / "scratch").mkdir()
    roots = Roots.create(ws, tmp_path / "scratch")
    record = ReadRecord()

    def economy_read(call_id: str) -> dict[str, Any]:
        result = read_window(
            roots,
            "a.txt",
            offset=0,
            limit=ECONOMY_WINDOW_LINES,
            limits=DEFAULT_LIMITS,
            record=record,
            call_id=call_id,
            hints=True,
        )
        return result.to_wire()

    economy_read("c1")
    assert economy_read("c2")["unchanged"] is True
    record.checkpoint_count = lambda: None  # the store failed: nobody can say
    assert economy_read("c3") == full()


def test_re_reads_are_answered_across_processes_until_a_checkpoint(
    tmp_path: Path, ws: Path
) -> None:
    def call() -> dict[str, Any]:
        done = run_cli(
            "call",
            "Read",
            '{"path": "a.txt"}',
            "--session",
            SESSION,
            "--data-dir",
            str(tmp_path / "data"),
            "--profile",
            "economy",
            "--events",
            cwd=ws,
        )
        assert done.returncode == 0, done.stderr
        event: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
        assert event["text"] == model_text("Read", event["result"])
        return event

    first = call()
    assert first["result"] == full()
    assert call()["result"]["notice"] == unchanged_notice(first["toolCallId"], "lines 1-60")
    done = run_cli(
        "session",
        "checkpoint",
        SESSION,
        "--summary",
        "read a.txt",
        "--data-dir",
        str(tmp_path / "data"),
        cwd=ws,
    )
    assert done.returncode == 0, done.stderr
    after = call()
    assert after["result"] == full()
    assert call()["result"]["notice"] == unchanged_notice(after["toolCallId"], "lines 1-60")


# -- windows -----------------------------------------------------------------------------


async def test_an_economy_window_is_its_measured_lines_and_names_the_next_offset(
    host: ToolHost, ws: Path
) -> None:
    lines = [f"{n}\n" for n in range(1000)]
    (ws / "long.txt").write_text("".join(lines))
    first = await read(host, "c1", "long.txt")
    assert first["content"] == "".join(lines[:ECONOMY_WINDOW_LINES])
    assert first["notice"] == (
        f"Showing lines 1-{ECONOMY_WINDOW_LINES}; stopped at the {ECONOMY_WINDOW_LINES}-line "
        f"limit. The file continues: call Read with offset {ECONOMY_WINDOW_LINES} for the "
        "next lines."
    )
    # The next offset brings the next lines; a call's own limit is kept.
    nxt = await read(host, "c2", "long.txt", offset=ECONOMY_WINDOW_LINES, limit=500)
    assert nxt["content"] == "".join(lines[ECONOMY_WINDOW_LINES : ECONOMY_WINDOW_LINES + 500])
    # A limit of the host default is what a limit left out arrives as: the economy window.
    same = await read(host, "c3", "long.txt", offset=1, limit=DEFAULT_LIMITS.read_window_lines)
    assert same["lineCount"] == ECONOMY_WINDOW_LINES


async def test_an_economy_window_stops_at_its_byte_budget(host: ToolHost, ws: Path) -> None:
    wide = [f"{n:04d} {'w' * 195}\n" for n in range(ECONOMY_WINDOW_LINES)]
    (ws / "wide.txt").write_text("".join(wide))
    result = await read(host, "c1", "wide.txt")
    shown = ECONOMY_WINDOW_BYTES // 201
    assert result["content"] == "".join(wide[:shown])
    assert result["notice"] == (
        f"Showing lines 1-{shown}; stopped at the {ECONOMY_WINDOW_BYTES // KB}KB budget. The "
        f"file continues: call Read with offset {shown} for the next lines."
    )


async def test_the_exact_window_is_the_seeds(tmp_path: Path, ws: Path) -> None:
    (ws / "long.txt").write_text("".join(f"{n}\n" for n in range(3000)))
    async with ToolHost(ws, data_dir=tmp_path / "data") as exact:
        result = await read(exact, "c1", "long.txt")
    assert result["lineCount"] == DEFAULT_LIMITS.read_window_lines


async def test_a_clipped_line_names_grep_which_shows_its_rest(host: ToolHost, ws: Path) -> None:
    chars = DEFAULT_LIMITS.max_line_chars
    (ws / "bundle.min.js").write_text("f();" * chars + 'cfg={api:"https://x.example/v7"};\n')
    result = await read(host, "c1", "bundle.min.js")
    assert "https://x.example/v7" not in result["content"]
    assert result["notice"] == (
        f"Showing line 1 of 1 (end of file). 1 line longer than {chars} characters was "
        f'clipped to {chars}. For text inside a clipped line, Grep it (path "bundle.min.js"): '
        "Grep shows each match with the part of its line around it."
    )
    found = await host.call("Grep", {"pattern": "api:", "path": "bundle.min.js"})
    assert 'cfg={api:"https://x.example/v7"}' in found["matches"][0]["text"]


async def test_a_filling_context_shrinks_the_window_and_the_notice_names_it(
    tmp_path: Path, ws: Path
) -> None:
    lines = [f"row {n:04d}\n" for n in range(1000)]
    (ws / "long.txt").write_text("".join(lines))
    async with ToolHost(
        ws, data_dir=tmp_path / "d", profile="economy", context_window=1000
    ) as host:
        host.context_used(900)
        full = await host.call("Read", {"path": "long.txt"})
        host.context_used(100)
        roomy = await host.call("Read", {"path": "long.txt", "offset": 500})
    # 90% full: an eighth of 150 lines / 12KB, kept at the floor of 100 lines / 4KB.
    assert full["lineCount"] == 100
    assert full["content"] == "".join(lines[:100])
    assert full["notice"].endswith(
        "Read budget shrunk to 100 lines / 4KB (from 150 lines / 12KB): the context is 90% full."
    )
    assert "call Read with offset 100" in full["notice"]
    assert roomy["lineCount"] == ECONOMY_WINDOW_LINES
    assert "budget shrunk" not in roomy["notice"]


async def test_a_window_that_stops_short_names_the_definitions_further_on(
    tmp_path: Path, ws: Path, host: ToolHost
) -> None:
    body = "".join(f"x{n} = {n}\n" for n in range(ECONOMY_WINDOW_LINES + 10))
    (ws / "big.py").write_text(
        body + "class Later:\n    def method(self):\n        pass\ndef end():\n"
    )
    later = ECONOMY_WINDOW_LINES + 11
    result = await asyncio.wait_for(host.call("Read", {"path": "big.py"}), CALL_TIMEOUT_S)
    assert result["lineCount"] == ECONOMY_WINDOW_LINES
    assert result["notice"].endswith(
        f"call Read with offset {ECONOMY_WINDOW_LINES} for the next lines. "
        "Top-level definitions further on (line: text; Read offset = line - 1):"
        f"\n  {later}: class Later:\n  {later + 3}: def end():"
    )
    page = await asyncio.wait_for(
        host.call("Read", {"path": "big.py", "offset": later - 1, "limit": 1}), CALL_TIMEOUT_S
    )
    assert page["content"] == "class Later:\n"
    async with ToolHost(ws, data_dir=tmp_path / "exact") as exact:
        whole = await asyncio.wait_for(exact.call("Read", {"path": "big.py"}), CALL_TIMEOUT_S)
    assert "notice" not in whole
    assert whole["content"].endswith(
        "class Later:\n    def method(self):\n        pass\ndef end():\n"
    )
