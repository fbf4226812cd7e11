"""``serve --http`` is not an open door: the bearer token, loopback binds, private files."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import httpx2 as httpx
import pytest
from mcp import Client, StdioServerParameters

from mcp_client import serve_process, text_of
from support import run_cli
from toolbound import ToolHost
from toolbound.cli import check_loopback, main
from toolbound.namespaces import named_session_id, token_namespace
from toolbound.store import SessionStore

if TYPE_CHECKING:
    from conftest import HttpServer

WAIT_S = 30.0

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def post_initialize(url: str, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(
        url, content=json.dumps(INITIALIZE), headers={**ACCEPT, **headers}, timeout=WAIT_S
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
    ],
)
def test_mcp_refuses_a_request_without_the_bearer_token(
    http_server: HttpServer, headers: dict[str, str]
) -> None:
    response = post_initialize(http_server.url, headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="toolbound"'
    assert "Authorization: Bearer TOKEN" in response.text


def test_mcp_answers_a_request_with_the_token(http_server: HttpServer) -> None:
    response = post_initialize(http_server.url, http_server.headers)
    assert response.status_code == 200


def test_the_web_view_takes_the_same_token(http_server: HttpServer) -> None:
    base = http_server.url.removesuffix("/mcp")
    assert httpx.get(f"{base}/api/sessions", timeout=WAIT_S).status_code == 403
    with_token = httpx.get(f"{base}/api/sessions", headers=http_server.headers, timeout=WAIT_S)
    assert with_token.status_code == 200


def test_the_data_dir_and_the_database_files_are_private(http_server: HttpServer) -> None:
    data_dir = http_server.data_dir
    # A store held open keeps the WAL files there to look at.
    with SessionStore(data_dir) as store:
        store.session("perm-check")
        files = sorted(p.name for p in data_dir.glob("toolbound.db*"))
        assert files == ["toolbound.db", "toolbound.db-shm", "toolbound.db-wal"]
        assert {name: mode(data_dir / name) for name in files} == dict.fromkeys(files, 0o600)
    assert mode(data_dir) == 0o700


def test_a_store_created_with_public_modes_is_made_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with SessionStore(data_dir) as store:
        store.session("s1")
    data_dir.chmod(0o755)
    (data_dir / "toolbound.db").chmod(0o644)
    with SessionStore(data_dir) as store:
        store.session("s1")
        assert mode(data_dir / "toolbound.db") == 0o600
        assert mode(data_dir / "toolbound.db-wal") == 0o600
    assert mode(data_dir) == 0o700


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "localhost"])
def test_loopback_binds_are_allowed(host: str) -> None:
    check_loopback(host)


@pytest.mark.parametrize("address", ["0.0.0.0:0", "[::]:0", "192.0.2.7:8765"])
def test_serve_refuses_a_remote_bind_without_allow_remote(
    address: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["serve", "--http", address, "--workspace", str(tmp_path)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert "is not a loopback address" in err
    assert "--allow-remote" in err


def test_the_token_comes_from_toolbound_token_and_allow_remote_binds_anywhere(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "TOOLBOUND_TOKEN": "a-token-from-the-environment"}
    argv = ["-m", "toolbound", "serve", "--http", "0.0.0.0:0", "--allow-remote"]
    argv += ["--workspace", str(tmp_path), "--data-dir", str(tmp_path / "data")]
    with serve_process(argv, env) as lines:
        announced = "".join(lines.get(timeout=WAIT_S) for _ in range(3))
        assert "'Authorization: Bearer a-token-from-the-environment'" in announced
        assert "?token=a-token-from-the-environment" in announced
        port = announced.split("MCP server on http://0.0.0.0:")[1].split("/")[0]
        url = f"http://127.0.0.1:{port}/mcp"
        assert post_initialize(url, {}).status_code == 401
        good = {"Authorization": "Bearer a-token-from-the-environment"}
        assert post_initialize(url, good).status_code == 200


def test_requests_that_name_another_host_or_origin_are_refused_even_with_the_token(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "TOOLBOUND_TOKEN": "the-token"}
    argv = ["-m", "toolbound", "serve", "--http", "127.0.0.2:0", "--sandbox", "off"]
    argv += ["--workspace", str(tmp_path), "--data-dir", str(tmp_path / "data")]
    with serve_process(argv, env) as lines:
        announced = lines.get(timeout=WAIT_S)
        port = int(announced.split("MCP server on http://127.0.0.2:")[1].split("/")[0])
        url = f"http://127.0.0.2:{port}/mcp"
        token = {"Authorization": "Bearer the-token"}

        def initialize(**headers: str) -> int:
            return post_initialize(url, {**token, **headers}).status_code

        def sessions(**headers: str) -> int:
            api = f"http://127.0.0.2:{port}/api/sessions"
            return httpx.get(api, headers={**token, **headers}, timeout=WAIT_S).status_code

        assert initialize() == 200
        assert initialize(Host=f"localhost:{port}") == 200
        assert initialize(Origin=f"http://127.0.0.2:{port}") == 200
        assert sessions() == 200
        rebound = f"attacker.example:{port}"
        assert initialize(Host=rebound) == 403
        assert sessions(Host=rebound) == 403
        assert initialize(Host=f"127.0.0.2:{port + 1}") == 403
        assert initialize(Origin=f"http://{rebound}") == 403
        assert sessions(Origin=f"http://{rebound}") == 403
        refused = post_initialize(url, {**token, "Host": rebound})
        assert refused.text.startswith(
            f"403: the Host header '{rebound}' does not name this server."
        )


async def test_serve_keeps_its_secrets_from_every_command(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {
        "PATH": os.environ["PATH"],
        "TOOLBOUND_TOKEN": "the-bearer-token",
        "TOOLBOUND_STORE": str(data),
        "DEPLOY_KEY": "hunter2",
        "HARMLESS": "kept",
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
    }
    argv = ["-m", "toolbound", "serve", "--stdio", "--workspace", str(tmp_path)]
    argv += ["--keep-env-back", "DEPLOY_KEY", "--sandbox", "off"]
    params = StdioServerParameters(command=sys.executable, args=argv, env=env)
    async with Client(params, read_timeout_seconds=WAIT_S) as client:
        shown = text_of(await client.call_tool("Bash", {"command": "env"}))
    assert "HARMLESS=kept" in shown
    for secret in ("TOOLBOUND_TOKEN", "TOOLBOUND_STORE", "DEPLOY_KEY", "hunter2", "bearer"):
        assert secret not in shown
    # The store named by $TOOLBOUND_STORE, read once, is where the call was recorded.
    with SessionStore(data) as store:
        assert len(store.list()) == 1


async def test_the_web_view_lists_and_opens_no_session_another_token_named(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    theirs = named_session_id(token_namespace("another-token"), "work")
    mine = named_session_id(token_namespace("my-token"), "work")
    for sid in (theirs, mine, "mcp-0123"):
        async with ToolHost(tmp_path, data, sid) as host:
            await host.call("Bash", {"command": "true"})
    env = {**os.environ, "TOOLBOUND_TOKEN": "my-token"}
    argv = ["-m", "toolbound", "serve", "--http", "127.0.0.1:0", "--sandbox", "off"]
    argv += ["--workspace", str(tmp_path), "--data-dir", str(data)]
    with serve_process(argv, env) as lines:
        base = lines.get(timeout=WAIT_S).split("MCP server on ")[1].split("/mcp")[0]
        headers = {"Authorization": "Bearer my-token"}

        def get(path: str) -> httpx.Response:
            return httpx.get(f"{base}{path}", headers=headers, timeout=WAIT_S)

        listed = {row["id"] for row in get("/api/sessions").json()["sessions"]}
        assert listed == {mine, "mcp-0123"}
        assert get(f"/api/sessions/{mine}/calls").status_code == 200
        assert get(f"/api/sessions/{theirs}/calls").status_code == 404
        assert get(f"/api/sessions/{theirs}/ledger").status_code == 404


def test_the_web_view_alone_reads_toolbound_store_once_and_opens_that_store(
    tmp_path: Path,
) -> None:
    store = tmp_path / "elsewhere"
    recorded = run_cli(
        *("call", "Bash", '{"command": "true"}', "--store", str(store)),
        *("--data-dir", str(tmp_path / "data")),
        cwd=tmp_path,
    )
    assert recorded.returncode == 0, recorded.stderr
    env = {**os.environ, "TOOLBOUND_STORE": str(store), "TOOLBOUND_TOKEN": "my-token"}
    argv = ["-m", "toolbound", "web", "--http", "127.0.0.1:0", "--data-dir", str(tmp_path / "d")]
    with serve_process(argv, env) as lines:
        base = lines.get(timeout=WAIT_S).split("web view on ")[1].split("/?")[0]
        listed = httpx.get(
            f"{base}/api/sessions", headers={"Authorization": "Bearer my-token"}, timeout=WAIT_S
        )
    assert [row["id"] for row in listed.json()["sessions"]] == ["cli"]
