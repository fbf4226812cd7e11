"""Every marker and notice string toolbound shows the model, in one place.

The three truncation markers are the seed's (section 3), character for
character; the checkpoint marker is section 4's. Tools never format a marker
themselves: they describe the cut and call one of these.

Pieces:
    lines_marker        "[truncated: kept the first/last N of M lines; ...]"
    single_line_marker  "[truncated: no complete line fits the ...]"
    fit_marker          "[... cut here so this result fits ...]" (the last guard of a fit)
    CHECKPOINT_MARKER   the model-context marker of a checkpoint cut
"""

from __future__ import annotations

from toolbound.limits import Keep, format_size

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
    limit = f"{max_lines} lines / {format_size(max_bytes)}"
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


def fit_marker(*, cut_bytes: int, cut_lines: int, max_bytes: int, client: str | None) -> str:
    """The marker of the last guard of a fit (``bounds/whole.py``): the middle of a result's
    text cut so the whole fits the client's per-result cap."""
    whose = f"{client}'s" if client else "this client's"
    return (
        f"[... {cut_bytes} bytes / {cut_lines} lines cut here so this result fits {whose} "
        f"{format_size(max_bytes)} limit per result. A spill file named above holds the "
        "full output; otherwise narrow the request ...]"
    )
