"""The result profile and the context gauge reach every call (CONTRACT section 8)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import toolbound
from support import run_main, transcript_of_800_tokens
from toolbound import DEFAULT_LIMITS, ToolHost
from toolbound.limits import ECONOMY, EXACT, KB, PROFILES, Budget, profile_named
from toolbound.listeners import CallListener, CallStart


class _Seen(CallListener):
    def __init__(self) -> None:
        self.calls: list[CallStart] = []

    def call_started(self, call: CallStart) -> None:
        self.calls.append(call)


@pytest.mark.parametrize("profile", ["exact", "economy"])
async def test_the_host_profile_reaches_listeners_and_the_tool(
    tmp_path: Path, profile: str
) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    seen = _Seen()
    async with ToolHost(
        workspace=tmp_path, data_dir=tmp_path / "d", profile=profile, listeners=[seen]
    ) as host:
        assert host.profile.name == profile
        events = [e async for e in host.stream("Read", {"path": "a.txt"})]
    assert [c.profile for c in seen.calls] == [profile]
    assert events[-1]["type"] == "result"
    assert events[-1]["text"].startswith("one\n")


def test_an_unknown_profile_is_refused_when_the_host_is_made(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown profile 'loud'; the profiles are exact, economy"):
        ToolHost(workspace=tmp_path, data_dir=tmp_path / "d", profile="loud")


async def test_context_used_fills_the_gauge_of_the_window(tmp_path: Path) -> None:
    async with ToolHost(workspace=tmp_path, data_dir=tmp_path / "d", context_window=200_000) as h:
        assert h.gauge.fill() == 0.0
        h.context_used(150_000)
        assert h.gauge.fill() == 0.75
        with pytest.raises(ValueError, match="tokens >= 0"):
            h.context_used(-1)
    async with ToolHost(workspace=tmp_path, data_dir=tmp_path / "d") as h:
        h.context_used(10)
        assert h.gauge.fill() is None


def test_a_window_that_is_not_positive_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="positive number of tokens"):
        ToolHost(workspace=tmp_path, data_dir=tmp_path / "d", context_window=0)


def test_the_cli_takes_a_profile_and_refuses_an_unknown_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    data = str(tmp_path / "d")
    done = run_main(
        capsys,
        "call",
        "Read",
        '{"path": "a.txt"}',
        "--data-dir",
        data,
        "--profile",
        "economy",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    assert result["content"] == "one\n"
    bad = run_main(
        capsys,
        "call",
        "Read",
        '{"path": "a.txt"}',
        "--data-dir",
        data,
        "--profile",
        "x",
        cwd=tmp_path,
    )
    assert bad.returncode == 2
    assert "invalid choice: 'x'" in bad.stderr


def test_the_cli_context_window_shrinks_economy_budgets_by_the_recorded_context(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    transcript_of_800_tokens(data, "s1")
    call = ("call", "Bash", '{"command": "seq 1 1000"}', "--data-dir", str(data))
    shrunk = run_main(
        capsys,
        *call,
        "--session",
        "s1",
        "--profile",
        "economy",
        "--context-window",
        "1000",
        cwd=tmp_path,
    )
    assert shrunk.returncode == 0, shrunk.stderr
    assert json.loads(shrunk.stdout)["notice"] == (
        "Bash stdout budget shrunk to 100 lines / 4KB (from 200 lines / 4KB): "
        "the context is 80% full."
    )
    roomy = run_main(
        capsys,
        *call,
        "--session",
        "s1",
        "--profile",
        "economy",
        "--context-window",
        "100000",
        cwd=tmp_path,
    )
    assert "budget shrunk" not in (json.loads(roomy.stdout).get("notice") or "")
    bad = run_main(capsys, *call, "--context-window", "0", cwd=tmp_path)
    assert bad.returncode == 2
    assert "'0' is not a positive number of tokens" in bad.stderr


def test_the_tools_are_described_for_the_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exact = {
        d["name"]: d["description"]
        for d in json.loads(run_main(capsys, "tools", cwd=tmp_path).stdout)
    }
    done = run_main(capsys, "tools", "--profile", "economy", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    economy = {d["name"]: d["description"] for d in json.loads(done.stdout)}
    assert not any("economy" in text for text in exact.values())
    for tool in ("Read", "Glob", "Grep", "Bash"):
        assert economy[tool].startswith(exact[tool])
        assert economy[tool].endswith("a notice names a shrunken budget.")
    assert "a re-read of a window whose bytes are unchanged" in economy["Read"]
    assert "stderr within 100 lines / 2KB" in economy["Bash"]
    # Edit, Write and the job tools are the same in both profiles.
    assert all(economy[t] == exact[t] for t in ("Edit", "Write", "JobOutput", "JobStop"))


def test_a_profile_is_a_value_that_no_tool_asks_by_name() -> None:
    """Only limits.py defines the profiles' names; the tools, the budgets and the host
    ask the value (its budgets and policies), never ``profile == "economy"``."""
    package = Path(toolbound.__file__).parent
    asking = {
        path.relative_to(package).as_posix()
        for path in [*package.glob("tools/*.py"), *package.glob("*.py"), *package.glob("*/*.py")]
        if re.search(r"profile\s*[!=]=|\"economy\"|'economy'", path.read_text())
    }
    # The definition, and the command line's defaults (names it parses at the boundary).
    assert asking == {"limits.py", "cli.py"}


def test_the_profiles_differ_in_values_only() -> None:
    assert (EXACT.economy_budgets, EXACT.shrinks, EXACT.read_hints) == (False, False, False)
    assert (ECONOMY.economy_budgets, ECONOMY.shrinks, ECONOMY.read_hints) == (True, True, True)
    assert [profile_named(p.name) for p in PROFILES] == [EXACT, ECONOMY]
    assert profile_named(ECONOMY) is ECONOMY
    stdout, stderr = ECONOMY.streams(DEFAULT_LIMITS)
    assert (stdout.keep, stdout.head_share, stderr.keep, stderr.head_share) == (
        "both",
        0.5,
        "both",
        0.25,
    )
    assert [s.keep for s in EXACT.streams(DEFAULT_LIMITS)] == ["head", "tail"]
    assert EXACT.read_window(DEFAULT_LIMITS) is None
    assert ECONOMY.read_window(DEFAULT_LIMITS) == Budget(max_bytes=12 * KB, max_lines=150)
    assert EXACT.search(DEFAULT_LIMITS) == DEFAULT_LIMITS.search
    assert ECONOMY.search(DEFAULT_LIMITS) == Budget(max_bytes=8 * KB, max_lines=100)
