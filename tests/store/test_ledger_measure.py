"""The ledger's per-tool figures (``store.ledger``), measured on real results of each tool."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from toolbound import ToolHost, estimate_tokens, model_text
from toolbound.store.ledger import Measure, measure, spilled_bytes
from toolbound.views import elided_bytes


def results(tmp_path: Path, *calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The results of ``calls``, run in turn by one host over ``tmp_path / "ws"``."""

    async def run() -> list[dict[str, Any]]:
        async with ToolHost(workspace=tmp_path / "ws", data_dir=tmp_path / "data") as host:
            return [await host.call(tool, args) for tool, args in calls]

    return asyncio.run(run())


def stream_bytes(text: str) -> int:
    return len(text.encode())


def test_bash_elides_each_streams_total_minus_what_the_result_kept(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    out = "".join(f"line {i}\n" for i in range(100_000))
    (both,) = results(
        tmp_path,
        ("Bash", {"command": "for i in $(seq 0 99999); do echo line $i; done | tee /dev/stderr"}),
    )
    assert both["totals"]["stdout"]["bytes"] == both["totals"]["stderr"]["bytes"] == len(out)
    kept = stream_bytes(both["stdout"]) + stream_bytes(both["stderr"])
    assert elided_bytes("Bash", both) == 2 * len(out) - kept
    # stdout kept its head, stderr its tail: both cut, both spilled.
    assert both["stdout"].startswith("line 0\n")
    assert both["stderr"].endswith("line 99999\n")
    sizes = [Path(both["spill"][s]).stat().st_size for s in ("stdout", "stderr")]
    assert spilled_bytes(both) == sum(sizes)
    assert min(sizes) > 0


def test_bash_that_fits_elides_nothing_and_repaired_bytes_never_count_negative(
    tmp_path: Path,
) -> None:
    (tmp_path / "ws").mkdir()
    small, binary = results(
        tmp_path,
        ("Bash", {"command": "echo hi; echo oops >&2"}),
        ("Bash", {"command": "printf '\\377\\376'"}),
    )
    assert (elided_bytes("Bash", small), spilled_bytes(small)) == (0, 0)
    # Two invalid bytes shown as two U+FFFD (6 bytes): more kept than seen, 0 elided.
    assert binary["totals"]["stdout"]["bytes"] == 2
    assert stream_bytes(binary["stdout"]) > 2
    assert elided_bytes("Bash", binary) == 0


def test_read_elides_clipped_bytes_of_a_whole_file_and_never_the_unread_rest(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    long_line = "ü" * 2500  # 500 characters past the clip, 2 bytes each
    (ws / "wide.txt").write_text(f"{long_line}\nshort\n{long_line}\n")
    whole, tail, head, missing = results(
        tmp_path,
        ("Read", {"path": "wide.txt"}),
        ("Read", {"path": "wide.txt", "offset": 1}),
        ("Read", {"path": "wide.txt", "limit": 1}),
        ("Read", {"path": "nope.txt"}),
    )
    assert whole["totalLines"] == 3
    assert elided_bytes("Read", whole) == 2 * 500 * 2
    # A window that starts later or stops early: its clipped bytes are not in the result.
    assert tail["offset"] == 1
    assert "totalLines" not in head
    assert (elided_bytes("Read", tail), elided_bytes("Read", head)) == (0, 0)
    assert elided_bytes("Read", missing) == 0
    # A re-read answered "unchanged" is counted as avoided, not as elided.
    unchanged = {**whole, "content": "", "unchanged": True}
    assert elided_bytes("Read", unchanged) == 0
    assert measure("Read", unchanged, "x").reread_avoided is True
    assert measure("Read", whole, "x").reread_avoided is False


def test_a_cut_search_page_elides_nothing_its_next_page_brings_back(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(5):
        (ws / f"f{i}.py").write_text("needle\n" * 3)
    grep, glob = results(
        tmp_path,
        ("Grep", {"pattern": "needle", "headLimit": 2}),
        ("Glob", {"pattern": "*.py", "limit": 2}),
    )
    assert (grep["truncated"], glob["truncated"]) == (True, True)
    assert (elided_bytes("Grep", grep), elided_bytes("Glob", glob)) == (0, 0)


def test_a_spill_file_gone_since_counts_nothing(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (cut,) = results(tmp_path, ("Bash", {"command": "seq 1 300000"}))
    spill = Path(cut["spill"]["stdout"])
    assert spilled_bytes(cut) == spill.stat().st_size
    spill.unlink()
    assert spilled_bytes(cut) == 0


def test_a_result_of_another_shape_measures_its_text_and_elides_nothing() -> None:
    odd = {"stdout": 5, "totals": "?"}
    text = model_text("Bash", odd)
    assert measure("Bash", odd, text) == Measure(
        model_tokens=estimate_tokens(text),
        model_bytes=len(text.encode()),
        elided_bytes=0,
        spilled_bytes=0,
        reread_avoided=False,
    )
