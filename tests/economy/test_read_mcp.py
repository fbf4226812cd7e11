"""An economy re-read through the MCP server, with the official SDK client."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp import Client, StdioServerParameters

from mcp_client import text_of
from toolbound.store import SessionStore

WAIT_S = 30.0
TEXT = "".join(f"line {n:02d} {'.' * 31}\n" for n in range(60))


async def test_serve_with_the_economy_profile_answers_a_re_read_unchanged(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(TEXT)
    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else None
    argv = ["-m", "toolbound", "serve", "--stdio", "--workspace", str(tmp_path)]
    argv += ["--data-dir", str(tmp_path / "data"), "--profile", "economy", "--structured"]
    params = StdioServerParameters(command=sys.executable, args=argv, env=env)
    async with Client(params, read_timeout_seconds=WAIT_S) as client:
        # The client checks results against the output schemas.
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        first = await client.call_tool("Read", {"path": "a.txt"})
        again = await client.call_tool("Read", {"path": "a.txt"})
    # The tools are described for the profile in force.
    assert "economy profile: `limit` defaults to 150 lines within 12KB" in str(
        listed["Read"].description
    )
    assert "stdout keeps its first and last lines within 200 lines / 4KB" in str(
        listed["Bash"].description
    )
    assert text_of(first) == TEXT
    assert first.structured_content is not None
    assert "unchanged" not in first.structured_content
    assert not again.is_error
    assert again.structured_content is not None
    assert again.structured_content["unchanged"] is True
    assert again.structured_content["content"] == ""
    notice = again.structured_content["notice"]
    assert text_of(again) == f"[{notice}]"
    # The call it names is the first, recorded with the content.
    with SessionStore(tmp_path / "data") as store:
        (session,) = store.list()
        recorded = store.tool_calls(session.id)
    assert [c["result"].get("unchanged") for c in recorded] == [None, True]
    assert notice.startswith(f"Unchanged since {recorded[0]['toolCallId']} (lines 1-60,")
    assert recorded[0]["result"]["content"] == TEXT
