"""The host's call listeners and the hub: every call seen live, in seq order, to the end."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

from support import wait_for_async
from toolbound.host import ToolHost
from toolbound.listeners import CallListener, CallStart
from toolbound.web import CallRecord, Hub
from toolbound.web.calls import outputs_of, reread_of, short_args, status_of

SLOW = (
    "for i in 1 2 3; do echo out $i; echo err $i >&2; done; "
    "while [ ! -e gate ]; do sleep 0.02; done"
)
STREAMS = ("stdout", "stderr")


@pytest.fixture
async def host(tmp_path: Path) -> Any:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with ToolHost(workspace=ws, data_dir=tmp_path / "data", session_id="h1") as h:
        yield h


class Seen(CallListener):
    """Every listener call, as (method, call id, what it got)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []

    def call_started(self, call: CallStart) -> None:
        self.calls.append(("started", call.tool_call_id, call))

    def call_event(self, call: CallStart, event: dict[str, Any]) -> None:
        self.calls.append(("event", call.tool_call_id, event))

    async def settle(self, call: CallStart) -> None:
        self.calls.append(("settle", call.tool_call_id, None))

    def call_ended(self, call: CallStart, failure: BaseException | None) -> None:
        self.calls.append(("ended", call.tool_call_id, failure))


async def test_a_listener_sees_the_start_every_event_the_settle_then_the_end(
    tmp_path: Path,
) -> None:
    seen = Seen()
    ws = tmp_path / "ws"
    ws.mkdir()
    args = {"command": "echo a; echo b >&2"}
    async with ToolHost(ws, tmp_path / "data", "h1", listeners=[seen]) as host:
        streamed = [e async for e in host.stream("Bash", args, tool_call_id="c1")]
    start = CallStart(session_id="h1", tool_call_id="c1", tool="Bash", args=args)
    assert seen.calls == [
        ("started", "c1", start),
        *[("event", "c1", e) for e in streamed],
        ("settle", "c1", None),
        ("ended", "c1", None),
    ]
    # What was seen is the call itself: its chunks in seq order, then its result.
    assert [e["seq"] for e in streamed] == list(range(len(streamed)))
    assert [e["type"] for e in streamed] == ["chunk"] * (len(streamed) - 1) + ["result"]
    streams = ("stdout", "stderr")
    live = {s: "".join(e["data"] for e in streamed[:-1] if e["stream"] == s) for s in streams}
    result = streamed[-1]["result"]
    assert live == {s: result[s] for s in streams} == {"stdout": "a\n", "stderr": "b\n"}


async def test_a_listener_gets_the_result_when_the_consumer_stops_early(host: ToolHost) -> None:
    seen = Seen()
    host.listeners.append(seen)
    events = host.stream("Bash", {"command": "echo one; echo two"}, tool_call_id="c2")
    first = await anext(events)
    await events.aclose()
    got = [e for kind, _, e in seen.calls if kind == "event"]
    assert got[0] == first
    assert got[-1]["type"] == "result"
    assert [e["seq"] for e in got] == list(range(len(got)))
    assert seen.calls[-1] == ("ended", "c2", None)


async def test_a_listener_that_raises_does_not_break_the_call(
    host: ToolHost, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken(CallListener):
        def call_event(self, call: CallStart, event: dict[str, Any]) -> None:
            raise RuntimeError("listener bug")

    host.listeners.append(Broken())
    result = await host.call("Bash", {"command": "echo fine"})
    assert result["stdout"] == "fine\n"
    assert "listener bug" in caplog.text


async def test_a_late_subscriber_gets_the_backlog_then_live_events_to_the_result(
    host: ToolHost,
) -> None:
    hub = Hub()
    hub.attach(host)
    before = time.time()
    call = asyncio.create_task(
        host.call("Bash", {"command": SLOW, "timeout": 30}, tool_call_id="c3")
    )

    def streaming() -> CallRecord | None:
        record = hub.record("h1", "c3")
        return record if record is not None and record.last_seq >= 1 else None

    record = await wait_for_async(streaming, "two events of the call in the hub")
    assert record is not None
    feed = hub.subscribe("h1", "c3", after=0)
    (host.workspace / "gate").touch()
    got = [e async for e in feed]
    await call
    after = time.time()
    everything = hub.events("h1", "c3")
    assert everything is not None
    assert got == everything[1:]
    assert got[-1]["type"] == "result"
    ended = hub.record("h1", "c3")
    assert ended is not None
    assert ended.ended_at is not None
    # The call's times bracket the call, start before end, the start kept from the first look.
    assert before <= record.started_at == ended.started_at <= ended.ended_at <= after
    assert ended == CallRecord(
        tool_call_id="c3",
        session_id="h1",
        tool="Bash",
        args={"command": SLOW, "timeout": 30},
        started_at=record.started_at,
        ended_at=ended.ended_at,
        result=got[-1]["result"],
        last_seq=got[-1]["seq"],
        text=got[-1]["text"],
    )


async def test_finished_events_beyond_the_retention_budget_are_dropped_oldest_first(
    host: ToolHost,
) -> None:
    hub = Hub(retain_bytes=3000)
    hub.attach(host)
    await host.call("Bash", {"command": "seq 1 500"}, tool_call_id="old")  # 1892 bytes
    await host.call("Bash", {"command": "seq 1 400"}, tool_call_id="new")  # 1492 bytes
    assert hub.events("h1", "old") is None
    assert hub.events("h1", "new") is not None
    with pytest.raises(KeyError):
        hub.subscribe("h1", "old")
    assert [r.tool_call_id for r in hub.records("h1")] == ["old", "new"]
    hub.detach(host)
    await host.call("Bash", {"command": "true"}, tool_call_id="unseen")
    assert hub.record("h1", "unseen") is None


async def test_an_image_reads_data_counts_against_the_budget_and_its_record_leaves_it_out(
    host: ToolHost, tmp_path: Path
) -> None:
    from PIL import Image

    noise = Image.frombytes("RGB", (300, 300), os.urandom(300 * 300 * 3))
    noise.save(tmp_path / "ws" / "noise.png")
    hub = Hub(retain_bytes=100_000)
    hub.attach(host)
    result = await host.call("Read", {"path": "noise.png"}, tool_call_id="img")
    data = result["image"]["data"]
    assert len(data) > 100_000
    # Its events outgrow the budget at once; the record keeps all but the image's data.
    assert hub.events("h1", "img") is None
    kept = hub.record("h1", "img")
    assert kept is not None
    assert kept.result == {**result, "image": {**result["image"], "data": None}}
    assert hub.partial("h1", "img")
    await host.call("Bash", {"command": "true"}, tool_call_id="small")
    assert not hub.partial("h1", "small")


def record(**kw: Any) -> CallRecord:
    base: dict[str, Any] = {
        "tool_call_id": "c",
        "session_id": "s",
        "tool": "Bash",
        "args": {},
        "started_at": 0.0,
    }
    return CallRecord(**{**base, **kw})


BASH_OK = {"exitCode": 0, "signal": None, "timedOut": False, "aborted": False}
JOB_PAGE = {"jobId": "job_1", "state": "killed", "exitCode": None, "signal": None, "next": {}}
JOB_EXIT = {**JOB_PAGE, "state": "exited"}


@pytest.mark.parametrize(
    ("kw", "status"),
    [
        ({}, "running"),
        ({"failed": "RuntimeError('x')"}, "error"),
        ({"result": BASH_OK}, "done"),
        ({"result": {**BASH_OK, "exitCode": 1}}, "error"),
        ({"result": {**BASH_OK, "exitCode": None, "signal": "SIGKILL"}}, "error"),
        ({"result": {**BASH_OK, "exitCode": None, "timedOut": True}}, "timedOut"),
        ({"result": {**BASH_OK, "exitCode": None, "aborted": True}}, "aborted"),
        ({"tool": "Read", "result": {"error": {"code": "TOOL_NOT_FOUND"}}}, "error"),
        ({"tool": "Read", "result": {"content": ""}}, "done"),
        # JobOutput and JobStop tell a job's state; the call itself did what it was asked.
        ({"tool": "JobOutput", "result": {**JOB_PAGE, "state": "running"}}, "done"),
        ({"tool": "JobOutput", "result": {**JOB_PAGE, "state": "exited", "exitCode": 2}}, "done"),
        ({"tool": "JobStop", "result": {**JOB_PAGE, "signal": "SIGTERM"}}, "done"),
        ({"tool": "JobOutput", "result": {"error": {"code": "TOOL_JOB_NOT_FOUND"}}}, "error"),
        # A job's own call: stopped (JobStop, the page, the session's end) is not a failure.
        ({"tool_call_id": "job_1", "result": {**JOB_PAGE, "signal": "SIGTERM"}}, "killed"),
        ({"tool_call_id": "job_1", "result": {**JOB_PAGE, "state": "timedOut"}}, "timedOut"),
        ({"tool_call_id": "job_1", "result": {**JOB_EXIT, "exitCode": 0}}, "done"),
        ({"tool_call_id": "job_1", "result": {**JOB_EXIT, "exitCode": 3}}, "error"),
        # Bash with background: true returns at once, its job running.
        ({"result": {"jobId": "job_1", "state": "running", "pid": 7, "logs": {}}}, "done"),
    ],
)
def test_status_of_a_call(kw: dict[str, Any], status: str) -> None:
    assert status_of(record(**kw)) == status


def test_short_args_show_the_command_path_or_pattern_on_one_line() -> None:
    assert short_args("Bash", {"command": "make\n  test"}) == "make test"
    assert (
        short_args("Read", {"path": "a.py", "offset": 10, "limit": 5}) == "a.py offset=10 limit=5"
    )
    assert short_args("Grep", {"pattern": "def ", "path": "src"}) == "def in src"
    assert short_args("Glob", {"pattern": "**/*.py"}) == "**/*.py"
    assert short_args("Edit", {"path": "a.py", "oldString": "x", "newString": "y"}) == "a.py"
    assert short_args("Write", {"path": "b.py", "content": "x\n" * 100}) == "b.py"
    assert short_args("Bash", "ls") == '"ls"'
    assert short_args("Bash", {"command": "x" * 300}, max_chars=10) == "xxxxxxxxx…"


def test_short_args_name_a_patchs_files_a_lists_folder_and_a_pdfs_pages() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@\n-x\n+y\n"
        "*** Add File: c.txt\n+hi\n*** Delete File: d.txt\n*** End Patch\n"
    )
    assert short_args("ApplyPatch", {"patch": patch}) == (
        "update a.py, move to b.py, add c.txt, delete d.txt"
    )
    assert short_args("ApplyPatch", {"patch": "not a patch"}) == "not a patch"
    assert short_args("List", {}) == "."
    assert short_args("List", {"path": "src", "depth": 3}) == "src depth=3"
    assert short_args("Read", {"path": "doc.pdf", "pages": "2-4"}) == "doc.pdf pages=2-4"


def test_outputs_are_the_spill_files_or_the_read_window() -> None:
    bash = {"spill": {"stderr": "/d/err.log"}}
    assert outputs_of("Bash", bash) == [{"name": "stderr", "path": "/d/err.log", "offset": 0}]
    read = {"path": "src/a.py", "offset": 2000}
    assert outputs_of("Read", read) == [{"name": "file", "path": "src/a.py", "offset": 2000}]
    assert outputs_of("Read", {"error": {"code": "TOOL_NOT_FOUND"}}) == []
    assert outputs_of("Glob", {"matches": []}) == []


def test_an_image_or_pdf_read_has_no_window_to_page() -> None:
    image = {"path": "a.png", "root": "workspace", "image": {"mimeType": "image/png"}}
    pdf = {"path": "a.pdf", "root": "workspace", "content": "", "pages": "1", "totalPages": 1}
    assert outputs_of("Read", image) == []
    assert outputs_of("Read", pdf) == []


def test_an_unchanged_read_refers_to_the_latest_earlier_read_of_its_window() -> None:
    window = {"path": "a.py", "offset": 0, "content": "x\n"}
    calls = [
        record(tool_call_id="r1", tool="Read", args={"path": "a.py"}, result=window),
        record(tool_call_id="r2", tool="Read", args={"path": "a.py", "limit": 5}, result=window),
        record(tool_call_id="r3", tool="Read", args={"path": "./a.py"}, result=window),
        record(tool_call_id="b", args={}, result=BASH_OK),
        record(
            tool_call_id="r4",
            tool="Read",
            args={"path": "a.py"},
            result={**window, "content": "", "unchanged": True},
        ),
    ]
    assert reread_of(calls[-1], calls) == "r3"
    assert reread_of(calls[0], calls) is None
    assert reread_of(calls[-1], calls[3:]) is None


def test_a_jobs_tails_read_on_from_the_last_chunk_and_keep_its_last_lines() -> None:
    from toolbound.web.jobs import TAIL_BYTES, TAIL_LINES, JobTails

    def chunk(seq: int, stream: str, data: str) -> dict[str, Any]:
        return {"type": "chunk", "toolCallId": "job_1", "stream": stream, "seq": seq, "data": data}

    tails = JobTails()
    assert tails.take("s", "job_1", None) is None
    assert tails.after("s", "job_1") == -1
    first = tails.take("s", "job_1", [chunk(0, "stdout", "a\nb"), chunk(1, "stderr", "oops\n")])
    assert first == {"stdout": "a\nb", "stderr": "oops"}
    assert tails.after("s", "job_1") == 1
    # The next poll reads only what came after: "b" goes on, many lines push out the first.
    lines = "".join(f"line {i}\n" for i in range(2000))
    later = tails.take("s", "job_1", [chunk(2, "stdout", "c\n" + lines)])
    assert later is not None
    assert later["stdout"].split("\n") == [f"line {i}" for i in range(2000 - TAIL_LINES, 2000)]
    assert later["stderr"] == "oops"
    assert tails.after("s", "job_1") == 2
    assert tails.take("s", "job_1", []) == later  # nothing new: the same tails
    assert len(lines) > TAIL_BYTES
    tails.keep_only("s", [])
    assert tails.after("s", "job_1") == -1
