"""``serve --stdio`` on pipes reads and writes them on the event loop
(``toolbound.stdio_pipes``): lines split across writes, several in one write, a
last line without its newline at EOF, blank and broken lines; a command cannot write
into the protocol; fd 0 and 1 are diverted while serving and restored after."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from toolbound.stdio_pipes import claimed, is_pipe, pipe_streams

WAIT_S = 60.0
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(id_: int, name: str, arguments: dict[str, Any]) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": id_,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return json.dumps(message).encode()


def serve(tmp_path: Path) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "toolbound", "serve", "--stdio", "--sandbox", "off"]
    return subprocess.Popen(
        [*argv, "--workspace", str(tmp_path), "--data-dir", str(tmp_path / "data")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def answers(
    proc: subprocess.Popen[bytes], writes: list[bytes], want: set[object]
) -> dict[object, Any]:
    """Write each of ``writes`` as it is, read answers until those of ``want`` came,
    then close stdin and read the rest until EOF."""
    assert proc.stdin is not None
    assert proc.stdout is not None
    got: dict[object, Any] = {}
    try:
        for data in writes:
            proc.stdin.write(data)
            proc.stdin.flush()
        while not want <= set(got):
            line = proc.stdout.readline()
            assert line, f"the server closed stdout after {got}"
            message = json.loads(line)
            got[message.get("id")] = message
        proc.stdin.close()
        for line in proc.stdout.read().splitlines():
            message = json.loads(line)
            got[message.get("id")] = message
        assert proc.wait(timeout=WAIT_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    return got


def text_of(answer: dict[str, Any]) -> str:
    return "".join(block["text"] for block in answer["result"]["content"])


def test_lines_split_joined_blank_and_broken_are_each_served(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    opening = json.dumps(INITIALIZE).encode() + b"\n" + json.dumps(INITIALIZED).encode() + b"\n"
    split = call(2, "Read", {"path": "a.txt"})
    got = answers(
        serve(tmp_path),
        [
            opening,
            split[:10],  # one request in two writes
            split[10:] + b"\n\n",  # then a blank line
            b"not json at all\n",
            # two requests in one write
            call(3, "Glob", {"pattern": "*.txt"}) + b"\n" + call(4, "List", {}) + b"\n",
        ],
        {1, 2, 3, 4},
    )
    assert "alpha" in text_of(got[2])
    assert "a.txt" in text_of(got[3])
    assert "a.txt" in text_of(got[4])
    # Nothing else answered but, maybe, the broken line (an error without an id).
    assert set(got) <= {1, 2, 3, 4, None}


def test_a_command_writing_to_the_servers_stdout_cannot_reach_the_protocol(
    tmp_path: Path,
) -> None:
    opening = json.dumps(INITIALIZE).encode() + b"\n" + json.dumps(INITIALIZED).encode() + b"\n"
    # The server's own fd 1 is what a child inherits; Bash's command gets pipes of its own,
    # so the server's stdout is reached through /proc.
    command = """echo '{"jsonrpc":"2.0","id":99}' > /proc/$PPID/fd/1; echo done"""
    got = answers(serve(tmp_path), [opening, call(2, "Bash", {"command": command}) + b"\n"], {1, 2})
    assert 99 not in got
    assert set(got) == {1, 2}


def test_pipe_streams_divert_fd_0_and_1_while_serving_and_restore_them(tmp_path: Path) -> None:
    wire_in_r, wire_in_w = os.pipe()
    wire_out_r, wire_out_w = os.pipe()
    saved = (os.dup(0), os.dup(1))
    os.dup2(wire_in_r, 0)
    os.dup2(wire_out_w, 1)
    seen: list[object] = []

    async def main() -> None:
        async with pipe_streams() as (read_stream, write_stream):
            assert not is_pipe(0)  # the null device while serving
            assert os.fstat(1).st_ino == os.fstat(2).st_ino  # stderr while serving
            # A whole line, then one EOF ends without its newline.
            os.write(wire_in_w, json.dumps(INITIALIZED).encode() + b"\n")
            os.write(wire_in_w, json.dumps(INITIALIZED).encode())
            os.close(wire_in_w)
            async with read_stream:
                async for item in read_stream:
                    seen.append(item)
            ping = types.JSONRPCRequest(jsonrpc="2.0", id=7, method="ping")
            async with write_stream:
                await write_stream.send(SessionMessage(ping))

    try:
        anyio.run(main)
        assert os.fstat(0).st_ino == os.fstat(wire_in_r).st_ino
        assert os.fstat(1).st_ino == os.fstat(wire_out_w).st_ino
        assert os.get_blocking(0)
        assert os.get_blocking(1)
    finally:
        os.dup2(saved[0], 0)
        os.dup2(saved[1], 1)
        for fd in (*saved, wire_in_r, wire_out_w):
            os.close(fd)
    assert [type(i) for i in seen] == [SessionMessage, SessionMessage]
    assert json.loads(os.read(wire_out_r, 4096)) == {"jsonrpc": "2.0", "id": 7, "method": "ping"}
    os.close(wire_out_r)


def test_claimed_gives_a_private_non_blocking_copy_and_puts_the_wire_back() -> None:
    r, w = os.pipe()
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        with claimed(r, null) as private:
            assert private != r
            assert not os.get_blocking(private)
            assert not is_pipe(r)
            os.write(w, b"x")
            assert os.read(private, 1) == b"x"
        assert is_pipe(r)
        assert os.get_blocking(r)
    finally:
        for fd in (r, w, null):
            os.close(fd)
