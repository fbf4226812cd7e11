"""Two clients sharing the server's default session each have their own view of
what they Read (issue 26): an economy re-read is "Unchanged" only to the client
that received the content, and Edit needs a Read by the client that edits."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from mcp_client import read_announcement, serve_process

if TYPE_CHECKING:
    from conftest import Clients

TEXT = "".join(f"line {n:02d} {'.' * 31}\n" for n in range(60))


@dataclass
class EconomyServer:
    url: str
    workspace: Path
    token: str


@pytest.fixture
def economy_server(tmp_path: Path, serve_argv: Callable[..., list[str]]) -> Iterator[EconomyServer]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    argv = serve_argv(workspace, tmp_path / "data", "--http", "127.0.0.1:0")
    with serve_process([*argv, "--profile", "economy", "--structured"]) as lines:
        url, token = read_announcement(lines)
        yield EconomyServer(url, workspace, token)


def shared(server: EconomyServer, clients: Clients) -> Any:
    """A sessionless client of the server's default session."""
    return clients.http(server, mode="auto")  # type: ignore[arg-type]


async def test_a_client_of_the_shared_session_is_never_told_of_another_clients_read(
    economy_server: EconomyServer, clients: Clients
) -> None:
    (economy_server.workspace / "a.txt").write_text(TEXT)
    async with (
        shared(economy_server, clients) as first,
        shared(economy_server, clients) as second,
    ):
        read = await first.call_tool("Read", {"path": "a.txt"})
        again = await first.call_tool("Read", {"path": "a.txt"})
        theirs = await second.call_tool("Read", {"path": "a.txt"})
        second_again = await second.call_tool("Read", {"path": "a.txt"})
    for result in (read, theirs):
        assert result.structured_content is not None
        assert result.structured_content["content"] == TEXT
    # Each client's own re-read is answered from its own context.
    for result in (again, second_again):
        assert result.structured_content is not None
        assert result.structured_content["unchanged"] is True


async def test_a_client_of_the_shared_session_cannot_edit_what_only_another_read(
    economy_server: EconomyServer, clients: Clients
) -> None:
    path = economy_server.workspace / "b.txt"
    path.write_text(TEXT)
    edit = {"path": "b.txt", "oldString": "line 07", "newString": "line seven"}
    async with (
        shared(economy_server, clients) as reader,
        shared(economy_server, clients) as other,
    ):
        await reader.call_tool("Read", {"path": "b.txt"})
        refused = await other.call_tool("Edit", edit)
        done = await reader.call_tool("Edit", edit)
    assert refused.structured_content is not None
    assert refused.structured_content["error"]["code"] == "TOOL_NOT_READ"
    assert done.structured_content is not None
    assert "error" not in done.structured_content
    assert "line seven" in path.read_text()
