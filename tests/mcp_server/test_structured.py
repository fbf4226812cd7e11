"""``serve --structured``: the 0.2 result shape for programmatic clients.

The result dict as ``structuredContent`` beside the model text, and an
``outputSchema`` per tool that admits the error shape too. Each test runs over
stdio, an HTTP session and sessionless HTTP (``conftest.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from mcp_client import text_of
from toolbound.tooldefs import tool_defs

if TYPE_CHECKING:
    from conftest import Connect

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def serve_flags() -> tuple[str, ...]:
    return ("--structured",)


async def test_tools_list_serves_the_definitions_with_output_schemas(connect: Connect) -> None:
    async with connect() as conn:
        listed = await conn.client.list_tools()
        got = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools]
        want = [
            {**d.render("mcp"), "outputSchema": d.output_schema}
            for d in tool_defs(profile="economy")
        ]
        assert got == want
        schemas = {t.name: t.output_schema or {} for t in listed.tools}
        for name, counted in (("Edit", "replacements"), ("Write", "bytes")):
            result = schemas[name]["$defs"][f"{name}Result"]
            assert result["required"] == ["path", counted, "created", "diff", "truncated"]
            assert set(result["properties"]) == {*result["required"], "notice"}


async def test_a_read_is_its_result_dict_beside_its_text(connect: Connect) -> None:
    async with connect() as conn:
        (conn.dir / "a.txt").write_text("one\ntwo\n")
        result = await conn.client.call_tool("Read", {"path": f"{conn.rel}/a.txt"})
        assert not result.is_error
        assert result.structured_content == {
            "path": f"{conn.rel}/a.txt",
            "root": "workspace",
            "content": "one\ntwo\n",
            "offset": 0,
            "lineCount": 2,
            "totalLines": 2,
            "fileBytes": 8,
            "truncated": False,
        }
        assert text_of(result) == "one\ntwo\n"


async def test_a_bad_argument_is_an_is_error_result_with_the_error_as_structured_content(
    connect: Connect,
) -> None:
    async with connect() as conn:
        result = await conn.client.call_tool("Read", {"path": "a.txt", "limit": 0})
        message = (
            "Invalid arguments for Read: 'limit' must be 1-2000 lines. "
            "Fix the arguments and call again."
        )
        assert result.is_error
        assert result.structured_content == {
            "error": {"code": "TOOL_INVALID_ARGUMENT", "message": message}
        }
        assert text_of(result) == f"TOOL_INVALID_ARGUMENT: {message}"


async def test_a_timed_out_call_is_an_error_that_keeps_its_bash_result(connect: Connect) -> None:
    async with connect() as conn:
        result = await conn.client.call_tool(
            "Bash", {"command": "echo started; sleep 30", "timeout": 1}
        )
        assert result.is_error
        structured = result.structured_content
        assert isinstance(structured, dict)
        assert "error" not in structured
        assert (structured["stdout"], structured["timedOut"], structured["aborted"]) == (
            "started\n",
            True,
            False,
        )
        assert text_of(result).startswith("[timed out]\n[")
