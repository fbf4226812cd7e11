"""The known clients' table and the ``--fit`` modes (toolbound.fit)."""

from __future__ import annotations

import pytest

from toolbound.fit import KNOWN_CLIENTS, MIN_FIT_BYTES, Fit, fit_for, fit_mode


def test_each_harness_is_recognised_by_the_name_its_client_info_sends() -> None:
    caps = {c.name: c for c in KNOWN_CLIENTS}
    assert set(caps) == {"claude-code", "codex-mcp-client", "gemini-cli-mcp-client", "opencode"}
    opencode = caps["opencode"]
    assert fit_for("auto", "opencode", "1.18.33") == Fit(
        "opencode 1.18.33", opencode.max_bytes, opencode.max_lines
    )
    gemini = caps["gemini-cli-mcp-client"]
    assert fit_for("auto", "gemini-cli-mcp-client-toolbound", "0.61.0") == Fit(
        "gemini-cli-mcp-client-toolbound 0.61.0", gemini.max_bytes, gemini.max_lines
    )
    assert fit_for("auto", "claude-codex", "1") == Fit("claude-codex 1")
    assert fit_for("auto", None, None) == Fit()


def test_off_caps_nothing_and_a_number_caps_any_client() -> None:
    assert fit_for("off", "codex-mcp-client", "0.169.0") == Fit("codex-mcp-client 0.169.0")
    assert fit_for(4096, "some-agent", "2") == Fit("some-agent 2", 4096, None)
    assert fit_for(4096, None, None) == Fit(None, 4096, None)


@pytest.mark.parametrize(
    ("text", "mode"), [("auto", "auto"), ("off", "off"), ("4096", 4096), (str(MIN_FIT_BYTES), 2048)]
)
def test_fit_takes_auto_off_or_a_byte_cap(text: str, mode: object) -> None:
    assert fit_mode(text) == mode


@pytest.mark.parametrize("text", ["", "on", "12kb", "100", "-5"])
def test_fit_refuses_anything_else_saying_what_it_takes(text: str) -> None:
    with pytest.raises(ValueError, match=r"^--fit takes auto, off or a byte cap of at least 2048"):
        fit_mode(text)
