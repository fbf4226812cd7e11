"""A short bug-fixing session, and what of each result must reach the model.

Pieces:
- ``make_project(root)``: a tiny project with a bug (``add`` subtracts), a
  long ``calc.py`` (so a whole-file Read is cut) and ``run_tests.sh``, which
  prints a lot of stdout noise, then names the failing test on stderr and
  exits 1 (0 once the bug is fixed);
- ``SCRIPT``: the scripted model's tool calls, in toolbound's names and
  arguments: Glob, Grep, a cut Read, the failing noisy run, Edit, the passing
  run, a tool error, a timeout;
- ``Delivered``: what the harness handed its model for one call, unwrapped of
  the harness's own framing (``unwrap``) but kept raw too;
- ``CHECKS``: named facts, each a function of (the step's delivered result,
  the session's data dir) returning ``None`` when the fact arrived, else why
  not. ``whole_text`` compares a whole delivered text with toolbound's own
  text for the call (``toolbound.model_text`` of the recorded result).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.model_server import Step, ToolResult

FAILING_TEST = "test_add_two_small_numbers"
NOISE_LINES = 6000
CALC_FILLER = 3000

RUN_TESTS = f"""#!/bin/sh
# A noisy test run: a lot of progress on stdout, the verdict on stderr.
seq 1 {NOISE_LINES} | sed 's/.*/collecting case &: lorem ipsum dolor sit amet, consectetur/'
if grep -q 'return a + b' calc.py; then
    echo "1 passed" >&2
    exit 0
fi
echo "FAILED tests/test_calc.py::{FAILING_TEST} - assert add(1, 2) == 3 (got -1)" >&2
echo "1 failed" >&2
exit 1
"""


def make_project(root: Path) -> None:
    """The buggy project, in ``root``."""
    filler = "".join(
        f"def helper_{i}(x):\n    return x * {i}  # filler to make the file long\n\n"
        for i in range(CALC_FILLER)
    )
    (root / "calc.py").write_text(
        f'"""Arithmetic."""\n\n{filler}def add(a, b):\n    return a - b\n'
    )
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(
        f"from calc import add\n\n\ndef {FAILING_TEST}():\n    assert add(1, 2) == 3\n"
    )
    (root / "run_tests.sh").write_text(RUN_TESTS)


SCRIPT = [
    Step("Glob", {"pattern": "**/*.py"}),
    Step("Grep", {"pattern": "def add", "glob": "*.py"}),
    Step("Read", {"path": "calc.py"}),
    Step("Bash", {"command": "sh run_tests.sh"}),
    Step("Edit", {"path": "calc.py", "oldString": "return a - b", "newString": "return a + b"}),
    Step("Bash", {"command": "sh run_tests.sh"}),
    Step("Read", {"path": "missing_module.py"}),
    Step("Bash", {"command": "sleep 30", "timeout": 1}),
]
STEP_NAMES = [
    "glob",
    "grep",
    "read_cut",
    "run_failing",
    "edit",
    "run_passing",
    "tool_error",
    "timeout",
]


@dataclass(frozen=True)
class Delivered:
    """One tool result as the model received it."""

    raw: str
    text: str
    is_error: bool | None


# Claude Code appends "<system-reminder>...</system-reminder>" to every tool result,
# after one newline (two after an error).
_CLAUDE_REMINDER = re.compile(r"\n<system-reminder>.*?</system-reminder>\s*$", re.DOTALL)
_CLAUDE_ERROR_REMINDER = re.compile(r"\n\n<system-reminder>.*?</system-reminder>\s*$", re.DOTALL)
_CODEX_HEADER = re.compile(r"^(?:Exit code: \d+\n)?Wall time: [\d.]+ seconds\n(?:Output:\n?)?")
_GEMINI_ERROR = re.compile(
    r"^MCP tool '[^']+' reported tool error for function call: .*? with response: (.*)$", re.DOTALL
)


def unwrap(api: str, result: ToolResult) -> Delivered:
    """The result's text without the harness's own framing (which is kept in ``raw``)."""
    text = result.text
    if api == "anthropic":
        text = (_CLAUDE_ERROR_REMINDER if result.is_error else _CLAUDE_REMINDER).sub("", text)
    elif api == "responses":
        text = _CODEX_HEADER.sub("", text, count=1)
    elif api == "gemini":
        error = _GEMINI_ERROR.match(text)
        if error:
            try:
                parts = json.loads(error.group(1))
                content = parts[0]["functionResponse"]["response"]["content"]
                text = "".join(block.get("text", "") for block in content)
            except (ValueError, LookupError, TypeError):
                pass
        if text.startswith("<untrusted_context>\n") and text.endswith("\n</untrusted_context>"):
            text = text[len("<untrusted_context>\n") : -len("\n</untrusted_context>")]
    return Delivered(result.text, text, result.is_error)


# -- the facts ------------------------------------------------------------------------------

Check = Callable[[Delivered, "Recorded"], "str | None"]


@dataclass(frozen=True)
class Recorded:
    """What toolbound recorded of one call: its result, its model text, its ledger bytes."""

    result: dict[str, object]
    texts: tuple[str, ...]
    model_bytes: int | None


def _has(needle: str, what: str) -> Check:
    def check(d: Delivered, r: Recorded) -> str | None:
        return None if needle in d.text else f"{what} ({needle!r}) did not reach the model"

    return check


def _matches(pattern: str, what: str) -> Check:
    def check(d: Delivered, r: Recorded) -> str | None:
        return (
            None if re.search(pattern, d.text) else f"{what} (/{pattern}/) did not reach the model"
        )

    return check


def whole_text(d: Delivered, r: Recorded) -> str | None:
    """The model got toolbound's text for the call, whole and unchanged."""
    if d.text in r.texts:
        return None
    want = min(r.texts, key=len)
    return (
        f"the model got {len(d.text)} chars, not toolbound's text of {len(want)}: {d.text[:300]!r}"
    )


def kept_whole(d: Delivered, r: Recorded) -> str | None:
    """The model got as many bytes as toolbound's text has (its ledger's modelBytes)."""
    got = len(d.text.encode())
    if r.model_bytes is None:
        return "toolbound's ledger has no modelBytes for the call"
    if got == r.model_bytes:
        return None
    return f"the model got {got} bytes of toolbound's {r.model_bytes}: {d.text[:200]!r}"


def next_offset(d: Delivered, r: Recorded) -> str | None:
    notice = str(r.result.get("notice", ""))
    found = re.search(r"offset (\d+)", notice)
    if not found:
        return f"toolbound's Read was not cut: {r.result.get('notice')!r}"
    want = f"offset {found.group(1)}"
    return None if want in d.text else f"Read's next offset ({want!r}) did not reach the model"


def spill_path(d: Delivered, r: Recorded) -> str | None:
    spills = re.findall(r"(?:saved to|spill(?:ed)? (?:to|in)) (\S+?\.log)", json.dumps(r.result))
    if not spills:
        return f"toolbound named no spill file: {json.dumps(r.result)[-300:]!r}"
    missing = [s for s in spills if s not in d.text]
    return None if not missing else f"the spill path {missing[0]!r} did not reach the model"


def not_flagged(d: Delivered, r: Recorded) -> str | None:
    return "a successful call reached the model flagged as an error" if d.is_error else None


def flagged(d: Delivered, r: Recorded) -> str | None:
    """The error is flagged where the API has a flag (Anthropic, Gemini), and says its code."""
    if d.is_error is False:
        return "the error reached the model without the API's error flag"
    return (
        None
        if re.match(r"TOOL_[A-Z_]+: ", d.text)
        else f"the text does not start with its code: {d.text[:200]!r}"
    )


def error_once(d: Delivered, r: Recorded) -> str | None:
    message = next((t for t in r.texts if t.startswith("TOOL_")), "")
    sentence = message.split(": ", 1)[-1][:40]
    if not sentence:
        return "toolbound recorded no error text for the call"
    # The raw text may carry it escaped (a JSON string inside the harness's own text).
    count = max(d.raw.count(sentence), d.raw.count(json.dumps(sentence)[1:-1]))
    return None if count == 1 else f"the error's message reached the model {count} times"


CHECKS: dict[str, dict[str, Check]] = {
    "glob": {"paths": _has("tests/test_calc.py", "the matched path"), "whole_text": whole_text},
    "grep": {
        "match": _matches(r"calc\.py[\s\S]*def add", "the matching line"),
        "whole_text": whole_text,
    },
    "read_cut": {
        "content": _has("def helper_1(x):", "the file's first lines"),
        "next_offset": next_offset,
    },
    "run_failing": {
        "exit_status": _matches(r'exit status 1\b|"exitCode": ?1\b', "the exit status"),
        "marker": _has("[truncated:", "toolbound's marker"),
        "stderr_failing_test": _has(FAILING_TEST, "stderr's failing test"),
        "spill_path": spill_path,
    },
    "edit": {"not_error": not_flagged, "whole_text": whole_text},
    "run_passing": {
        "exit_status": _matches(r'exit status 0\b|"exitCode": ?0\b', "the exit status"),
        "verdict": _has("1 passed", "stderr's verdict"),
        "not_error": not_flagged,
    },
    "tool_error": {"flagged": flagged, "once": error_once, "whole_text": whole_text},
    "timeout": {"outcome": _has("timed out", "the timeout"), "whole_text": whole_text},
}
# Every result reaches the model as long as toolbound made it: the harness cut nothing.
for _checks in CHECKS.values():
    _checks["kept_whole"] = kept_whole
