"""One view per tool: every tool has one, and everything that tells what a result
means (the protocols' error flag, the web rows, the jobs panel, the call page's
outcome lines, the ledger) asks it, so they agree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support import bash_result
from toolbound import model_text, views
from toolbound.host import ToolHost
from toolbound.results import is_error
from toolbound.store import SessionStore
from toolbound.tools.registry import SPECS, TOOL_NAMES
from toolbound.views import VIEWS, View
from toolbound.web.calls import CallRecord, Origin, detail, status_of
from toolbound.web.hub import Hub
from toolbound.web.jobs import job_rows


def test_every_registry_tool_has_a_view_of_its_own_and_every_view_a_tool() -> None:
    assert sorted(VIEWS) == sorted(TOOL_NAMES)
    unknown = type(views.view_for("NoSuchTool"))
    for spec in SPECS:
        assert isinstance(spec.view, View)
        assert type(spec.view) is not unknown, spec.name
        assert spec.view is views.view_for(spec.name)


def test_an_unknown_tools_result_reads_as_its_json_and_a_timeout_is_still_an_error() -> None:
    assert views.text("NoSuchTool", {"a": 1}) == '{"a": 1}'
    assert views.status("NoSuchTool", {"timedOut": True}) == views.TIMED_OUT
    assert views.status("NoSuchTool", {"a": 1}) == views.DONE


def _record(tool_call_id: str, tool: str, result: dict[str, Any] | None) -> CallRecord:
    return CallRecord(tool_call_id, "s1", tool, {}, 0.0, result=result)


async def test_a_running_job_is_not_an_error_anywhere(tmp_path: Path, ws: Path) -> None:
    hub = Hub()
    async with ToolHost(ws, data_dir=tmp_path / "data", session_id="s1") as host:
        hub.attach(host)
        started = await host.call(
            "Bash", {"command": "echo up; sleep 60", "background": True}, tool_call_id="go"
        )
        job_id = started["jobId"]
        page = await host.call(
            "JobOutput", {"jobId": job_id, "until": "^up$", "waitS": 20}, tool_call_id="peek"
        )
        listed = await host.call("JobOutput", {}, tool_call_id="list")
        assert page["state"] == "running"
        for tool, result in (("Bash", started), ("JobOutput", page), ("JobOutput", listed)):
            assert not is_error(tool, result)
            assert views.status(tool, result) == views.DONE
        # The web rows: the calls are done, the job's own call runs; its panel row runs.
        assert [(r.tool_call_id, status_of(r)) for r in hub.records("s1")] == [
            ("go", "done"),
            (job_id, "running"),
            ("peek", "done"),
            ("list", "done"),
        ]
        (row,) = job_rows(hub.records("s1"), host.jobs)
        assert (row["state"], row["status"]) == ("running", "running")
        # The call page's first lines: the job's state, running, in the page and the list.
        peek = hub.record("s1", "peek")
        assert peek is not None
        here = Origin(ended=False, host=None)
        assert detail(peek, here, "h")["outcomes"] == [{"status": "running", "text": "running"}]
        listing = hub.record("s1", "list")
        assert listing is not None
        assert detail(listing, here, "h")["outcomes"] == [{"status": "running", "text": "running"}]
        await host.call("JobStop", {"jobId": job_id}, tool_call_id="halt")
    # The ledger counts the calls the model read, never the job's own output.
    with SessionStore(tmp_path / "data") as store:
        ledger = store.session("s1").ledger()
    assert [c["toolCallId"] for c in ledger["calls"]] == ["go", "peek", "list", "halt"]


def test_a_timed_out_job_is_an_error_as_a_timed_out_command_is() -> None:
    """It was not for ``is_error`` (it looked for Bash's ``timedOut`` flag only) while
    the web row called it timed out."""
    job = {
        "jobId": "job_1",
        "state": "timedOut",
        "exitCode": None,
        "signal": "SIGTERM",
        "stdout": "",
        "stderr": "",
        "next": {"stdout": 0, "stderr": 0},
    }
    command = bash_result(exitCode=None, timedOut=True)
    for result in (job, command):
        assert is_error("Bash", result)
        assert status_of(_record("c", "Bash", result)) == "timedOut"
    # A page of it is JobOutput's content: the call did what it was asked.
    assert not is_error("JobOutput", job)
    assert views.outcomes("JobOutput", job) == [
        views.Outcome(views.TIMED_OUT, "timed out; the process tree was stopped")
    ]


def test_a_command_that_failed_is_red_on_the_page_and_no_error_to_the_protocols() -> None:
    failed = bash_result(exitCode=3)
    assert (status_of(_record("c", "Bash", failed)), is_error("Bash", failed)) == ("error", False)
    assert views.outcomes("Bash", failed) == [views.Outcome(views.FAILED, "exit status 3")]
    assert model_text("Bash", failed) == "[exit status 3]"


async def test_a_job_that_failed_is_an_error_in_its_row_and_in_the_jobs_panel(
    tmp_path: Path, ws: Path
) -> None:
    """The panel coloured every exited job as done, a failed one too, beside its red row."""
    hub = Hub()
    async with ToolHost(ws, data_dir=tmp_path / "data", session_id="s1") as host:
        hub.attach(host)
        started = await host.call("Bash", {"command": "exit 3", "background": True})
        job_id = started["jobId"]
        ended = {"jobId": job_id, "until": "^never$", "waitS": 30}
        assert (await host.call("JobOutput", ended))["exitCode"] == 3
        record = hub.record("s1", job_id)
        assert record is not None
        assert status_of(record) == "error"
        (row,) = job_rows(hub.records("s1"), host.jobs)
        assert (row["state"], row["status"]) == ("exited", "error")
        hub.detach(host)
        # Told from its recorded result alike once its host is gone.
        (row,) = job_rows(hub.records("s1"), None)
        assert (row["state"], row["status"]) == ("exited", "error")


# A call that returns each result model of each tool (its spec's ``result_models``).
LIVE_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("Read", {"path": "a.txt"}),
    ("Read", {"path": "dot.png"}),
    ("Read", {"path": "doc.pdf"}),
    ("Glob", {"pattern": "*.txt"}),
    ("List", {}),
    ("Grep", {"pattern": "line"}),
    ("Grep", {"pattern": "line", "outputMode": "filesWithMatches"}),
    ("Grep", {"pattern": "line", "outputMode": "count"}),
    ("Bash", {"command": "echo hi"}),
    ("Bash", {"command": "sleep 60", "background": True}),
    ("JobOutput", {}),
    ("Write", {"path": "b.txt", "content": "b\n"}),
    ("Edit", {"path": "a.txt", "oldString": "line 1", "newString": "LINE 1"}),
    ("ApplyPatch", {"patch": "*** Begin Patch\n*** Add File: c.txt\n+c\n*** End Patch\n"}),
]


def _model_of(tool: str, result: dict[str, Any]) -> str:
    """The name of the result model of ``tool`` that ``result`` is."""
    spec = next(s for s in SPECS if s.name == tool)
    for model in spec.results:
        try:
            model.model_validate(result)
        except ValueError:
            continue
        return model.__name__
    raise AssertionError(f"{tool} returned no result model of its own: {result}")


async def test_every_result_model_of_every_tool_is_rendered_by_its_view(
    tmp_path: Path, ws: Path
) -> None:
    """Never by the JSON fallback (a view that does not know a shape of its own tool's),
    and every outcome line has a status: a new result model fails here until its view
    knows it."""
    from PIL import Image

    from media_files import make_pdf

    (ws / "a.txt").write_text("line 1\nline 2\n")
    Image.new("RGB", (4, 3)).save(ws / "dot.png")
    (ws / "doc.pdf").write_bytes(make_pdf(["page one"]))
    seen: set[tuple[str, str]] = set()
    async with ToolHost(ws, data_dir=tmp_path / "data", session_id="s1") as host:
        for tool, args in LIVE_CALLS:
            if tool == "Edit":
                await host.call("Read", {"path": "a.txt"})
            result = await host.call(tool, args)
            assert "error" not in result, (tool, result)
            seen.add((tool, _model_of(tool, result)))
            assert model_text(tool, result) != json.dumps(result, ensure_ascii=False), tool
            assert not is_error(tool, result)
            if "jobId" in result:
                job = {"jobId": result["jobId"]}
                pages = (("JobOutput", {}), ("JobInput", {"input": "x\n"}), ("JobStop", {}))
                for page_tool, more in pages:
                    page = await host.call(page_tool, {**job, **more})
                    seen.add((page_tool, _model_of(page_tool, page)))
                    text = model_text(page_tool, page)
                    assert text.startswith(f"[job {result['jobId']} "), text
                    assert [o.status for o in views.outcomes(page_tool, page)]
    wanted = {(s.name, ref.partition(":")[2]) for s in SPECS for ref in s.result_models}
    assert seen == wanted
