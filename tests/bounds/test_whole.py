"""The last guard of a fit: a whole text within a client's cap, its ends kept, marked."""

from __future__ import annotations

from toolbound.bounds.markers import fit_marker
from toolbound.bounds.whole import within

BASH = (
    "[exit status 1]\n[Full output saved to /s/stdout.txt]\n<stdout>\n"
    + "".join(f"line {i}\n" for i in range(4000))
    + "</stdout>\n<stderr>\nFAILED test_parse\n</stderr>"
)


def test_a_text_within_the_cap_is_returned_as_it_is() -> None:
    assert within(BASH, max_bytes=len(BASH), max_lines=None) == BASH
    assert within(BASH, max_bytes=None, max_lines=BASH.count("\n") + 1) == BASH
    assert within(BASH, max_bytes=None, max_lines=None) == BASH


def test_a_text_over_the_byte_cap_keeps_its_outcome_and_stderr_tail_with_the_marker() -> None:
    out = within(BASH, max_bytes=4096, max_lines=None, client="codex-mcp-client 0.169.0")
    assert len(out.encode()) <= 4096
    head, _, rest = out.partition("[... ")
    tail = rest.partition("\n")[2]
    assert BASH.startswith(head)
    assert BASH.endswith(tail)
    assert head.startswith("[exit status 1]\n[Full output saved to /s/stdout.txt]\n<stdout>\n")
    assert tail.endswith("</stdout>\n<stderr>\nFAILED test_parse\n</stderr>")
    cut = BASH[len(head) : len(BASH) - len(tail)]
    marker = fit_marker(
        cut_bytes=len(cut.encode()),
        cut_lines=cut.count("\n"),
        max_bytes=4096,
        client="codex-mcp-client 0.169.0",
    )
    assert out == f"{head}{marker}\n{tail}"


def test_a_text_over_the_line_cap_keeps_whole_lines_within_it() -> None:
    out = within(BASH, max_bytes=None, max_lines=100)
    lines = out.split("\n")
    assert len(lines) <= 100
    assert lines[0] == "[exit status 1]"
    assert lines[-1] == "</stderr>"
    assert sum(line.startswith("[... ") for line in lines) == 1


def test_one_long_line_is_cut_on_character_boundaries() -> None:
    out = within("é" * 10_000, max_bytes=3001, max_lines=None)
    assert len(out.encode()) <= 3001
    head, _, rest = out.partition("\n[... ")
    assert set(head) == {"é"}
    assert set(rest.partition("\n")[2]) == {"é"}


def test_a_guarded_text_is_not_guarded_again() -> None:
    once = within(BASH, max_bytes=4096, max_lines=None)
    assert within(once, max_bytes=4096, max_lines=None) == once
