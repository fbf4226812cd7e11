"""The diff: a real unified diff (applying it gives the new file), bounded and marked when cut."""

from __future__ import annotations

import re
from collections.abc import Iterable

from hypothesis import given, settings
from hypothesis import strategies as st

from toolbound.edit.diff import (
    BoundedDiff,
    Hunk,
    edit_hunks,
    render_diff,
    split_lines,
    write_hunks,
)
from toolbound.edit.replace import plan_edit
from toolbound.limits import Budget

BIG = Budget(max_bytes=10**9, max_lines=10**9)
_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_patch(old: bytes, diff: str) -> bytes:
    """A small `patch`: rebuild the new text from the old one and the diff."""
    old_lines = split_lines(old)
    out: list[bytes] = []
    at = 0
    rows = diff.split("\n")[2:-1]
    for i, row in enumerate(rows):
        if row.startswith("@@"):
            m = _HEADER.fullmatch(row)
            assert m, row
            start = int(m[1]) - (0 if m[2] == "0" else 1)
            out += old_lines[at:start]
            at = start
            continue
        if row.startswith("\\"):
            continue
        ends = i + 1 < len(rows) and rows[i + 1].startswith("\\")
        line = row[1:].encode() + (b"" if ends else b"\n")
        if row[0] in " -":
            assert old_lines[at] == line, (at, line)
            at += 1
        if row[0] in " +":
            out.append(line)
    return b"".join(out + old_lines[at:])


def diff_of(hunks: Iterable[Hunk], *, budget: Budget = BIG) -> BoundedDiff:
    return render_diff(
        hunks, old_label="a/f", new_label="b/f", budget=budget, max_line_chars=2000, shown="f"
    )


lines = st.lists(st.sampled_from(["a", "b", "c", "", "xy", "a b"]), min_size=0, max_size=30)


@settings(max_examples=200, deadline=None)
@given(lines, st.integers(0, 29), st.sampled_from(["Q", "Q\nR", "", "a\nQ"]), st.booleans())
def test_an_edit_diff_applied_to_the_old_file_gives_the_new(
    body: list[str], at: int, new: str, final_newline: bool
) -> None:
    text = "\n".join([*body[:at], "MARK", *body[at:]]) + ("\n" if final_newline else "")
    old = text.encode()
    plan = plan_edit(old, "MARK", new, replace_all=False, shown="f")
    result = b"".join(bytes(p) for p in plan.pieces(old))
    diff = diff_of(edit_hunks(old, plan))
    assert apply_patch(old, diff.text) == result


@settings(max_examples=200, deadline=None)
@given(lines, lines)
def test_a_write_diff_applied_to_the_old_file_gives_the_new(a: list[str], b: list[str]) -> None:
    old, new = "\n".join(a).encode(), "\n".join(b).encode()
    diff = diff_of(write_hunks(old, new))
    assert apply_patch(old, diff.text) == new


def test_long_lines_are_clipped_and_counted() -> None:
    old = b"short\n" + b"x" * 5000 + b" MARK\n"
    plan = plan_edit(old, "MARK", "DONE", replace_all=False, shown="f")
    diff = diff_of(edit_hunks(old, plan), budget=Budget(48 * 1024, 2000))
    assert diff.text == (
        f"--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n short\n-{'x' * 2000}\n+{'x' * 2000}\n"
    )
    assert (diff.truncated, diff.notice) == (
        True,
        "2 diff lines longer than 2000 characters shown clipped.",
    )


def test_a_diff_over_the_byte_budget_keeps_whole_lines() -> None:
    old = b"".join(b"%05d\n" % i for i in range(400))
    plan = plan_edit(old, "0", "1", replace_all=True, shown="f")
    diff = diff_of(edit_hunks(old, plan), budget=Budget(1024, 2000))
    assert len(diff.text.encode()) <= 1024
    assert diff.text.endswith("\n")
    assert diff.truncated
    assert diff.notice is not None
    assert diff.notice.startswith("The diff was cut after ")
