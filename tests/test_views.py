"""One view per tool: every tool has one, and everything that tells what a result
means (the protocols' error flag, the web rows, the jobs panel, the call page's
outcome lines, the ledger) asks it, so they agree."""

from __future__ import annotations

from typing import Any

from support import bash_result
from toolbound import model_text, views
from toolbound.results import is_error
from toolbound.tools.registry import SPECS, TOOL_NAMES
from toolbound.views import VIEWS, View
from toolbound.web.calls import CallRecord, status_of


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
