"""``serve --stdio`` answers ``tools/call`` on the wire once initialized
(``toolbound.stdio_calls``), with the bytes the SDK's server answers with
(``TOOLBOUND_STDIO_CALLS=sdk``): the same sequence of calls gives the same lines
either way, in both protocol eras; a cancelled call is aborted and never answered;
a call before initialization is the SDK's; calls run side by side."""

from __future__ import annotations

import functools
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from PIL import Image

from support import WAIT_S, alive, wait_for
from toolbound import SessionStore
from toolbound.edit.record import ReadRecord
from toolbound.limits import ECONOMY
from toolbound.serve import ServeOptions, stdio_parts
from toolbound.stdio_pipes import pipe_streams

HANDSHAKE = "2025-06-18"
MODERN = "2026-07-28"
CLIENT = {"name": "test-client", "version": "1.0"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": CLIENT},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": CLIENT,
}


class Wire:
    """A ``toolbound serve --stdio`` process driven with raw JSON-RPC lines."""

    def __init__(self, workspace: Path, *, calls: str, era: str = HANDSHAKE) -> None:
        env = {**os.environ, "TOOLBOUND_STDIO_CALLS": calls}
        argv = ["-m", "toolbound", "serve", "--stdio", "--sandbox", "off"]
        places = ["--workspace", str(workspace), "--data-dir", str(workspace / ".data")]
        self.era = era
        self.proc = subprocess.Popen(
            [sys.executable, *argv, *places],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.pumping = threading.Thread(target=self._pump, daemon=True)
        self.pumping.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def line(self) -> bytes:
        line = self.lines.get(timeout=WAIT_S)
        assert line, "the server closed stdout"
        return line

    def until_answer(self, request_id: object) -> list[bytes]:
        """The lines written up to the answer to ``request_id`` (its answer last)."""
        got = []
        while True:
            got.append(self.line())
            if json.loads(got[-1]).get("id") == request_id:
                return got

    def call(self, request_id: int, name: str, arguments: object, **meta: Any) -> list[bytes]:
        """A tools/call and the lines up to its answer."""
        self.send(call(request_id, name, arguments, era=self.era, **meta))
        return self.until_answer(request_id)

    def open(self) -> list[bytes]:
        """The era's opening: the handshake, or nothing (each call carries its envelope)."""
        if self.era != HANDSHAKE:
            return []
        self.send(INITIALIZE)
        opened = self.until_answer(0)
        self.send(INITIALIZED)
        return opened

    def close(self) -> list[bytes]:
        """Close stdin; the lines written until the server ended."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        rest = []
        while line := self.lines.get(timeout=WAIT_S):
            rest.append(line)
        assert self.proc.wait(timeout=WAIT_S) == 0
        return rest

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=WAIT_S)
        self.pumping.join(timeout=WAIT_S)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()


def call(request_id: int, name: str, arguments: object, *, era: str, **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if era != HANDSHAKE:
        meta = {**ENVELOPE, **meta}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


@pytest.fixture
def wires(tmp_path: Path) -> dict[str, Path]:
    """Two workspaces alike, one per path (each server records in its own)."""
    made = {}
    for calls in ("wire", "sdk"):
        workspace = tmp_path / calls
        workspace.mkdir()
        (workspace / "notes.txt").write_text("".join(f"note {i}\n" for i in range(30)))
        Image.new("RGB", (4, 3), (200, 0, 0)).save(workspace / "dot.png")
        made[calls] = workspace
    return made


def sequence(wire: Wire) -> list[bytes]:
    """Every line a server writes for the same calls, one after another."""
    lines = wire.open()
    lines += wire.call(1, "Read", {"path": "notes.txt"})
    lines += wire.call(2, "Bash", {"command": "echo one"}, progressToken="p2")
    lines += wire.call(3, "Read", {"path": "missing.txt"})
    lines += wire.call(4, "Nope", {})
    lines += wire.call(5, "Read", {"path": "notes.txt", "limit": "ten"})
    lines += wire.call(6, "Read", {"path": "notes.txt", "offset": 5}, **{"toolbound/session": "a"})
    lines += wire.call(7, "Read", {"path": "dot.png"})
    lines += wire.call(8, "Read", {"path": "notes.txt"}, **{"toolbound/session": 5})
    return lines + wire.close()


@pytest.mark.parametrize("era", [HANDSHAKE, MODERN])
def test_the_wire_answers_a_sequence_of_calls_with_the_sdks_bytes(
    wires: dict[str, Path], era: str
) -> None:
    answered = {}
    for calls, workspace in wires.items():
        wire = Wire(workspace, calls=calls, era=era)
        try:
            answered[calls] = sequence(wire)
        finally:
            wire.kill()
    assert answered["wire"] == answered["sdk"]
    messages = [json.loads(line) for line in answered["wire"]]
    progress = [m["params"] for m in messages if m.get("method") == "notifications/progress"]
    assert [(p["progressToken"], p["message"]) for p in progress] == [
        ("p2", "one\n"),
    ]
    results = {m["id"]: m["result"] for m in messages if "result" in m and m["id"]}
    assert results[1]["isError"] is False
    assert results[3]["isError"] is True
    assert results[7]["content"][0]["type"] == "image"
    assert results[8]["content"][0]["text"].startswith("TOOL_INVALID_ARGUMENT")


def test_a_call_before_initialization_gets_the_sdks_answer(wires: dict[str, Path]) -> None:
    answered = {}
    for calls, workspace in wires.items():
        wire = Wire(workspace, calls=calls)
        try:
            wire.send(INITIALIZE)
            lines = wire.until_answer(0)
            # Initialized by its initialize, not yet told initialized: still the SDK's gate.
            lines += wire.call(1, "Read", {"path": "notes.txt"})
            wire.send(INITIALIZED)
            lines += wire.call(2, "Read", {"path": "notes.txt", "limit": 2})
            answered[calls] = lines + wire.close()
        finally:
            wire.kill()
    assert answered["wire"] == answered["sdk"]


def test_a_call_on_a_fresh_connection_without_initialize_gets_the_sdks_refusal(
    wires: dict[str, Path],
) -> None:
    answered = {}
    for calls, workspace in wires.items():
        wire = Wire(workspace, calls=calls)
        try:
            answered[calls] = wire.call(1, "Read", {"path": "notes.txt"}) + wire.close()
        finally:
            wire.kill()
    assert answered["wire"] == answered["sdk"]
    assert json.loads(answered["wire"][0])["error"]["code"] == -32602


@pytest.mark.parametrize("calls", ["wire", "sdk"])
def test_a_cancelled_bash_is_stopped_and_never_answered(tmp_path: Path, calls: str) -> None:
    wire = Wire(tmp_path, calls=calls)
    try:
        wire.open()
        command = "echo $$ > pid; echo started; exec sleep 60"
        wire.send(call(1, "Bash", {"command": command}, era=HANDSHAKE, progressToken=1))
        assert json.loads(wire.line())["params"]["message"] == "started\n"
        pid = int((tmp_path / "pid").read_text())
        wire.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 1, "reason": "the user pressed escape"},
            }
        )
        wait_for(lambda: not alive(pid), what="the cancelled command to be stopped")
        after = wire.call(2, "Read", {"path": "pid"})
        assert [json.loads(line)["id"] for line in after] == [2]
        assert wire.close() == []
    finally:
        wire.kill()


def test_calls_on_the_wire_run_side_by_side(tmp_path: Path) -> None:
    wire = Wire(tmp_path, calls="wire")
    try:
        wire.open()
        waits = "while [ ! -e go ]; do sleep 0.01; done; echo went"
        wire.send(call(1, "Bash", {"command": waits}, era=HANDSHAKE))
        # The second call is answered while the first still waits for it.
        second = wire.call(2, "Bash", {"command": "touch go"})
        assert [json.loads(line)["id"] for line in second] == [2]
        first = json.loads(wire.until_answer(1)[-1])
        assert "went" in first["result"]["content"][0]["text"]
        assert wire.close() == []
    finally:
        wire.kill()


def test_calls_after_the_handshake_are_answered_by_the_wire_itself(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    options = ServeOptions(
        workspace=tmp_path, http=None, data_dir=tmp_path / ".data", profile=ECONOMY
    )
    to_server, client_out = os.pipe()
    client_in, from_server = os.pipe()
    answers: list[dict[str, Any]] = []
    _, server, lane = stdio_parts(options, instructions="hi")
    assert lane is not None

    def client() -> None:
        with open(client_out, "wb", buffering=0) as out, open(client_in, "rb") as back:
            for message in (
                INITIALIZE,
                INITIALIZED,
                call(1, "Read", {"path": "notes.txt"}, era=HANDSHAKE),
                call(2, "Read", {"path": "notes.txt", "limit": 1}, era=HANDSHAKE),
            ):
                out.write(json.dumps(message).encode() + b"\n")
                if "id" in message:
                    answers.append(json.loads(back.readline()))
                if message is INITIALIZED:
                    # Asked until the SDK took the notification: the wire's turn from then on.
                    wait_for(lambda: lane.ready, what="the connection to be initialized")

    async def main() -> None:
        async with pipe_streams(to_server, from_server, lane=lane) as (read, write):
            await server.run(read, write, server.create_initialization_options())

    talking = threading.Thread(target=client)
    talking.start()
    try:
        anyio.run(main)
    finally:
        talking.join(timeout=WAIT_S)
        for fd in (to_server, from_server):
            os.close(fd)
    assert [a["id"] for a in answers] == [0, 1, 2]
    assert lane.answered == 2
    assert "hello" in answers[1]["result"]["content"][0]["text"]


def test_stdin_ending_during_a_call_stops_it_and_answers_as_the_sdk_does(
    wires: dict[str, Path],
) -> None:
    answered = {}
    for calls, workspace in wires.items():
        wire = Wire(workspace, calls=calls)
        try:
            wire.open()
            wire.call(1, "Read", {"path": "notes.txt", "limit": 1})
            wire.send(call(2, "Bash", {"command": "echo $$ > pid; exec sleep 60"}, era=HANDSHAKE))
            pid_file = workspace / "pid"
            pid = int(wait_for(functools.partial(_text, pid_file), "the command started"))
            answered[calls] = wire.close()
            assert not alive(pid)
        finally:
            wire.kill()
    assert answered["wire"] == answered["sdk"]
    assert [json.loads(line)["error"]["message"] for line in answered["wire"]] == [
        "Connection closed"
    ]


def _text(path: Path) -> str:
    """The file's text once it holds a whole line, else ""."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return ""
    return text if text.endswith("\n") else ""


def test_a_read_answered_on_the_wire_is_in_the_read_record_the_store_keeps(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("".join(f"note {i}\n" for i in range(30)))
    wire = Wire(tmp_path, calls="wire")
    try:
        wire.open()
        [answer] = wire.call(1, "Read", {"path": "notes.txt", "limit": 5})
        assert json.loads(answer)["result"]["isError"] is False
        assert wire.close() == []
    finally:
        wire.kill()
    with SessionStore(tmp_path / ".data") as store:
        [session] = store.list()
        saved = store.read_record(session.id)
    assert saved is not None
    # What the session's next host loads: the window, still holding for Edit.
    record = ReadRecord.from_json(saved)
    data = (tmp_path / "notes.txt").read_bytes()
    record.check(
        (tmp_path / "notes.txt").resolve(), data, size=len(data), shown="notes.txt", tool="Edit"
    )
    [seen] = record.seen((tmp_path / "notes.txt").resolve())
    assert (seen.offset, seen.line_count) == (0, 5)
