"""Budgets shrink as the context fills, under the economy profile only, and say so."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from support import transcript_of_800_tokens
from toolbound import DEFAULT_LIMITS, SessionStore, ToolHost
from toolbound.gauge import ContextGauge
from toolbound.limits import KB, Budget, ProfileName, profile_named
from toolbound.shrink import Budgets, shrink_factor

SEARCH = Budget(max_bytes=48 * KB, max_lines=2000)


def budgets(*, profile: ProfileName, window: int | None, used: int) -> Budgets:
    """The budgets a host makes for a call under ``profile`` with ``used`` of ``window``."""
    gauge = ContextGauge(window=window)
    gauge.report(used)
    return Budgets.for_call(DEFAULT_LIMITS, profile_named(profile), gauge=gauge)


@pytest.mark.parametrize(
    ("fill", "factor"),
    [(0.0, 1.0), (0.49, 1.0), (0.5, 0.5), (0.69, 0.5), (0.7, 0.25), (0.85, 0.125), (1.3, 0.125)],
)
def test_the_schedule_halves_from_half_full_and_keeps_shrinking(fill: float, factor: float) -> None:
    assert shrink_factor(fill, DEFAULT_LIMITS.economy) == factor


def test_a_budget_under_half_a_full_context_is_whole_and_unnamed() -> None:
    call = budgets(profile="economy", window=200_000, used=99_999)
    assert call.budget("Grep", SEARCH) == (SEARCH, None)


def test_a_shrunken_budget_is_named_with_the_fill_that_shrank_it() -> None:
    call = budgets(profile="economy", window=200_000, used=156_000)
    assert call.budget("Grep", SEARCH) == (
        Budget(max_bytes=12 * KB, max_lines=500),
        "Grep budget shrunk to 500 lines / 12KB (from 2000 lines / 48KB): the context is 78% full.",
    )


def test_a_full_context_shrinks_no_budget_below_the_floor() -> None:
    call = budgets(profile="economy", window=1000, used=990)
    small = Budget(max_bytes=16 * KB, max_lines=400)
    assert call.budget("Bash stdout", small)[0] == Budget(max_bytes=4 * KB, max_lines=100)
    tiny = Budget(max_bytes=2 * KB, max_lines=10)
    assert call.budget("Read", tiny) == (tiny, None)


@pytest.mark.parametrize(("profile", "window"), [("exact", 1000), ("economy", None)])
def test_the_exact_profile_and_an_unknown_window_never_shrink(
    profile: ProfileName, window: int | None
) -> None:
    call = budgets(profile=profile, window=window, used=990)
    assert call.budget("Grep", SEARCH) == (SEARCH, None)


async def test_without_a_report_the_sessions_own_context_shrinks_the_budget(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    transcript_of_800_tokens(data, "s1")
    async with ToolHost(
        workspace=tmp_path,
        data_dir=data,
        session_id="s1",
        profile="economy",
        context_window=1000,
    ) as host:
        full = await asyncio.wait_for(host.call("Bash", {"command": "seq 1 1000"}), 60)
        with SessionStore(str(data), scratch_dir=data) as store:
            store.session("s1").checkpoint(summary="a short summary")
        compacted = await asyncio.wait_for(host.call("Bash", {"command": "seq 1 1000"}), 60)
        host.context_used(990)
        reported = await asyncio.wait_for(host.call("Bash", {"command": "seq 1 1000"}), 60)
    assert full["notice"] == (
        "Bash stdout budget shrunk to 100 lines / 4KB (from 200 lines / 4KB): "
        "the context is 80% full."
    )
    # After the checkpoint the context holds the retained message and the summary only...
    assert "budget shrunk" not in (compacted.get("notice") or "")
    # ...and once the caller reports, its figure is the one that counts.
    assert reported["notice"].endswith("the context is 99% full.")
