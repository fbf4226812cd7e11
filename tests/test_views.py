"""One view per tool: every tool has one, and everything that tells what a result
means (the protocols' error flag, the web rows, the jobs panel, the call page's
outcome lines, the ledger) asks it, so they agree."""

from __future__ import annotations

from toolbound import views
from toolbound.tools.registry import SPECS, TOOL_NAMES
from toolbound.views import VIEWS, View


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
