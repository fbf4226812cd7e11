"""Every model-facing notice sentence, in one place.

A notice is not a stable contract (seed section 5): ``truncated`` and the
counts are. It says why a result stopped and the next step: the next
``offset``, a narrower path, how many lines were clipped, what was skipped.
Each function takes the facts the tool found and returns its sentences;
which sentences a result needs is still the tool's choice (Read's window in
bounds/paging.py, a Grep page in search/page_notice.py, Bash in its tool);
Glob's page is worded here whole (``glob_page``). Markers inside a payload
are not notices: bounds/markers.py.

Pieces:
    read_window     Read: the window shown, what stopped it, clips, replaced bytes
    read_aborted    Read: aborted while counting lines to its offset
    read_unchanged  Read (economy): the window is as an earlier call in context shows it
    read_clipped_grep  Read (economy): Grep reaches the rest of a clipped line
    next_page       Grep: "Showing entries 1-200; more exist: call again with offset 200 …"
    GREP_NARROW     what a Grep call can narrow to see less
    glob_page       Glob: a page's notice (stopped, more files, the budget, skipped paths)
    more_files      Glob's "more files matched: narrow pattern or path"
    budget_reached  Grep/Glob: which result budget cut the page
    clipped_lines   Grep: "N lines were clipped at 2000 characters."
    skipped_paths   Grep/Glob: "N paths could not be read … skipped."
    stopped         Grep/Glob: the search timeout or an abort cut the walk
    past_the_end    Grep: an offset beyond the last entry
    pdf_pages       Read of a PDF: a page's text cut, the pages that follow
    diff_cut, diff_clipped  Edit and ApplyPatch: the diff was cut, or its long lines clipped
    patch_already_applied  ApplyPatch: chunks (or the whole patch) found applied already
    bash_run        Bash: timeout, abort, lingering processes, invalid UTF-8
    budget_shrunk   economy: a budget shrunk because the context is filling up
    budget_fitted   a budget cut to the client's per-result cap (toolbound/fit.py)
    collapsed       economy: a stream's terminal rewrites and styling left out
    job_output      JobOutput: how to go on, what a log dropped, lingering processes
    job_until_unmatched, job_one_call, jobs_full   the other job sentences
    join            sentences -> one notice, or None
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from toolbound.limits import Budget, format_size

if TYPE_CHECKING:  # only a type: paging is pure and never imports the sentences
    from toolbound.bounds.paging import Page

# What a Grep call can narrow to see less.
GREP_NARROW = "`path`, `glob` or `pattern`"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _read_repairs(clipped_lines: int, replaced_bytes: int, max_line_chars: int) -> list[str]:
    said: list[str] = []
    if clipped_lines:
        was = "was" if clipped_lines == 1 else "were"
        said.append(
            f"{_plural(clipped_lines, 'line')} longer than {max_line_chars} characters "
            f"{was} clipped to {max_line_chars}."
        )
    if replaced_bytes:
        was = "was" if replaced_bytes == 1 else "were"
        said.append(
            f"{_plural(replaced_bytes, 'byte')} of invalid UTF-8 {was} replaced with U+FFFD."
        )
    return said


def read_window(
    *,
    offset: int,
    page: Page,
    reached_eof: bool,
    total_lines: int | None,
    limit_lines: int,
    max_bytes: int,
    max_line_chars: int,
) -> str | None:
    """Read's notice for a window, or None when the window is the clean end of the file.

    Names the next offset when the file goes on, which limit stopped the
    window, how many lines were clipped and how many bytes replaced; past the
    end it says how many lines the file has.
    """
    line_count = page.line_count
    if line_count == 0 and reached_eof and total_lines is not None:
        if total_lines == 0:
            if offset == 0:
                return "The file is empty."
            return f"offset {offset} is past the end: the file is empty (0 lines)."
        if total_lines <= limit_lines:
            where = f"all of them fit one window of {limit_lines} lines, from offset 0"
        else:
            where = f"the last {limit_lines} lines start at offset {total_lines - limit_lines}"
        return (
            f"offset {offset} is past the end: the file has {_plural(total_lines, 'line')}. "
            f"Use an offset below {total_lines} ({where})."
        )
    first, last = offset + 1, offset + line_count
    shown = f"line {first}" if first == last else f"lines {first}-{last}"
    said: list[str]
    if reached_eof:
        said = [f"Showing {shown} of {total_lines} (end of file)."]
    else:
        why = (
            f"the {format_size(max_bytes)} budget"
            if page.stop == "budget"
            else f"the {limit_lines}-line limit"
        )
        said = [
            f"Showing {shown}; stopped at {why}. "
            f"The file continues: call Read with offset {last} for the next lines."
        ]
    repairs = _read_repairs(page.clipped_lines, page.replaced_bytes, max_line_chars)
    if reached_eof and not repairs:
        return None
    return " ".join(said + repairs)


def read_aborted(*, offset: int, counted: int) -> str:
    """Read's notice for a call aborted while counting its way to ``offset``."""
    return (
        f"Read was aborted while counting lines to offset {offset} ({counted} "
        "counted so far, and kept). Call Read again with the same offset to continue."
    )


def read_unchanged(*, call_id: str, offset: int, line_count: int, next_offset: int | None) -> str:
    """Read's notice for a re-read the economy profile answers with ``unchanged``: the
    earlier call whose result shows the window, and how to have the text again."""
    first, last = offset + 1, offset + line_count
    shown = f"line {first}" if first == last else f"lines {first}-{last}"
    said = [
        f"Unchanged since {call_id} ({shown}, same bytes; that result is in your context). "
        "Read another offset or limit for the text again; after a checkpoint this Read "
        "returns it in full."
    ]
    if next_offset is not None:
        said.append(f"The file continues: call Read with offset {next_offset} for the next lines.")
    return " ".join(said)


def read_outline(entries: Sequence[tuple[int, str]], *, more: int) -> str:
    """Read (economy): the top-level definitions after a window that stopped
    before the file's end, each with its line (Read offset = line - 1)."""
    listed = "".join(f"\n  {line}: {text}" for line, text in entries)
    rest = f"\n  ... and {more} more" if more else ""
    return f"Top-level definitions further on (line: text; Read offset = line - 1):{listed}{rest}"


def read_clipped_grep(path: str) -> str:
    """Read (economy): where the rest of a clipped line is, since paging cannot reach it."""
    return (
        f'For text inside a clipped line, Grep it (path "{path}"): Grep shows each match '
        "with the part of its line around it."
    )


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


def glob_page(
    *,
    shown: int,
    more: bool,
    raise_to: int | None,
    budget_stopped: bool,
    budget: Budget,
    stopped_by: str | None,
    timeout_s: float,
    skipped: int,
    first_skipped: str | None,
) -> str | None:
    """Glob's notice for a page of ``shown`` files: the walk's stop (``stopped_by``:
    ``timeout`` or ``abort``), more files matched (``raise_to``: see ``more_files``)
    and whether the ``budget`` cut the page, the paths that could not be read."""
    sentences: list[str] = []
    if stopped_by is not None:
        sentences.append(stopped(stopped_by, timeout_s=timeout_s))
    if more:
        sentences.append(more_files(shown=shown, raise_to=raise_to))
        if budget_stopped:
            sentences.append(budget_reached(budget))
    if skipped:
        sentences.append(skipped_paths(skipped, first=first_skipped))
    return join(sentences)


def budget_reached(budget: Budget) -> str:
    return f"The page stopped at the {budget.label} result budget."


def clipped_lines(n: int, *, max_line_chars: int, windowed: tuple[int, int] | None = None) -> str:
    """Grep's sentence for clipped lines; ``windowed`` is the first entry whose window
    starts inside its line (its line number and ``column``), if any."""
    noun = "line was" if n == 1 else "lines were"
    said = f"{n} {noun} clipped at {max_line_chars} characters."
    if windowed is not None:
        line, column = windowed
        said += (
            " A clipped line shows the window holding its first match; where that window "
            f"starts inside the line, `column` says at which character (line {line}: "
            f"column {column})."
        )
    return said


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


def pdf_pages(
    *, cut_page: int | None, budget: Budget, shown: str, total: int, next_pages: str | None
) -> str | None:
    """Read's notice for a PDF: ``cut_page``'s text cut at the ``budget`` (None: none
    was), the pages ``shown`` of ``total`` and the ``next_pages`` to ask for (None at
    the end)."""
    said: list[str] = []
    if cut_page is not None:
        said.append(
            f"Page {cut_page}'s text was cut at the {budget.label} budget; extract the rest "
            f"with Bash (e.g. `pdftotext -f {cut_page} -l {cut_page} FILE -`)."
        )
    if next_pages is not None:
        said.append(f'Showing {shown} of {total}; Read with `pages: "{next_pages}"` for the next.')
    return join(said)


def diff_cut(*, kept: int, total: int, budget: Budget, made: str, read: str) -> str:
    """Edit's and ApplyPatch's sentence for a diff cut at its budget: the change was
    ``made`` in full all the same, and ``read`` shows the rest."""
    return (
        f"The diff was cut after {kept} of {total} lines (limit {budget.label}); "
        f"{made} in full. Read {read} to see the rest."
    )


def diff_clipped(max_line_chars: int, n: int | None = None) -> str:
    """A diff's lines clipped at ``max_line_chars`` (``n`` of them, when counted)."""
    if n is None:
        return f"Diff lines longer than {max_line_chars} characters are shown clipped."
    return f"{_plural(n, 'diff line')} longer than {max_line_chars} characters shown clipped."


def patch_already_applied(*, every_file: bool, chunks: int) -> str | None:
    """ApplyPatch: the whole patch (``every_file``) or ``chunks`` of it were applied
    already, and left as they are."""
    if every_file:
        return (
            "The patch was already applied: every file already is as it makes it; nothing "
            "was written."
        )
    if chunks:
        was = "chunks were" if chunks != 1 else "chunk was"
        return (
            f"{chunks} {was} already applied (the new lines were in the file) and left as they are."
        )
    return None


def bash_run(
    *,
    timed_out: bool,
    aborted: bool,
    timeout_s: float,
    timeout_max_s: float,
    lingering: int,
    invalid: Iterable[tuple[str, int]],
) -> str | None:
    """Bash's notice for how the run ended, or None when there is nothing to say.

    ``lingering`` counts the processes the shell left running (stopped after
    it exited); ``invalid`` pairs each stream with its invalid UTF-8 bytes.
    """
    parts: list[str] = []
    if timed_out:
        parts.append(
            f"The command timed out after {timeout_s:g} s and its whole process tree was "
            f"stopped. Pass a longer timeout (at most {timeout_max_s:g} s) or "
            "make the command finish sooner."
        )
    elif aborted:
        parts.append("The call was aborted and its whole process tree was stopped.")
    if lingering:
        noun = "process" if lingering == 1 else "processes"
        parts.append(
            f"The shell exited but {lingering} {noun} it started kept running; "
            f"stopped {lingering} lingering {noun}. To keep a server or watcher running "
            "after the call, start it with `background: true` (then JobOutput, JobStop)."
        )
    for stream, count in invalid:
        if count:
            parts.append(f"{stream} had {count} invalid UTF-8 bytes, shown as U+FFFD.")
    return join(parts)


def budget_shrunk(tool: str, *, budget: Budget, base: Budget, fill: float) -> str:
    """A budget the economy profile shrank (toolbound/shrink.py), and why."""
    return (
        f"{tool} budget shrunk to {budget.label} (from {base.label}): "
        f"the context is {math.floor(fill * 100)}% full."
    )


def budget_fitted(tool: str, *, budget: Budget, client: str | None) -> str:
    """A budget cut to fit the client's per-result cap (toolbound/fit.py)."""
    whose = f"{client}'s" if client else "this client's"
    return f"{tool} budget is {budget.label} to fit {whose} limit per result."


def collapsed(stream: str, n_bytes: int, *, log: str | None = None) -> str:
    """Economy Bash, and a job on a terminal: what collapsing a stream to what a
    terminal shows removed; ``log``, where every byte is kept (a job's)."""
    kept = f"; its log keeps every byte ({log})" if log else ""
    return (
        f"{stream} is shown as a terminal shows it: {_plural(n_bytes, 'byte')} of "
        f"overwritten progress, erased lines and styling left out{kept}."
    )


def job_output(
    *,
    state: str,
    more_stdout: bool,
    dropped: Iterable[tuple[str, int, int]],
    head_bytes: int,
    tail_bytes: int,
    lingering: int,
    log_errors: Iterable[tuple[str, str]],
    extra: Iterable[str] = (),
) -> str | None:
    """JobOutput's notice: how to go on, what the logs dropped, what was stopped.

    ``dropped`` pairs each stream with the bytes and lines its log dropped from
    the middle; ``lingering`` counts processes the shell left running (stopped
    when it exited); ``extra`` are sentences the caller adds (an `until` that
    did not match).
    """
    parts = list(extra)
    if more_stdout:
        parts.append(
            "stdout goes on: call JobOutput again (it continues from `next`), or Read or "
            "Grep the log the marker names."
        )
    for stream, n_bytes, n_lines in dropped:
        if n_bytes:
            parts.append(
                f"The {stream} log keeps the first {format_size(head_bytes)} and the last "
                f"{format_size(tail_bytes)} or more of the stream; {_plural(n_bytes, 'byte')} "
                f"({_plural(n_lines, 'line')}) in between were dropped."
            )
    if lingering:
        noun = "process" if lingering == 1 else "processes"
        parts.append(
            f"The job's shell exited but {lingering} {noun} it started kept running; "
            f"stopped {lingering} lingering {noun}."
        )
    for stream, error in log_errors:
        parts.append(f"The {stream} log could not be written ({error}); later output is lost.")
    if state == "running":
        parts.append("The job is still running: JobStop stops it.")
    return join(parts)


def job_until_unmatched(*, wait_s: float, ended: bool) -> str:
    """JobOutput's sentence for an `until` that matched no line."""
    if ended:
        return "No line matched `until` before the job ended."
    return f"No line matched `until` within {wait_s:g} s."


def job_ended(job_id: str, state: str, exit_code: int | None, signal: str | None) -> str:
    """JobInput's refusal for a job that is no longer running, with its state."""
    how = {"exited": "it exited", "killed": "it was killed", "timedOut": "it timed out"}
    said = how.get(state, state)
    if signal:
        said += f" by {signal}"
    elif exit_code is not None:
        said += f" with exit status {exit_code}"
    return (
        f"Job {job_id} is not running (state {state}: {said}), so it reads no more input. "
        "Read what it printed with JobOutput, or start it again with Bash and "
        "`background: true`."
    )


def job_input_short(*, written: int, size: int, wait_s: float) -> str:
    """JobInput's sentence when the job did not take all of the input."""
    return (
        f"Only {written} of the {_plural(size, 'byte')} of input were written: the job did "
        f"not read the rest within {wait_s:g} s (or closed its stdin). Send the rest later."
    )


def job_one_call() -> str:
    """Bash's notice for a job started by a one-call host (`toolbound call`)."""
    return (
        "This host serves one call (`toolbound call`), so the job stops when the call's "
        "process exits, which is now. Start jobs through the MCP server (`toolbound serve`) "
        "or a library ToolHost to keep them running across calls."
    )


def jobs_full(running: Iterable[tuple[str, str]], *, max_running: int) -> str:
    """The refusal of a job past the most a session runs at once."""
    listed = "; ".join(f"{job_id}: {command[:80]}" for job_id, command in running)
    return (
        f"{max_running} background jobs are running in this session already ({listed}). "
        "Stop one with JobStop, or wait for one to end (JobOutput with `waitS`), then start "
        "this one again."
    )


def join(sentences: list[str]) -> str | None:
    return " ".join(sentences) if sentences else None
