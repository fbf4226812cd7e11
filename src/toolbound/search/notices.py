"""The notices Grep and Glob put beside a bounded result (model-facing prose).

A notice is not a stable contract (seed section 5): ``truncated`` and the
counts are. It says why the result stopped and the next step: the next
``offset``, a narrower path, how many lines were clipped, what was skipped.

Pieces:
    next_page       "Showing entries 1-200; more exist: call again with offset 200 …"
    more_files      Glob's "more files matched: narrow pattern or path"
    budget_reached  which result budget cut the page
    clipped_lines   "N lines were clipped at 2000 characters."
    skipped_paths   "N paths could not be read … skipped."
    stopped         the search timeout or an abort cut the walk
    past_the_end    an offset beyond the last entry
    join            sentences -> one notice, or None
"""

from __future__ import annotations

from toolbound.limits import Budget


def next_page(*, offset: int, shown: int, narrow: str) -> str:
    first, last = offset + 1, offset + shown
    return (
        f"Showing entries {first}-{last}; more exist. Call again with offset {last} for "
        f"the next page, or narrow {narrow}."
    )


def more_files(*, shown: int, raise_to: int | None) -> str:
    """Glob's cut; ``raise_to`` is the highest ``limit`` when raising it would help."""
    step = f"raise `limit` (up to {raise_to}) or narrow" if raise_to else "narrow"
    return (
        f"Showing the {shown} newest matching files; more matched: {step} `pattern` or "
        "`path` to see the others."
    )


def budget_reached(budget: Budget) -> str:
    return f"The page stopped at the {budget.label} result budget."


def clipped_lines(n: int, *, max_line_chars: int) -> str:
    noun = "line was" if n == 1 else "lines were"
    return f"{n} {noun} clipped at {max_line_chars} characters."


def skipped_paths(n: int, *, first: str | None) -> str:
    noun = "path" if n == 1 else "paths"
    verb = "was" if n == 1 else "were"
    example = f" (first: {first})" if first else ""
    return f"{n} {noun} could not be read and {verb} skipped{example}."


def stopped(reason: str, *, timeout_s: float) -> str:
    if reason == "timeout":
        return (
            f"The search was stopped after {timeout_s:g}s and shows only what it found by "
            "then, so newer matches may be missing. Narrow the path to search less."
        )
    return "The search was aborted and shows only what it found by then."


def past_the_end(offset: int) -> str:
    return f"No entries at offset {offset}: the result has fewer. Use a smaller offset."


def join(sentences: list[str]) -> str | None:
    return " ".join(sentences) if sentences else None
