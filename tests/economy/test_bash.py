"""Economy Bash: what a terminal shows, both ends of stdout, spills that keep both ends.

Every reduction shows its fact surviving in the result or coming back through
the spill file; the chunks and the store keep the raw bytes.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support import run_main
from toolbound import SessionStore, ToolHost, model_text
from toolbound.bounds.headtail import gap_marker

SUMMARY = "seq 1 300000; echo SUMMARY: 1 failed"
CALL_TIMEOUT_S = 60


@pytest.fixture
async def host(tmp_path: Path) -> Any:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with ToolHost(
        workspace=ws, data_dir=tmp_path / "data", session_id="e1", profile="economy"
    ) as h:
        yield h


async def bash(host: ToolHost, command: str) -> dict[str, Any]:
    return await asyncio.wait_for(host.call("Bash", {"command": command}), CALL_TIMEOUT_S)


def python(code: str) -> str:
    return f"{sys.executable} -c '{code}'"


def spill_of(result: dict[str, Any], stream: str) -> bytes:
    return Path(result["spill"][stream]).read_bytes()


@pytest.fixture
def summary_raw() -> bytes:
    """The summary command's whole stdout, as bash prints it."""
    return subprocess.run(["bash", "-c", SUMMARY], capture_output=True, check=True).stdout


async def test_a_test_runs_closing_summary_is_in_the_result_and_in_the_spill(
    host: ToolHost, summary_raw: bytes
) -> None:
    raw = summary_raw
    result = await bash(host, SUMMARY)
    spill = result["spill"]["stdout"]
    head = "".join(f"{i}\n" for i in range(1, 101))
    tail = "".join(f"{i}\n" for i in range(299902, 300001)) + "SUMMARY: 1 failed\n"
    cut = len(raw) - len(head) - len(tail)
    assert result["stdout"] == (
        f"{head}[truncated: kept the first 100 and the last 100 of 300001 lines; "
        f"299801 lines ({cut} bytes) cut here; limit 200 lines / 4KB. "
        f"Full output saved to {spill} — Grep it, or Read it with offset/limit.]\n{tail}"
    )
    assert result["totals"]["stdout"] == {"bytes": len(raw), "lines": 300001}
    half = 256 * 1024
    dropped = raw[half:-half]
    assert result["omitted"]["stdout"] == {"bytes": len(dropped), "lines": dropped.count(b"\n")}
    # The spill keeps both ends, the capture's gap marked on a line of its own, and the
    # whole file, marker included, is within SPILL_MAX_BYTES (512 KB).
    spilled = spill_of(result, "stdout")
    kept_head = spilled.index(b"\n[truncated: ")
    kept_tail = len(spilled) - spilled.index(b".]\n", kept_head) - 3
    gap = gap_marker(
        dropped_bytes=len(raw) - kept_head - kept_tail,
        dropped_newlines=raw[kept_head:-kept_tail].count(b"\n"),
        head_ceiling_bytes=half,
        tail_ceiling_bytes=half,
    )
    assert spilled == raw[:kept_head] + b"\n" + gap.encode() + b"\n" + raw[-kept_tail:]
    assert 2 * half - 200 < len(spilled) <= 2 * half
    assert abs(kept_head - kept_tail) <= 1
    assert model_text("Bash", result).endswith("SUMMARY: 1 failed\n</stdout>")


@pytest.mark.slow  # big data
async def test_nine_megabytes_of_progress_bar_leave_finished_ok_in_view(host: ToolHost) -> None:
    bar = (
        "import sys\n"
        "w = sys.stdout.write\n"
        'for i in range(300000): w(f"\\r\\x1b[32m{i // 3000:3d}%\\x1b[0m |{'
        'chr(35) * (i % 20):<20}|")\n'
        'w("\\n\\x1b[1mFINISHED OK\\x1b[0m\\n")\n'
    )
    events = [e async for e in host.stream("Bash", {"command": python(bar)}, tool_call_id="bar")]
    result = events[-1]["result"]
    assert result["totals"]["stdout"]["bytes"] > 9_000_000
    stdout = result["stdout"]
    assert stdout.endswith(" 99% |################### |\nFINISHED OK\n")
    assert "\x1b" not in stdout
    assert "\r" not in stdout
    assert len(stdout.encode()) < 1024
    # The live chunks keep the bytes as they came.
    chunks = "".join(e["data"] for e in events if e["type"] == "chunk")
    first = "\r\x1b[32m  0%\x1b[0m |                    |\r\x1b[32m  0%\x1b[0m |#    "
    assert chunks.startswith(first)
    assert result["notice"].startswith("stdout is shown as a terminal shows it: ")
    # The spill holds the shown ends, the last one ending with the verdict.
    assert spill_of(result, "stdout").endswith(b" 99% |################### |\nFINISHED OK\n")


async def test_styling_leaves_the_model_text_and_stays_in_the_chunks_and_the_store(
    tmp_path: Path,
) -> None:
    command = "printf '\\033[31mFAILED\\033[0m test_x\\n\\033]8;;http://x\\033\\\\link\\033]8;;\\033\\\\\\n'"
    async with ToolHost(
        workspace=tmp_path, data_dir=tmp_path / "data", session_id="e2", profile="economy"
    ) as h:
        events = [e async for e in h.stream("Bash", {"command": command}, tool_call_id="s1")]
    raw = "\x1b[31mFAILED\x1b[0m test_x\n\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n"
    shown = "FAILED test_x\nlink\n"
    result = events[-1]["result"]
    assert result["stdout"] == shown
    assert result["truncated"] is False
    # totals count the raw stream: minus the text shown, that is what was left out.
    assert result["totals"]["stdout"] == {"bytes": len(raw), "lines": 2}
    assert events[-1]["text"] == (
        "[exit status 0]\n"
        f"[stdout is shown as a terminal shows it: {len(raw) - len(shown)} bytes of overwritten "
        "progress, erased lines and styling left out.]\n"
        f"<stdout>\n{shown}</stdout>"
    )
    assert [e["data"] for e in events if e["type"] == "chunk"] == [raw]
    with SessionStore(str(tmp_path / "data"), scratch_dir=tmp_path / "data") as store:
        assert store.events("s1") == events


async def test_stderr_keeps_its_last_words_and_its_first_and_spills_the_rest(
    host: ToolHost,
) -> None:
    code = (
        "import sys\n"
        'for i in range(5000): print(f"warning {i}: deprecated call", file=sys.stderr)\n'
        'print("Error: the last word", file=sys.stderr)\n'
        "sys.exit(3)\n"
    )
    result = await bash(host, python(code))
    assert result["exitCode"] == 3
    stderr = result["stderr"]
    assert stderr.startswith("warning 0: deprecated call\n")
    assert stderr.endswith("warning 4999: deprecated call\nError: the last word\n")
    assert "[truncated: kept the first 18 and the last 51 of 5001 lines;" in stderr
    spill = spill_of(result, "stderr")
    assert b"warning 2500: deprecated call\n" in spill
    assert spill.endswith(b"Error: the last word\n")


async def test_the_exact_profile_keeps_only_the_head_of_the_same_run(tmp_path: Path) -> None:
    async with ToolHost(workspace=tmp_path, data_dir=tmp_path / "data") as h:
        result = await bash(h, SUMMARY)
    assert "SUMMARY" not in result["stdout"]
    assert b"SUMMARY" not in spill_of(result, "stdout")


async def test_a_filling_context_shrinks_the_stream_budget_and_the_spill_keeps_it_all(
    tmp_path: Path,
) -> None:
    async with ToolHost(
        workspace=tmp_path, data_dir=tmp_path / "data", profile="economy", context_window=1000
    ) as h:
        h.context_used(800)
        result = await bash(h, "seq 1 1000")
    assert result["notice"] == (
        "Bash stdout budget shrunk to 100 lines / 4KB (from 200 lines / 4KB): "
        "the context is 80% full."
    )
    head = "".join(f"{i}\n" for i in range(1, 51))
    assert result["stdout"].startswith(
        f"{head}[truncated: kept the first 50 and the last 50 of 1000 lines;"
    )
    assert result["stdout"].endswith(
        "limit 100 lines / 4KB. Full output saved to "
        f"{result['spill']['stdout']} — Grep it, or Read it with offset/limit.]\n"
        + "".join(f"{i}\n" for i in range(951, 1001))
    )
    assert spill_of(result, "stdout") == "".join(f"{i}\n" for i in range(1, 1001)).encode()


def test_the_cli_prints_the_economy_text_with_both_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = ("--data-dir", str(tmp_path / "data"), "--workspace", str(tmp_path))
    args = json.dumps({"command": SUMMARY})
    economy = run_main(
        capsys, "call", "Bash", args, "--profile", "economy", "--text", *data, cwd=tmp_path
    )
    assert economy.returncode == 0, economy.stderr
    text = economy.stdout
    assert text.startswith("[exit status 0]\n<stdout>\n1\n2\n")
    assert "[truncated: kept the first 100 and the last 100 of 300001 lines;" in text
    assert text.endswith("300000\nSUMMARY: 1 failed\n</stdout>\n")
    spill = text.split("Full output saved to ", 1)[1].split(" — ", 1)[0]
    assert Path(spill).read_bytes().endswith(b"300000\nSUMMARY: 1 failed\n")
    exact = run_main(capsys, "call", "Bash", args, "--text", *data, cwd=tmp_path)
    assert "SUMMARY" not in exact.stdout


async def test_invalid_utf8_is_counted_in_both_ends_and_shown_as_replacement(
    host: ToolHost,
) -> None:
    code = (
        "import sys\n"
        'sys.stdout.buffer.write(b"bad \\xff\\xfe start\\n" + b"x" * 70 + b"\\n")\n'
        'sys.stdout.buffer.write(b"filler line\\n" * 60000)\n'
        'sys.stdout.buffer.write(b"bad \\xc3 end\\n")\n'
    )
    result = await bash(host, python(code))
    assert result["stdout"].startswith("bad \ufffd\ufffd start\n")
    assert result["stdout"].endswith("filler line\nbad \ufffd end\n")
    assert result["notice"] == "stdout had 3 invalid UTF-8 bytes, shown as U+FFFD."
