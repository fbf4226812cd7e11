"""Results that fit the harness (CONTRACT section 14), over stdio with the SDK client.

The client names itself in ``initialize``'s ``clientInfo`` as a harness does;
the server keeps each result's whole text within that client's cap (or the
``--fit`` cap), cutting it itself with its markers, so the harness never cuts.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import mcp_types as types
from mcp import Client, StdioServerParameters

from mcp_client import text_of
from toolbound.fit import known_client
from toolbound.store import SessionStore

WAIT_S = 30.0
# A failing, noisy test run: 20 MB of stdout, then the verdict on stderr.
NOISY = {
    "command": "seq -f %0100g 1 200000; "
    'for i in $(seq 1 40); do echo "warning $i" >&2; done; '
    "echo 'FAILED tests/test_parse.py::test_dates' >&2; exit 1",
    "timeout": 60,
}


def client(workspace: Path, data_dir: Path, name: str, *flags: str) -> Client:
    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else None
    argv = ["-m", "toolbound", "serve", "--stdio", "--workspace", str(workspace)]
    params = StdioServerParameters(
        command=sys.executable, args=[*argv, "--data-dir", str(data_dir), *flags], env=env
    )
    info = types.Implementation(name=name, version="0.169.0")
    return Client(params, read_timeout_seconds=WAIT_S, client_info=info)


async def test_a_codex_client_gets_every_result_within_its_cap_with_the_facts_kept(
    tmp_path: Path,
) -> None:
    (tmp_path / "big.py").write_text(
        "".join(f"x_{i} = {i}  # a line of code\n" for i in range(5000))
    )
    cap = known_client("codex-mcp-client")
    assert cap is not None
    async with client(tmp_path, tmp_path / "data", "codex-mcp-client") as codex:
        bash = text_of(await codex.call_tool("Bash", NOISY))
        read = text_of(await codex.call_tool("Read", {"path": "big.py", "limit": 2000}))
        grep = text_of(await codex.call_tool("Grep", {"pattern": "line of code"}))
    for text in (bash, read, grep):
        assert len(text.encode()) <= cap.max_bytes, text[-300:]
    assert bash.startswith("[exit status 1]\n")
    assert "Full output saved to " in bash
    assert bash.endswith("FAILED tests/test_parse.py::test_dates\n</stderr>")
    assert f"\n{1:0100d}\n{2:0100d}\n" in bash
    assert "to fit codex-mcp-client 0.169.0's limit per result" in read
    assert "[Showing lines 1-150; stopped at the 150-line limit. " in read
    assert "offset 150 for the next lines." in read
    assert grep.startswith("big.py\n1:x_0 = 0  # a line of code\n")
    with SessionStore(tmp_path / "data") as store:
        (session,) = store.list()
        ledger = store.get(session.id).ledger()  # type: ignore[union-attr]
    assert [(c["tool"], c["client"], c["fitBytes"]) for c in ledger["calls"]] == [
        (tool, "codex-mcp-client 0.169.0", cap.max_bytes) for tool in ("Bash", "Read", "Grep")
    ]
    assert [c["modelBytes"] for c in ledger["calls"]] == [
        len(t.encode()) for t in (bash, read, grep)
    ]
    # The replay (and the web view's model view) renders the text as it was sent.
    with SessionStore(tmp_path / "data") as store:
        replayed = store.events(ledger["calls"][0]["toolCallId"], session_id=session.id)
    assert replayed[-1]["text"] == bash


async def test_fit_n_caps_any_client_and_off_caps_none(tmp_path: Path) -> None:
    async with client(tmp_path, tmp_path / "a", "some-agent", "--fit", "4096") as capped:
        small = text_of(await capped.call_tool("Bash", NOISY))
    exact = ("--profile", "exact")  # the economy budgets are within every harness's cap
    async with client(tmp_path, tmp_path / "b", "codex-mcp-client", "--fit", "off", *exact) as off:
        whole = text_of(await off.call_tool("Bash", NOISY))
    assert len(small.encode()) <= 4096
    assert small.startswith("[exit status 1]\n")
    assert small.endswith("FAILED tests/test_parse.py::test_dates\n</stderr>")
    # Off: the exact profile's own budgets (96 KB of stdout), past the codex cap.
    assert len(whole.encode()) > 96 * 1024
    assert whole.endswith("FAILED tests/test_parse.py::test_dates\n</stderr>")


async def test_an_unknown_client_gets_no_cap_and_is_recorded_by_name(tmp_path: Path) -> None:
    async with client(tmp_path, tmp_path / "data", "some-agent", "--profile", "exact") as agent:
        text = text_of(await agent.call_tool("Bash", NOISY))
    assert len(text.encode()) > 96 * 1024
    with SessionStore(tmp_path / "data") as store:
        (session,) = store.list()
        (call,) = store.get(session.id).ledger()["calls"]  # type: ignore[union-attr]
    assert (call["client"], call["fitBytes"]) == ("some-agent 0.169.0", None)
