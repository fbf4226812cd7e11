"""Background jobs through ToolHost.call: start, page, wait, stop, and nothing left behind."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from jobs_support import ended, in_session, mode_of, reap, running, start
from support import WAIT_S, alive, wait_for, wait_for_async
from toolbound import SessionStore, ToolHost
from toolbound.listeners import CallListener, CallStart

ZERO = {"bytes": 0, "lines": 0}


def counts(out: tuple[int, int], err: tuple[int, int]) -> dict[str, Any]:
    return {
        "stdout": {"bytes": out[0], "lines": out[1]},
        "stderr": {"bytes": err[0], "lines": err[1]},
    }


async def test_a_server_started_as_a_job_is_reached_by_a_later_call_and_stopped_whole(
    host: ToolHost, ws: Path
) -> None:
    started = await start(host, f"{sys.executable} -u -m http.server 0 --bind 127.0.0.1")
    job_id, pid = started["jobId"], started["pid"]
    assert set(started) == {"jobId", "state", "pid", "logs"}
    up = await host.call("JobOutput", {"jobId": job_id, "until": "Serving HTTP", "waitS": 30})
    match = re.fullmatch(r"Serving HTTP on 127\.0\.0\.1 port (\d+) \(.*\) \.\.\.", up["matched"])
    assert match, up
    assert (up["state"], up["stdout"]) == ("running", up["matched"] + "\n")
    port = match.group(1)
    fetch = f"{sys.executable} -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{port}/').status)\""
    reached = await host.call("Bash", {"command": fetch})
    assert reached["stdout"] == "200\n"
    logged = await host.call("JobOutput", {"jobId": job_id, "until": "GET / ", "waitS": 30})
    assert '"GET / HTTP/1.1" 200' in logged["matched"]
    stopped = await host.call("JobStop", {"jobId": job_id})
    assert (stopped["state"], stopped["exitCode"], stopped["signal"]) == ("killed", None, "SIGTERM")
    assert stopped["next"] == logged["next"]
    assert not alive(pid)
    assert in_session(pid) == []


async def test_a_job_returns_at_once_and_its_state_follows_its_end(
    host: ToolHost, ws: Path
) -> None:
    # The job cannot end before the test lets it: its start returns first, running.
    command = "until [ -e go ]; do sleep 0.01; done; echo done; echo oops >&2; exit 3"
    started = await asyncio.wait_for(start(host, command), WAIT_S)  # asserted running
    (ws / "go").touch()
    out = await ended(host, started["jobId"])
    assert {k: out[k] for k in ("state", "exitCode", "signal", "stdout", "stderr")} == {
        "state": "exited",
        "exitCode": 3,
        "signal": None,
        "stdout": "done\n",
        "stderr": "oops\n",
    }
    assert out["totals"] == counts((5, 1), (5, 1))
    assert out["next"] == {"stdout": 5, "stderr": 5}
    assert out["notice"] == "No line matched `until` before the job ended."


async def test_the_next_jobOutput_goes_on_where_the_last_one_stopped(host: ToolHost) -> None:
    started = await start(host, "echo one; sleep 600", timeout=60)
    job_id = started["jobId"]
    first = await host.call("JobOutput", {"jobId": job_id, "until": "^one$", "waitS": 30})
    assert (first["stdout"], first["next"]) == ("one\n", {"stdout": 4, "stderr": 0})
    again = await host.call("JobOutput", {"jobId": job_id})
    assert (again["stdout"], again["next"]) == ("", {"stdout": 4, "stderr": 0})
    from_start = await host.call(
        "JobOutput", {"jobId": job_id, "since": {"stdout": 0, "stderr": 0}}
    )
    assert from_start["stdout"] == "one\n"
    await host.call("JobStop", {"jobId": job_id})


async def test_the_same_since_gives_the_same_bytes(host: ToolHost) -> None:
    command = "for i in $(seq 1 20000); do echo line $i; echo err $i >&2; done; sleep 600"
    job_id = (await start(host, command))["jobId"]
    await host.call("JobOutput", {"jobId": job_id, "until": "^err 20000$", "waitS": 30})
    log = host.jobs.get(job_id).logs
    # stderr's last line is in; stdout's pump may still be behind it.
    await wait_for_async(lambda: log["stdout"].totals().lines == 20000, "stdout's last line")
    since = {"stdout": 1000, "stderr": 50}
    one = await host.call("JobOutput", {"jobId": job_id, "since": since})
    two = await host.call("JobOutput", {"jobId": job_id, "since": since})
    assert one == two
    stream = "".join(f"line {i}\n" for i in range(1, 20001))[1000:]
    shown = "".join(stream.splitlines(keepends=True)[:4000])
    assert one["stdout"] == shown + (
        f"[truncated: kept the first 4000 of {stream.count(chr(10))} lines; limit 4000 lines / "
        f"96KB. Full output saved to {log['stdout'].path} — Grep it, or Read it with "
        "offset/limit.]"
    )
    assert one["next"]["stdout"] == 1000 + len(shown)
    assert one["stderr"].startswith("[truncated: kept the last 4000 of ")
    assert one["stderr"].endswith("err 19999\nerr 20000\n")
    await host.call("JobStop", {"jobId": job_id})


async def test_a_ninth_running_job_is_refused_naming_the_running_ones(host: ToolHost) -> None:
    ids = [(await start(host, "sleep 600"))["jobId"] for _ in range(8)]
    refused = await host.call("Bash", {"command": "sleep 1", "background": True})
    code, message = refused["error"]["code"], refused["error"]["message"]
    assert code == "TOOL_INVALID_ARGUMENT"
    assert message.startswith("8 background jobs are running in this session already (")
    assert all(f"{job_id}: sleep 600" in message for job_id in ids)
    assert message.endswith(
        "Stop one with JobStop, or wait for one to end (JobOutput with `waitS`), then start "
        "this one again."
    )
    await host.call("JobStop", {"jobId": ids[0]})
    ninth = await start(host, "true")
    listed = await host.call("JobOutput", {})
    assert [j["jobId"] for j in listed["jobs"]] == [*ids, ninth["jobId"]]
    assert [j["state"] for j in listed["jobs"]][:2] == ["killed", "running"]


async def test_an_unknown_job_is_tool_job_not_found(host: ToolHost) -> None:
    for tool, args in (("JobOutput", {"jobId": "job_nope"}), ("JobStop", {"jobId": "job_nope"})):
        assert await host.call(tool, args) == {
            "error": {
                "code": "TOOL_JOB_NOT_FOUND",
                "message": "There is no job 'job_nope' in this session (its jobs: none). Call "
                "JobOutput without `jobId` to list them, or start one with Bash and "
                "`background: true`.",
            }
        }


async def test_bad_job_arguments_are_refused_before_anything_runs(host: ToolHost) -> None:
    job_id = (await start(host, "echo hi"))["jobId"]
    bad = {
        "JobOutput": [
            {"jobId": job_id, "until": "("},
            {"jobId": job_id, "waitS": 301},
            {"jobId": job_id, "since": {"stdout": -1, "stderr": 0}},
            {"jobId": job_id, "since": {"stdout": 10**9, "stderr": 0}},
            {"until": "x"},
        ],
        "Bash": [{"command": "true", "background": True, "timeout": 86401}],
    }
    codes = [
        (await host.call(tool, args))["error"]["code"]
        for tool, calls in bad.items()
        for args in calls
    ]
    assert codes == ["TOOL_INVALID_PATTERN"] + ["TOOL_INVALID_ARGUMENT"] * 5
    long_job = await host.call("Bash", {"command": "true", "background": True, "timeout": 3600})
    assert long_job["state"] == "running"
    plain = await host.call("Bash", {"command": "true", "timeout": 3600})
    assert plain["error"]["message"] == (
        "Invalid arguments for Bash: 'timeout' must be 1-300 seconds (got 3600); the default "
        "is 60. Fix the arguments and call again."
    )


UNTIL_SCRIPT = """
import asyncio, json, sys
from toolbound import ToolHost

async def main():
    async with ToolHost(sys.argv[1], data_dir=sys.argv[2]) as host:
        command = "printf '%s!\\n' $(printf 'a%.0s' {1..5000}); echo done; sleep 600"
        started = await host.call("Bash", {"command": command, "background": True})
        out = await host.call("JobOutput", {"jobId": started["jobId"], "until": "(a+)+$",
                                            "waitS": 1})
        late = await host.call("JobOutput", {"jobId": started["jobId"], "until": "^(d|o)+ne$",
                                             "since": {"stdout": 0, "stderr": 0}})
        bad = await host.call("JobOutput", {"jobId": started["jobId"], "until": "(?<=a)b"})
        print(json.dumps([out.get("matched"), out["notice"], late["matched"], bad["error"]]))

asyncio.run(main())
"""


def test_until_with_a_catastrophic_regex_answers_and_lookaround_is_invalid(
    tmp_path: Path, ws: Path
) -> None:
    # A backtracking engine spends ages on `(a+)+$` against a's ending in `!`; in a child
    # process, so that a hang is killed at the bound instead of stalling the test run.
    done = subprocess.run(
        [sys.executable, "-c", UNTIL_SCRIPT, str(ws), str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    matched, notice, late, bad = json.loads(done.stdout)
    assert (matched, late) == (None, "done")
    assert notice.startswith("No line matched `until` within 1 s.")
    assert bad == {
        "code": "TOOL_INVALID_PATTERN",
        "message": "`until` is not a valid RE2 regular expression (invalid perl operator: "
        "(?<=); fix or escape it (e.g. `\\(` for a literal parenthesis; no backreferences "
        "or look-around) and call again.",
    }


async def test_a_job_past_its_timeout_is_stopped_and_says_so(host: ToolHost) -> None:
    started = await start(host, "echo begun; sleep 600", timeout=1)
    out = await ended(host, started["jobId"])
    assert (out["state"], out["exitCode"], out["stdout"]) == ("timedOut", None, "begun\n")
    assert not alive(started["pid"])


async def test_setsid_and_double_forked_descendants_of_a_job_are_stopped(host: ToolHost) -> None:
    command = "setsid sleep 600 & echo a $!; (sleep 600 & echo b $!) ; sleep 600"
    started = await start(host, command)
    out = await host.call("JobOutput", {"jobId": started["jobId"], "until": "^b ", "waitS": 30})
    pids = [int(line.split()[1]) for line in out["stdout"].splitlines()]
    assert all(alive(pid) for pid in pids)
    await host.call("JobStop", {"jobId": started["jobId"]})
    assert [pid for pid in [*pids, started["pid"]] if alive(pid)] == []


async def test_what_a_job_left_running_when_its_shell_exited_is_stopped(host: ToolHost) -> None:
    started = await start(host, "sleep 600 & echo $!")
    out = await ended(host, started["jobId"])
    assert out["state"] == "exited"
    assert out["notice"] == (
        "No line matched `until` before the job ended. The job's shell exited but 1 process "
        "it started kept running; stopped 1 lingering process."
    )
    assert not alive(int(out["stdout"]))


async def test_ending_the_session_stops_every_job_and_removes_the_logs(
    tmp_path: Path, ws: Path
) -> None:
    host = ToolHost(ws, data_dir=tmp_path / "data", session_id="s-end")
    await host.__aenter__()
    jobs = [await start(host, "setsid sleep 600 & echo $!; sleep 600") for _ in range(3)]
    outs = [
        await host.call("JobOutput", {"jobId": j["jobId"], "until": r"^\d+$", "waitS": 30})
        for j in jobs
    ]
    pids = [j["pid"] for j in jobs] + [int(o["stdout"]) for o in outs]
    logs = jobs[0]["logs"]["stdout"]
    assert (mode_of(logs), mode_of(os.path.dirname(logs))) == (0o600, 0o700)
    await host.end()
    assert [pid for pid in pids if alive(pid)] == []
    assert mode_of(logs) is None


async def test_closing_the_host_stops_its_jobs(tmp_path: Path, ws: Path) -> None:
    async with ToolHost(ws, data_dir=tmp_path / "data") as host:
        pid = (await start(host, "sleep 600"))["pid"]
    assert not alive(pid)


HOST_SCRIPT = """
import asyncio, sys
from toolbound import SessionStore, ToolHost

async def main():
    async with ToolHost(sys.argv[1], data_dir=sys.argv[2]) as host:
        for _ in range(2):
            command = "setsid sleep 600 & echo $! >> pids; sleep 600 & echo $! >> pids"
            await host.call("Bash", {"command": command + "; echo $$ >> pids; wait",
                                     "background": True})
        print("ready", flush=True)
        await asyncio.sleep(600)

asyncio.run(main())
"""


async def test_a_host_killed_with_sigkill_takes_every_job_with_it(tmp_path: Path, ws: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        HOST_SCRIPT,
        str(ws),
        str(tmp_path / "data"),
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert line == b"ready\n"
        pids_file = ws / "pids"
        # The jobs write the file as they start, maybe after the host said "ready".
        text = await wait_for_async(
            lambda: pids_file.exists() and (t := pids_file.read_text()).count("\n") == 6 and t,
            "the jobs' pids",
        )
        pids = [int(p) for p in text.split()]
        assert all(alive(pid) for pid in pids)
    finally:
        proc.kill()
        await proc.wait()
    # The host's orphans come to this process (a subreaper: it ran hosts), killed.
    wait_for(lambda: not any(running(pid) for pid in pids), "every job's process to be killed")
    reap(pids)


async def test_logs_are_readable_with_read_and_grep(host: ToolHost) -> None:
    started = await start(host, "printf 'alpha\\nbeta\\n'")
    await ended(host, started["jobId"])
    path = started["logs"]["stdout"]
    read = await host.call("Read", {"path": path})
    assert (read["root"], read["content"]) == ("scratch", "alpha\nbeta\n")
    grep = await host.call("Grep", {"pattern": "bet", "path": path})
    assert grep["matches"] == [{"path": path, "line": 2, "text": "beta"}]


class Recorder(CallListener):
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, Any]] = []

    def call_started(self, call: CallStart) -> None:
        self.seen.append(("started", call.tool_call_id, call.args))

    def call_event(self, call: CallStart, event: dict[str, Any]) -> None:
        self.seen.append(("event", call.tool_call_id, event))

    def call_ended(self, call: CallStart, failure: BaseException | None) -> None:
        self.seen.append(("ended", call.tool_call_id, failure))


async def test_a_jobs_chunks_reach_the_listeners_live_with_their_own_seq(host: ToolHost) -> None:
    listener = Recorder()
    host.listeners.append(listener)
    started = await start(host, "echo out; echo err >&2; sleep 600; echo late")
    job_id = started["jobId"]
    await wait_for_async(
        lambda: sum(1 for kind, cid, _ in listener.seen if kind == "event" and cid == job_id) >= 2,
        "the job's first chunks",
    )
    await host.call("JobStop", {"jobId": job_id})
    mine = [(kind, payload) for kind, cid, payload in listener.seen if cid == job_id]
    command = "echo out; echo err >&2; sleep 600; echo late"
    assert mine[0] == ("started", {"command": command, "background": True})
    events = [payload for kind, payload in mine if kind == "event"]
    assert [e["seq"] for e in events] == list(range(len(events)))
    chunks = {(e["stream"], e["data"]) for e in events if e["type"] == "chunk"}
    assert chunks == {("stdout", "out\n"), ("stderr", "err\n")}
    result = events[-1]
    assert (result["type"], result["toolCallId"]) == ("result", job_id)
    assert result["result"]["state"] == "killed"
    assert result["text"].startswith(f"[job {job_id} killed by signal SIGTERM]")
    assert mine[-1] == ("ended", None)


async def test_toolbound_call_says_its_job_ends_with_the_call(tmp_path: Path, ws: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolbound",
        "call",
        "Bash",
        '{"command": "sleep 600", "background": true}',
        "--workspace",
        str(ws),
        "--data-dir",
        str(tmp_path / "data"),
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 30)
    result = json.loads(out)
    assert proc.returncode == 0
    assert result["notice"].startswith("This host serves one call (`toolbound call`)")
    assert not alive(result["pid"])
    assert mode_of(result["logs"]["stdout"]) == 0o600


async def test_jobOutput_with_waitS_returns_as_soon_as_new_output_comes(host: ToolHost) -> None:
    job_id = (await start(host, "sleep 0.2; echo later; sleep 600"))["jobId"]
    # A wait that ran out its whole waitS would outlast this hang bound.
    out = await asyncio.wait_for(host.call("JobOutput", {"jobId": job_id, "waitS": 60}), 30)
    assert (out["stdout"], out["state"]) == ("later\n", "running")
    idle = await host.call("JobOutput", {"jobId": job_id, "waitS": 0.2})
    assert (idle["stdout"], idle["next"]) == ("", out["next"])
    await host.call("JobStop", {"jobId": job_id})


async def test_a_waiting_jobOutput_returns_when_its_call_is_aborted(host: ToolHost) -> None:
    job_id = (await start(host, "sleep 600"))["jobId"]
    waiting = asyncio.ensure_future(
        host.call("JobOutput", {"jobId": job_id, "waitS": 300}, tool_call_id="w")
    )
    await wait_for_async(lambda: host.abort("w"), "the JobOutput call to be running")
    out = await asyncio.wait_for(waiting, 30)
    assert (out["state"], out["stdout"]) == ("running", "")
    await host.call("JobStop", {"jobId": job_id})


async def test_a_job_is_recorded_in_the_store_as_a_call_of_its_own(
    tmp_path: Path, ws: Path
) -> None:
    async with ToolHost(ws, data_dir=tmp_path / "data", session_id="rec") as host:
        started = await start(host, "echo recorded")
        await ended(host, started["jobId"])
    store = SessionStore(tmp_path / "data")
    try:
        calls = {c["toolCallId"]: c for c in store.tool_calls("rec")}
        events = store.events(started["jobId"], session_id="rec")
    finally:
        store.close()
    assert calls[started["jobId"]]["tool"] == "Bash"
    assert [(e["type"], e["seq"]) for e in events] == [("chunk", 0), ("result", 1)]
    assert events[0]["data"] == "recorded\n"
    assert events[1]["result"]["state"] == "exited"
    assert events[1]["text"].startswith(f"[job {started['jobId']} exited: exit status 0]")


async def test_the_ledger_counts_what_the_model_read_of_a_job_not_its_own_call(
    tmp_path: Path, ws: Path
) -> None:
    async with ToolHost(
        ws, data_dir=tmp_path / "data", session_id="led", profile="economy"
    ) as host:
        started = await start(host, "echo ledgered")
        await ended(host, started["jobId"])
        again = {"jobId": started["jobId"], "since": {"stdout": 0, "stderr": 0}}
        seen = await host.call("JobOutput", again, tool_call_id="out")
    store = SessionStore(tmp_path / "data")
    try:
        ledger = store.session("led").ledger()
        recorded = [c["toolCallId"] for c in store.tool_calls("led")]
        job_call = store.events(started["jobId"], session_id="led")
    finally:
        store.close()
    # The job's own call is recorded (its profile with it)...
    assert job_call[-1]["text"].startswith(f"[job {started['jobId']} exited")
    # ...but only the calls whose results the model read are in the ledger.
    assert started["jobId"] in recorded
    read = [c for c in recorded if c != started["jobId"]]
    assert [c["toolCallId"] for c in ledger["calls"]] == read
    assert ledger["calls"][0]["tool"] == "Bash"
    assert ledger["calls"][-1]["toolCallId"] == "out"
    assert seen["stdout"] == "ledgered\n"
    assert ledger["total"]["calls"] == len(read)
