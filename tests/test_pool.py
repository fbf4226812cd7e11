"""HostPool and ToolHost.end: one host per session, ended through the host's own store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from toolbound import SessionStore, ToolHost
from toolbound.pool import HostPool

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
