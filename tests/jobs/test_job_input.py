"""A job the way agents use one: output that arrives, input it reads, a terminal, its end.

Real programs throughout: a Python dev server, a REPL, `read -p` on a terminal,
`cat` reading to its end of file, a C stdio filter.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from jobs_support import ended, start
from support import WAIT_S, wait_for_async
from toolbound import DEFAULT_LIMITS, SessionStore, ToolHost
from toolbound.listeners import CallListener, CallStart
from toolbound.model_text import model_text

# JobInput waits this long for an answer in these tests (it returns as soon as the
# answer has paused): a loaded machine may take a while to run a REPL's line.
PATIENT = DEFAULT_LIMITS.replace(job_input_wait_s=WAIT_S, job_input_quiet_s=0.3)


@pytest.fixture
async def patient(tmp_path: Path, ws: Path) -> Any:
    async with ToolHost(ws, data_dir=tmp_path / "data", session_id="s1", limits=PATIENT) as h:
        yield h


async def test_a_python_dev_server_shows_its_first_line_while_it_runs(
    host: ToolHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No -u and no PYTHONUNBUFFERED of the host's own: on a pipe Python would hold
    # the line in its buffer until 8 KB of log or its exit (the 0 bytes).
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    started = await start(host, f"{sys.executable} -m http.server 0 --bind 127.0.0.1")
    up = await host.call(
        "JobOutput", {"jobId": started["jobId"], "until": "^Serving HTTP", "waitS": WAIT_S}
    )
    assert up["state"] == "running"
    assert up["matched"].startswith("Serving HTTP on 127.0.0.1 port ")
    await host.call("JobStop", {"jobId": started["jobId"]})


async def test_a_c_stdio_filter_in_a_job_writes_each_line_as_it_goes(host: ToolHost) -> None:
    # `tr` writes through glibc's stdio: to a pipe it would keep HELLO until it ends.
    started = await start(host, "{ echo hello; sleep 600; } | tr a-z A-Z")
    out = await host.call(
        "JobOutput", {"jobId": started["jobId"], "until": "^HELLO$", "waitS": WAIT_S}
    )
    assert (out["state"], out["matched"]) == ("running", "HELLO")
    await host.call("JobStop", {"jobId": started["jobId"]})


async def test_a_repl_answers_what_jobinput_writes(patient: ToolHost) -> None:
    started = await start(patient, f"{sys.executable} -i -q")
    job_id = started["jobId"]
    # Its first prompt (on stderr, as Python prompts when stdin is not a terminal).
    first = await patient.call("JobOutput", {"jobId": job_id, "waitS": WAIT_S})
    assert first["stderr"] == ">>> "
    answer = await patient.call("JobInput", {"jobId": job_id, "input": "print(6 * 7)\n"})
    assert (answer["jobId"], answer["state"], answer["stdout"]) == (job_id, "running", "42\n")
    again = await patient.call("JobInput", {"jobId": job_id, "input": "print('a' * 3)\n"})
    assert again["stdout"] == "aaa\n"
    # `close` is the end of its input: the REPL exits, and says nothing more.
    closed = await patient.call("JobInput", {"jobId": job_id, "input": "", "close": True})
    assert closed["stdout"] == ""
    done = await ended(patient, job_id)
    assert (done["state"], done["exitCode"]) == ("exited", 0)


async def test_a_read_p_prompt_on_a_terminal_is_answered(patient: ToolHost) -> None:
    command = "read -r -p 'name? ' name; echo \"hi $name\""
    started = await start(patient, command, tty=True)
    assert started["tty"] is True
    job_id = started["jobId"]
    # The prompt has no newline: wait for any output, then answer it.
    await wait_for_async(
        lambda: patient.jobs.get(job_id).logs["stdout"].total_bytes >= len("name? "),
        "the prompt",
    )
    answer = await patient.call("JobInput", {"jobId": job_id, "input": "bob\n"})
    # The terminal echoes what was typed, then the command answers.
    assert answer["stdout"] == "name? bob\nhi bob\n"
    assert answer["stderr"] == ""
    done = await ended(patient, job_id)
    assert (done["state"], done["exitCode"]) == ("exited", 0)


async def test_a_tty_job_runs_on_a_terminal_of_the_documented_size_with_one_stream(
    host: ToolHost,
) -> None:
    command = "tty; stty size; test -t 1 && echo stdout is a terminal; echo to stderr >&2"
    started = await start(host, command, tty=True)
    out = await ended(host, started["jobId"])
    lines = out["stdout"].splitlines()
    assert lines[0].startswith("/dev/pts/")
    assert lines[1:] == [
        f"{DEFAULT_LIMITS.job_tty_rows} {DEFAULT_LIMITS.job_tty_columns}",
        "stdout is a terminal",
        "to stderr",
    ]
    assert (out["stderr"], out["totals"]["stderr"]["bytes"]) == ("", 0)
    assert (out["state"], out["exitCode"]) == ("exited", 0)


async def test_ctrl_c_written_to_a_tty_job_interrupts_it_as_a_terminal_would(
    patient: ToolHost,
) -> None:
    # The terminal is the shell's controlling terminal: its Ctrl-C is a SIGINT.
    command = "trap 'echo got INT; exit 7' INT; echo ready; sleep 600 & wait"
    started = await start(patient, command, tty=True)
    job_id = started["jobId"]
    await patient.call("JobOutput", {"jobId": job_id, "until": "^ready$", "waitS": WAIT_S})
    await patient.call("JobInput", {"jobId": job_id, "input": "\u0003"})
    out = await ended(patient, job_id)
    assert (out["state"], out["exitCode"]) == ("exited", 7)
    whole = await patient.call("JobOutput", {"jobId": job_id, "since": {"stdout": 0, "stderr": 0}})
    assert whole["stdout"] == "ready\n^Cgot INT\n"


async def test_a_tty_jobs_terminal_rewrites_are_shown_collapsed(host: ToolHost) -> None:
    started = await start(host, "printf '10%%\\r50%%\\rdone\\n\\033[31mred\\033[0m\\n'", tty=True)
    out = await ended(host, started["jobId"])
    assert out["stdout"] == "done\nred\n"
    # Said, with where every byte is: 8 bytes of overwritten progress, 9 of styling.
    assert (
        "stdout is shown as a terminal shows it: 17 bytes of overwritten progress, erased "
        f"lines and styling left out; its log keeps every byte ({started['logs']['stdout']})."
    ) in out["notice"]
    # The log keeps the bytes as they came.
    log = await asyncio.to_thread(Path(started["logs"]["stdout"]).read_bytes)
    assert log == b"10%\r50%\rdone\n\x1b[31mred\x1b[0m\n"


async def test_closing_a_jobs_stdin_ends_what_reads_it(host: ToolHost) -> None:
    started = await start(host, "wc -c; echo counted")
    job_id = started["jobId"]
    await host.call("JobInput", {"jobId": job_id, "input": "abc\n"})
    await host.call("JobInput", {"jobId": job_id, "input": "de", "close": True})
    assert (await ended(host, job_id))["state"] == "exited"
    out = await host.call("JobOutput", {"jobId": job_id, "since": {"stdout": 0, "stderr": 0}})
    assert out["stdout"] == "6\ncounted\n"


async def test_waitfor_exit_gathers_every_line_until_the_job_ends(host: ToolHost, ws: Path) -> None:
    # Six lines, each only once the test let the previous one out: a wait that
    # returned at the first new output would see one line.
    command = "for i in 1 2 3 4 5 6; do echo line $i; sleep 0.05; done"
    started = await start(host, command)
    out = await host.call(
        "JobOutput", {"jobId": started["jobId"], "waitFor": "exit", "waitS": WAIT_S}
    )
    assert out["state"] == "exited"
    assert out["stdout"] == "".join(f"line {i}\n" for i in range(1, 7))


async def test_waitfor_exit_returns_after_waits_for_a_job_still_running(host: ToolHost) -> None:
    started = await start(host, "echo begun; sleep 600")
    out = await host.call("JobOutput", {"jobId": started["jobId"], "waitFor": "exit", "waitS": 0})
    assert out["state"] == "running"
    await host.call("JobStop", {"jobId": started["jobId"]})


async def test_jobinput_refuses_what_it_cannot_write(host: ToolHost) -> None:
    limit = DEFAULT_LIMITS.job_input_max_bytes
    started = await start(host, "sleep 600")
    job_id = started["jobId"]
    big = await host.call("JobInput", {"jobId": job_id, "input": "x" * (limit + 1)})
    assert big["error"]["code"] == "TOOL_INVALID_ARGUMENT"
    assert f"{limit + 1} bytes, more than the {limit} bytes" in big["error"]["message"]
    missing = await host.call("JobInput", {"jobId": "job_nope", "input": "x"})
    assert missing["error"]["code"] == "TOOL_JOB_NOT_FOUND"
    await host.call("JobStop", {"jobId": job_id})
    gone = await host.call("JobInput", {"jobId": job_id, "input": "x\n"})
    assert gone["error"]["code"] == "TOOL_INVALID_ARGUMENT"
    assert "is not running (state killed" in gone["error"]["message"]


async def test_jobinput_after_close_says_stdin_is_closed(host: ToolHost) -> None:
    started = await start(host, "sleep 600")
    job_id = started["jobId"]
    await host.call("JobInput", {"jobId": job_id, "input": "", "close": True})
    again = await host.call("JobInput", {"jobId": job_id, "input": "x"})
    assert again["error"]["code"] == "TOOL_INVALID_ARGUMENT"
    assert "stdin was closed" in again["error"]["message"]
    await host.call("JobStop", {"jobId": job_id})


async def test_tty_and_waitfor_are_refused_where_they_mean_nothing(host: ToolHost) -> None:
    foreground = await host.call("Bash", {"command": "tty", "tty": True})
    assert foreground["error"]["code"] == "TOOL_INVALID_ARGUMENT"
    assert "'tty' is for background jobs only" in foreground["error"]["message"]
    listing = await host.call("JobOutput", {"waitFor": "exit"})
    assert listing["error"]["code"] == "TOOL_INVALID_ARGUMENT"


async def test_a_foreground_commands_stdin_stays_empty(host: ToolHost) -> None:
    out = await host.call("Bash", {"command": "readlink /proc/self/fd/0; cat | wc -c"})
    assert out["stdout"] == "/dev/null\n0\n"


class Seen(CallListener):
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def call_event(self, call: CallStart, event: dict[str, Any]) -> None:
        self.events.append((call.tool_call_id, event))


async def test_a_jobs_input_is_an_event_of_its_own_seq_and_its_call_is_recorded(
    host: ToolHost,
) -> None:
    seen = Seen()
    host.listeners.append(seen)
    started = await start(host, "read -r line; echo got $line")
    job_id = started["jobId"]
    answer = await host.call("JobInput", {"jobId": job_id, "input": "ping\n"}, tool_call_id="in1")
    await ended(host, job_id)
    mine = [event for cid, event in seen.events if cid == job_id]
    assert [e["seq"] for e in mine] == list(range(len(mine)))
    kinds = [(e["type"], e.get("data")) for e in mine]
    assert kinds[0] == ("input", "ping\n")
    assert ("chunk", "got ping\n") in kinds
    assert mine[0] == {
        "type": "input",
        "toolCallId": job_id,
        "seq": 0,
        "data": "ping\n",
        "close": False,
    }
    # The JobInput call is a call like any: its arguments and result in the store;
    # the job's stored events are its input, chunks and result, in seq order.
    await host.aclose()
    store = SessionStore(host.data_dir)
    try:
        calls = {c["toolCallId"]: c for c in store.tool_calls("s1")}
        stored = store.events(job_id, session_id="s1")
    finally:
        store.close()
    assert (calls["in1"]["tool"], calls["in1"]["args"]) == (
        "JobInput",
        {"jobId": job_id, "input": "ping\n"},
    )
    assert [e["type"] for e in stored] == ["input", "chunk", "result"]
    assert stored[0] == mine[0]
    assert model_text("JobInput", answer).startswith(f"[job {job_id} ")
