"""``toolbound web``: the page without an MCP server, over the store (CONTRACT section 13)."""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx2 as httpx

WAIT_S = 30.0


def _pump(stream: Any, lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)


def test_the_web_view_alone_lists_and_replays_what_a_cli_call_recorded(tmp_path: Path) -> None:
    data = tmp_path / "data"
    toolbound = [sys.executable, "-m", "toolbound"]
    recorded = subprocess.run(
        [*toolbound, "call", "Bash", '{"command": "echo hi"}', "--data-dir", str(data)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert recorded.returncode == 0, recorded.stderr
    refused = subprocess.run(
        [*toolbound, "web", "--http", "0.0.0.0:0", "--data-dir", str(data)],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert refused.returncode == 2
    assert "--allow-remote" in refused.stderr

    command = [*toolbound, "web", "--http", "127.0.0.1:0", "--data-dir", str(data)]
    proc = subprocess.Popen(
        command, cwd=tmp_path, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stderr is not None
    pump = threading.Thread(target=_pump, args=(proc.stderr, lines), daemon=True)
    pump.start()
    try:
        line = lines.get(timeout=WAIT_S)
        found = re.fullmatch(
            r"toolbound: web view on (http://127\.0\.0\.1:\d+)/\?token=(\S+)\n", line
        )
        assert found, line
        base, token = found.group(1), found.group(2)
        with httpx.Client(timeout=WAIT_S) as client:
            assert client.get(base + "/api/sessions").status_code == 403
            query = {"token": token}
            listed = client.get(base + "/api/sessions", params=query)
            assert listed.status_code == 200, listed.text
            assert '"cli"' in json.dumps(listed.json())
            calls = client.get(base + "/api/sessions/cli/calls", params=query).json()
            assert '"Bash"' in json.dumps(calls)
            # The recorded call replays with its model text, as the host streamed it.
            (cid,) = re.findall(r'"toolCallId": "([^"]+)"', json.dumps(calls))
            events = client.get(f"{base}/api/sessions/cli/calls/{cid}/events", params=query)
            assert "[exit status 0]" in events.text
            assert "hi" in events.text
    finally:
        proc.terminate()
        proc.wait(timeout=WAIT_S)
        pump.join(timeout=WAIT_S)
        proc.stderr.close()
