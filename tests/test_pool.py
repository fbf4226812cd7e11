"""HostPool and ToolHost.end: one host per session, ended through the host's own store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from toolbound import SessionStore, ToolHost
from toolbound.pool import HostPool
from toolbound.results import ErrorCode, ToolError

SPILLING = {"command": "seq 1 40000", "timeout": 30}

# Another process's view of a session: whether it has ended.
ENDED_ELSEWHERE = """
import sys
from toolbound import SessionStore
with SessionStore(sys.argv[1]) as store:
    print(store.info(sys.argv[2]).ended_at is not None)
"""


def ended_elsewhere(data_dir: Path, session_id: str) -> bool:
    out = subprocess.run(
        [sys.executable, "-c", ENDED_ELSEWHERE, str(data_dir), session_id],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stdout.strip() == "True"


def pool_in(tmp_path: Path, seen: list[tuple[str, str]]) -> HostPool:
    (tmp_path / "ws").mkdir()

    def make_host(session_id: str) -> ToolHost:
        return ToolHost(workspace=tmp_path / "ws", data_dir=tmp_path / "d", session_id=session_id)

    return HostPool(
        make_host,
        default_session_id="s-default",
        on_start=lambda host: seen.append(("start", host.session_id)),
        on_end=lambda host: seen.append(("end", host.session_id)),
    )


async def test_a_session_has_one_host_until_it_ends(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []
    pool = pool_in(tmp_path, seen)
    first = await pool.host("s1")
    assert await pool.host("s1") is first
    await pool.end("s1")
    assert await pool.host("s1") is not first
    await pool.aclose()
    assert seen == [("start", "s1"), ("end", "s1"), ("start", "s1"), ("end", "s1")]


async def test_ending_a_session_marks_it_ended_and_removes_its_scratch(tmp_path: Path) -> None:
    pool = pool_in(tmp_path, [])
    host = await pool.host("s1")
    result = await host.call("Bash", SPILLING)
    assert result["spill"]["stdout"].startswith(str(host.scratch.dir))
    assert host.scratch.dir.is_dir()
    other = await pool.host("s2")
    await pool.end("s1")
    assert not host.scratch.dir.exists()
    with SessionStore(tmp_path / "d") as store:
        assert store.info("s1").ended_at is not None
        assert store.info("s1").tool_calls == 1
        assert store.info("s2").ended_at is None
    await pool.aclose()
    with SessionStore(tmp_path / "d") as store:
        assert store.info("s2").ended_at is not None
    assert not other.scratch.dir.exists()


async def test_end_without_a_usable_store_still_removes_the_scratch(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    data_dir = tmp_path / "d"
    data_dir.mkdir()
    (data_dir / "toolbound.db").write_text("not a database")
    host = ToolHost(workspace=tmp_path / "ws", data_dir=data_dir, session_id="s1")
    await host.__aenter__()
    await host.call("Bash", SPILLING)
    assert host.scratch.dir.is_dir()
    await host.end()
    assert not host.scratch.dir.exists()


async def test_an_end_is_seen_by_other_processes_while_other_hosts_live(tmp_path: Path) -> None:
    pool = pool_in(tmp_path, [])
    await pool.host("s1")
    await pool.host("s2")  # opens a store beside the first host's
    assert ended_elsewhere(tmp_path / "d", "s1") is False
    await pool.end("s1")
    assert ended_elsewhere(tmp_path / "d", "s1") is True
    await pool.aclose()


def bounded_pool(tmp_path: Path, seen: list[tuple[str, str]], *, max_hosts: int) -> HostPool:
    pool = pool_in(tmp_path, seen)
    pool.max_hosts = max_hosts
    pool.rest_after_s = 0.0  # every idle host may rest at once
    return pool


async def test_a_session_past_the_bound_rests_the_least_recently_used_idle_host(
    tmp_path: Path,
) -> None:
    seen: list[tuple[str, str]] = []
    pool = bounded_pool(tmp_path, seen, max_hosts=2)
    s1 = await pool.host("s1")
    spilled = await s1.call("Bash", SPILLING)
    await pool.host("s2")
    await pool.host("s1")  # s1 is used again: s2 is now the least recently used
    await pool.host("s3")
    assert seen == [("start", "s1"), ("start", "s2"), ("end", "s2"), ("start", "s3")]
    # Rested, not ended: s2's session goes on in a new host when it is named again...
    assert not ended_elsewhere(tmp_path / "d", "s2")
    await pool.host("s2")
    assert seen[-2:] == [("end", "s1"), ("start", "s2")]
    # ...and a rested session keeps its spill files: s1's is readable once it is back.
    back = await pool.host("s1")
    assert back is not s1
    page = await back.call("Read", {"path": spilled["spill"]["stdout"], "limit": 1})
    assert page["content"] == "1\n"
    await pool.aclose()


async def test_busy_hosts_are_never_rested_and_a_full_pool_refuses_a_new_session(
    tmp_path: Path,
) -> None:
    pool = bounded_pool(tmp_path, [], max_hosts=2)
    s1 = await pool.host("s1")
    job = await s1.call("Bash", {"command": "sleep 600", "background": True})
    s2 = await pool.host("s2")
    await s2.call("Bash", {"command": "sleep 600", "background": True})
    with pytest.raises(ToolError) as refused:
        await pool.host("s3")
    assert refused.value.code == ErrorCode.INVALID_ARGUMENT
    assert refused.value.message == (
        "This server already runs 2 sessions, the most it runs at once; 2 of them have a "
        "call or a background job running and 0 were used in the last 0 s, so none could "
        "make room. Try again in a few seconds, stop background jobs (JobStop), or reuse a "
        "session you already named."
    )
    # Once s1's job is stopped, s1 is idle and rests for the new session; s2 runs on.
    await s1.call("JobStop", {"jobId": job["jobId"]})
    await pool.host("s3")
    assert await pool.host("s2") is s2
    assert s2.busy
    await pool.aclose()


async def test_named_sessions_hold_a_bounded_share_and_mcp_sessions_still_find_room(
    tmp_path: Path,
) -> None:
    pool = bounded_pool(tmp_path, [], max_hosts=4)
    pool.max_named = 2
    pool.rest_after_s = 600.0  # every host was just used: none may rest
    await pool.host("n-a", named=True)
    await pool.host("n-b", named=True)
    with pytest.raises(ToolError) as refused:
        await pool.host("n-c", named=True)
    assert refused.value.message == (
        "This server already runs 2 named sessions, the most it runs at once (named "
        "sessions may hold 2 of the server's 4 hosts, so MCP sessions always find room); "
        "0 of them have a call or a background job running and 2 were used in the last "
        "600 s, so none could make room. Try again in a few seconds, stop background jobs "
        "(JobStop), or reuse a session you already named."
    )
    # The hosts the names could not take are there for MCP sessions.
    await pool.host("mcp-1")
    await pool.host("mcp-2")
    await pool.aclose()


async def test_an_idle_named_session_ends_after_the_stated_time(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []
    pool = bounded_pool(tmp_path, seen, max_hosts=4)
    pool.named_idle_end_s = 0.0
    pool.idle_check_s = 0.0
    named = await pool.host("n-a", named=True)
    await named.call("Bash", SPILLING)
    assert (tmp_path / "d" / "scratch" / "n-a").is_dir()
    await pool.host("mcp-1")  # the next use of the pool ends the idle named session
    assert seen == [("start", "n-a"), ("end", "n-a"), ("start", "mcp-1")]
    assert ended_elsewhere(tmp_path / "d", "n-a")
    assert not (tmp_path / "d" / "scratch" / "n-a").exists()
    await pool.aclose()
