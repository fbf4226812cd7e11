"""Each MCP session is one toolbound session in the store; it ends with the MCP session."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from mcp import Client

from mcp_client import text_of
from support import wait_for_async
from toolbound.store import SessionStore

if TYPE_CHECKING:
    from conftest import Clients, HttpServer

WAIT_S = 30.0
# Enough output to pass the Bash stdout budget, so the session spills.
SPILLING = {"command": "seq 1 40000", "timeout": 30}


async def stored(data_dir: Path, sid: str) -> tuple[bool, int]:
    """The session store's view of a session: has it ended, and how many calls it recorded."""

    def look() -> tuple[bool, int]:
        with SessionStore(data_dir) as store:
            info = store.info(sid)
        return info.ended_at is not None, info.tool_calls

    return await anyio.to_thread.run_sync(look)


def spill_path(text: str) -> Path:
    """The spill file a result's text names."""
    named = re.search(r"Full output saved to (\S+) ", text)
    assert named, text
    return Path(named.group(1))


async def spill(client: Client) -> Path:
    """Run a command that spills; the spill file."""
    path = spill_path(text_of(await client.call_tool("Bash", SPILLING)))
    assert await anyio.Path(path).is_file()
    return path


async def spill_session(client: Client, data_dir: Path) -> str:
    """Run a command that spills; the id of the session whose scratch dir holds the spill."""
    return (await spill(client)).relative_to(data_dir / "scratch").parts[0]


async def test_each_http_session_is_its_own_stored_session_and_ends_with_its_scratch(
    http_server: HttpServer, clients: Clients
) -> None:
    scratch = http_server.data_dir / "scratch"
    async with clients.http(http_server, mode="legacy") as first:
        async with clients.http(http_server, mode="legacy") as second:
            one = await spill_session(first, http_server.data_dir)
            two = await spill_session(second, http_server.data_dir)
            assert re.fullmatch(r"mcp-[0-9a-f]{32}", one), one
            assert re.fullmatch(r"mcp-[0-9a-f]{32}", two), two
            assert one != two
            assert await spill_session(first, http_server.data_dir) == one
        await wait_for_async(
            lambda: not (scratch / two).exists(), "the ended session's scratch", timeout_s=WAIT_S
        )
        assert (scratch / one).is_dir()
        assert await stored(http_server.data_dir, two) == (True, 1)
        assert await stored(http_server.data_dir, one) == (False, 2)
    await wait_for_async(
        lambda: not (scratch / one).exists(), "the other one's scratch", timeout_s=WAIT_S
    )
    assert await stored(http_server.data_dir, one) == (True, 2)


async def test_a_session_reads_its_own_spill_file_and_no_other_session_can(
    http_server: HttpServer, clients: Clients
) -> None:
    async with clients.http(http_server, mode="legacy") as owner:
        path = await spill(owner)
        read = await owner.call_tool("Read", {"path": str(path), "limit": 2})
        assert (read.is_error, text_of(read).startswith("1\n2\n")) == (False, True)
        async with clients.http(http_server, mode="legacy") as other:
            refused = await other.call_tool("Read", {"path": str(path)})
            assert refused.is_error
            assert text_of(refused).startswith("TOOL_PATH_NOT_ALLOWED: ")


async def test_sessionless_http_calls_share_the_servers_session(
    http_server: HttpServer, clients: Clients
) -> None:
    async with clients.http(http_server, mode="auto") as first:
        one = await spill_session(first, http_server.data_dir)
    async with clients.http(http_server, mode="auto") as second:
        assert await spill_session(second, http_server.data_dir) == one
    assert (http_server.data_dir / "scratch" / one).is_dir()


async def test_the_stdio_session_ends_and_its_scratch_goes_when_the_client_leaves(
    tmp_path: Path, clients: Clients
) -> None:
    workspace, data_dir = tmp_path / "ws", tmp_path / "data"
    workspace.mkdir()
    async with clients.stdio(workspace, data_dir) as client:
        sid = await spill_session(client, data_dir)
        assert re.fullmatch(r"mcp-[0-9a-f]{16}", sid), sid
    await wait_for_async(
        lambda: not (data_dir / "scratch" / sid).exists(), "the scratch dir to go", timeout_s=WAIT_S
    )
    assert await stored(data_dir, sid) == (True, 1)


async def test_sessionless_requests_naming_different_sessions_are_kept_apart(
    http_server: HttpServer, clients: Clients
) -> None:
    def named(name: str) -> dict[str, Any]:
        return {"toolbound/session": name}

    async with (
        clients.http(http_server, mode="auto") as a,
        clients.http(http_server, mode="auto") as b,
    ):
        result = await a.call_tool("Bash", SPILLING, meta=named("client-a"))
        path = spill_path(text_of(result))
        assert path.relative_to(http_server.data_dir / "scratch").parts[0] == "client-a"
        refused = await b.call_tool("Read", {"path": str(path)}, meta=named("client-b"))
        assert refused.is_error
        assert text_of(refused).startswith("TOOL_PATH_NOT_ALLOWED: ")
        unnamed = await b.call_tool("Read", {"path": str(path)})
        assert text_of(unnamed).startswith("TOOL_PATH_NOT_ALLOWED: ")
        again = await b.call_tool("Read", {"path": str(path), "limit": 1}, meta=named("client-a"))
        assert text_of(again).startswith("1\n")


async def test_a_session_name_that_is_not_a_session_id_is_an_invalid_argument(
    http_server: HttpServer, clients: Clients
) -> None:
    async with clients.http(http_server, mode="auto") as client:
        result = await client.call_tool(
            "Read", {"path": "x"}, meta={"toolbound/session": "../escape"}
        )
    assert result.is_error
    assert text_of(result).startswith("TOOL_INVALID_ARGUMENT: ")
    assert "'../escape'" in text_of(result)
