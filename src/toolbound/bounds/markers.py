"""Every marker and notice string toolbound shows the model, in one place.

The three truncation markers are the seed's (section 3), character for
character; the checkpoint marker is section 4's. Tools never format a marker
themselves: they describe the cut and call one of these.

Pieces:
    lines_marker        "[truncated: kept the first/last N of M lines; ...]"
    single_line_marker  "[truncated: no complete line fits the ...]"
    head_tail_marker    "[truncated: kept the first N and the last M of T lines; ... cut here; ...]"
    gap_marker          "[truncated: N bytes (M lines) not kept here; ...]" (a both-ends spill)
    fit_marker          "[... cut here so this result fits ...]" (the last guard of a fit)
    CHECKPOINT_MARKER   the model-context marker of a checkpoint cut
    carries_cut_marker  whether a text holds one of the cut markers where a cut leaves it
"""

from __future__ import annotations

import re

from toolbound.limits import Keep, budget_label, format_size

CHECKPOINT_MARKER = "[checkpoint truncated: this message crossed the retained context budget]"

_NARROW = "Narrow the request to see more."


def _where_the_rest_is(spill_path: str | None) -> str:
    if spill_path is None:
        return _NARROW
    return f"Full output saved to {spill_path} — Grep it, or Read it with offset/limit."


def lines_marker(
    *,
    keep: Keep,
    kept_lines: int,
    total_lines: int,
    max_lines: int,
    max_bytes: int,
    spill_path: str | None,
) -> str:
    """The marker for a cut on whole lines, naming the end that survived."""
    end = "first" if keep == "head" else "last"
    limit = budget_label(max_lines, max_bytes)
    return (
        f"[truncated: kept the {end} {kept_lines} of {total_lines} lines; limit {limit}. "
        f"{_where_the_rest_is(spill_path)}]"
    )


def single_line_marker(
    *, kept_bytes: int, line_bytes: int, max_bytes: int, spill_path: str | None
) -> str:
    """The marker for a single line longer than the whole byte budget."""
    return (
        f"[truncated: no complete line fits the {format_size(max_bytes)} limit; "
        f"kept {kept_bytes} bytes of a single {line_bytes}-byte line. "
        f"{_where_the_rest_is(spill_path)}]"
    )


def head_tail_marker(
    *,
    head_lines: int,
    tail_lines: int,
    head_bytes: int,
    tail_bytes: int,
    cut_lines: int,
    cut_bytes: int,
    total_lines: int,
    total_bytes: int,
    whole_lines: bool,
    limit: str,
    spill_path: str | None,
) -> str:
    """The marker between the two ends of a cut that kept both (``bounds/headtail.py``):
    in lines when both ends are whole lines, else in bytes; ``limit`` as
    ``Budget.label`` states it."""
    where = _where_the_rest_is(spill_path)
    if whole_lines:
        return (
            f"[truncated: kept the first {head_lines} and the last {tail_lines} of "
            f"{total_lines} lines; {cut_lines} lines ({cut_bytes} bytes) cut here; "
            f"limit {limit}. {where}]"
        )
    if total_lines <= 1:
        whole = f"a single {total_bytes}-byte line"
    else:
        whole = f"{total_bytes} bytes in {total_lines} lines"
    return (
        f"[truncated: kept the first {head_bytes} and the last {tail_bytes} bytes of "
        f"{whole}; {cut_bytes} bytes cut here; limit {limit}. {where}]"
    )


def gap_marker(
    *, dropped_bytes: int, dropped_newlines: int, head_ceiling_bytes: int, tail_ceiling_bytes: int
) -> str:
    """The line a spill holds where its capture dropped the middle of the stream."""
    return (
        f"[truncated: {dropped_bytes} bytes ({dropped_newlines} lines) not kept here; "
        f"the capture keeps the first {format_size(head_ceiling_bytes)} and the last "
        f"{format_size(tail_ceiling_bytes)}.]"
    )


def fit_marker(*, cut_bytes: int, cut_lines: int, max_bytes: int, client: str | None) -> str:
    """The marker of the last guard of a fit (``bounds/whole.py``): the middle of a result's
    text cut so the whole fits the client's per-result cap."""
    whose = f"{client}'s" if client else "this client's"
    return (
        f"[... {cut_bytes} bytes / {cut_lines} lines cut here so this result fits {whose} "
        f"{format_size(max_bytes)} limit per result. A spill file named above holds the "
        "full output; otherwise narrow the request ...]"
    )


# A cut's marker where the cut leaves it: on a line of its own (a head cut's end,
# the joint of both ends) or at the start (a tail cut).
_CUT_MARKER = re.compile(
    r"(?:^|\n)\[truncated: (?:kept the (?:first|last) \d+ |no complete line fits the )"
)


def carries_cut_marker(text: str) -> bool:
    """Whether ``text`` holds a marker of ``lines_marker``, ``single_line_marker`` or
    ``head_tail_marker`` where a cut puts it (the cutter's guard against cutting twice)."""
    return "[truncated: " in text and _CUT_MARKER.search(text) is not None
