"""Grep: regex search on rg, newest files first, bounded (seed sections 2, 5, 6).

Two passes, so that ordering the *whole* result costs neither memory nor rg's
parallelism:

1. ``rg --files-with-matches`` walks the tree in parallel (stopping at each
   file's first match) and the ``offset + page + 1`` newest matching files are
   kept in a heap. Binary files are skipped with the core's test: by extension
   as they arrive, by content (NUL or the 30% rule, which rg's NUL check
   misses) only for the files a page uses.
2. Only those files, in rank order, are searched again for their lines
   (``content``) or counts (``count``), in growing batches until the page is
   full; ``--max-count`` caps what each file can print to what can still
   reach the page, and a second heap keeps the first entries by (file rank,
   line).

Every file holds at least one match, so ``offset + page + 1`` files always
hold enough entries; the ``+ 1`` says whether more exist. A page is at most
``min(headLimit, search lines)`` entries, then cut to the byte budget measured
on the serialized entries.

``glob`` and ``type`` filter the files the ignore rules allow (as Glob's
pattern does, search/select.py); they never lift an ignore rule.

rg's plain ``--null --line-number --column`` output is parsed rather than
``--json``: reading it costs about half as much in Python (bench/search.py
measures both). File names are passed to rg and read back as exact bytes, a
newline in a name included (search/matchlines.py). A matching line longer
than the clip shows the window that holds its first match (``--column`` gives
its byte offset), read without holding the whole line.

Context lines (``before``/``after``) are entries of their own with their own
line numbers and ``"context": true``, in line order beside the matches, and
count toward ``headLimit`` and the budget like them. A multiline match gives
one entry per line it spans.

Pieces:
    run              GrepArgs + context -> one of the three Grep results
    _match_args      the flags that decide what matches
    _content_entries pass 2 for ``content``
    _file_counts     pass 2 for ``count``
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from typing import IO, TypeVar

from toolbound.arguments import GrepArgs
from toolbound.results import (
    GrepContentResult,
    GrepCountResult,
    GrepFileCount,
    GrepFilesResult,
    GrepMatch,
    WireModel,
)
from toolbound.search import notices
from toolbound.search.files import TextFiles, newest_files
from toolbound.search.matchlines import read_counts, read_records
from toolbound.search.ranking import Entry, FirstEntries, fit_page, item_size
from toolbound.search.rg import RgOutcome, base_args, raise_if_fatal, run_rg
from toolbound.search.scope import Scope, resolve_scope
from toolbound.search.select import NO_SELECTION, FileSelection
from toolbound.tools import ToolContext

T = TypeVar("T")
R = TypeVar("R", bound=WireModel)

# Pass 2 searches files in batches that grow by this factor, starting small:
# dense matches fill the page from the first few files, sparse ones need more.
_FIRST_BATCH_FILES = 8
_BATCH_GROWTH = 4
# At most this many paths on one rg command line (keeps it far below ARG_MAX).
_MAX_BATCH_FILES = 256

_NARROW = "`path`, `glob` or `pattern`"


def _match_args(args: GrepArgs) -> list[str]:
    """The flags deciding which lines match, shared by both passes."""
    out: list[str] = []
    if args.case_insensitive:
        out.append("--ignore-case")
    if args.multiline:
        out += ["--multiline", "--multiline-dotall"]
    out += ["--regexp", args.pattern]
    return out


def _selection(args: GrepArgs, scope: Scope) -> FileSelection:
    """The files pass 1 keeps; a single file named as ``path`` is searched as it is."""
    if scope.is_file:
        return NO_SELECTION
    return FileSelection.of(glob=args.glob, type_name=args.type, argument="glob")


async def _content_entries(
    args: GrepArgs,
    ctx: ToolContext,
    *,
    scope: Scope,
    files: TextFiles,
    want: int,
    deadline: float,
) -> tuple[list[Entry], list[RgOutcome]]:
    """The first ``want`` entries of ``files`` (best first), searching as few as needed."""
    heap = FirstEntries(want)
    outcomes: list[RgOutcome] = []
    context: list[str] = []
    if args.before:
        context += ["--before-context", str(args.before)]
    if args.after:
        context += ["--after-context", str(args.after)]
    first, size = 0, _FIRST_BATCH_FILES
    while (need := want - len(heap)) > 0:
        await asyncio.to_thread(files.ensure, first + size)
        batch = files.text[first : first + size]
        if not batch:
            break
        ranks = {p: first + i for i, p in enumerate(batch)}

        def consume(stream: IO[bytes], ranks: dict[bytes, int] = ranks) -> None:
            for r in read_records(stream, paths=ranks, max_chars=ctx.limits.max_line_chars):
                heap.add(ranks[r.path], r.line, r.text, r.clipped, r.context)

        outcome = await run_rg(
            [
                *base_args(explicit_path=True),
                "--with-filename",
                "--line-number",
                "--column",
                "--null",
                "--no-heading",
                "--no-context-separator",
                "--max-count",
                str(need),
                *context,
                *_match_args(args),
                "--",
                *batch,
            ],
            cwd=scope.cwd,
            consume=consume,
            deadline=deadline,
            abort=ctx.abort,
            grace_s=ctx.limits.kill_grace_s,
        )
        outcomes.append(outcome)
        if outcome.stopped is not None:
            break
        first += len(batch)
        size = min(size * _BATCH_GROWTH, _MAX_BATCH_FILES)
    return heap.ranked(), outcomes


async def _file_counts(
    args: GrepArgs,
    ctx: ToolContext,
    *,
    scope: Scope,
    files: list[bytes],
    deadline: float,
) -> tuple[dict[bytes, int], list[RgOutcome]]:
    """Matching-line counts of ``files``."""
    counts: dict[bytes, int] = {}
    outcomes: list[RgOutcome] = []

    for start in range(0, len(files), _MAX_BATCH_FILES):
        batch = files[start : start + _MAX_BATCH_FILES]

        def consume(stream: IO[bytes], given: frozenset[bytes] = frozenset(batch)) -> None:
            counts.update(read_counts(stream, paths=given))

        outcome = await run_rg(
            [
                *base_args(explicit_path=True),
                "--with-filename",
                "--count",
                "--null",
                *_match_args(args),
                "--",
                *batch,
            ],
            cwd=scope.cwd,
            consume=consume,
            deadline=deadline,
            abort=ctx.abort,
            grace_s=ctx.limits.kill_grace_s,
        )
        outcomes.append(outcome)
        if outcome.stopped is not None:
            break
    return counts, outcomes


class _Page:
    """Builds one page of entries and its notice, shared by the three output modes."""

    def __init__(self, args: GrepArgs, ctx: ToolContext, outcomes: list[RgOutcome]) -> None:
        self.args = args
        self.limits = ctx.limits
        self.stopped = next((o.stopped for o in outcomes if o.stopped), None)
        self.skipped = sum(o.skipped_paths for o in outcomes)
        self.first_skipped = next((o.first_skipped for o in outcomes if o.first_skipped), None)

    def notice(
        self, *, shown: int, more: bool, stopped_by: str | None, clipped: int, available: int
    ) -> str | None:
        s: list[str] = []
        if self.stopped is not None:
            s.append(notices.stopped(self.stopped, timeout_s=self.limits.search_timeout_s))
        if more:
            s.append(notices.next_page(offset=self.args.offset, shown=shown, narrow=_NARROW))
            if stopped_by in ("bytes", "lines"):
                s.append(notices.budget_reached(self.limits.search))
        elif shown == 0 and self.args.offset > 0 and available == 0:
            s.append(notices.past_the_end(self.args.offset))
        if clipped:
            s.append(notices.clipped_lines(clipped, max_line_chars=self.limits.max_line_chars))
        if self.skipped:
            s.append(notices.skipped_paths(self.skipped, first=self.first_skipped))
        return notices.join(s)


async def run(args: GrepArgs, ctx: ToolContext) -> WireModel:
    limits = ctx.limits
    scope = await asyncio.to_thread(resolve_scope, ctx.roots, args.path)
    deadline = time.monotonic() + limits.search_timeout_s
    head = args.head_limit or limits.grep_head_limit
    # No page can show more entries than the budget has lines.
    page = min(head, limits.search.max_lines)
    want = args.offset + page + 1
    selection = _selection(args, scope)
    walk_args = [
        *base_args(explicit_path=scope.explicit),
        "--files-with-matches",
        *_match_args(args),
    ]
    walk = functools.partial(
        newest_files, walk_args, scope=scope, ctx=ctx, capacity=want, selection=selection
    )
    # Binary files by extension are dropped during the walk, by content only
    # as the page needs them; see TextFiles for when the walk runs again.
    found = await walk(deadline=deadline, sniff="extension")
    raise_if_fatal(found.outcome, regex_arg="pattern", glob_arg="glob")
    if found.outcome.stopped == "timeout":
        # The walk used up the time; the page is still read from what it found.
        deadline = time.monotonic() + limits.search_page_grace_s
    files = TextFiles(found, scope.cwd, limits, sniffed=False)
    result = await _result(args, ctx, scope, files, page, want, deadline)
    if not files.incomplete:
        return result
    found = await walk(deadline=deadline, sniff="content")
    files = TextFiles(found, scope.cwd, limits, sniffed=True)
    return await _result(args, ctx, scope, files, page, want, deadline)


async def _result(
    args: GrepArgs,
    ctx: ToolContext,
    scope: Scope,
    files: TextFiles,
    page: int,
    want: int,
    deadline: float,
) -> WireModel:
    if args.output_mode == "content":
        return await _content_result(args, ctx, scope, files, page, want, deadline)
    await asyncio.to_thread(files.ensure, want)
    if args.output_mode == "filesWithMatches":
        return _files_result(args, ctx, scope, files, page)
    return await _count_result(args, ctx, scope, files, page, deadline)


def _listing_page(
    args: GrepArgs,
    ctx: ToolContext,
    pager: _Page,
    *,
    items: list[T],
    listed: int,
    page: int,
    available: int,
    make: Callable[[list[T], int, bool, str | None], R],
    cost: Callable[[T], int],
) -> R:
    """One page of a per-file listing (filesWithMatches or count), fitted to the budget."""

    def build(n: int, fit_stop: str | None) -> R:
        more = listed > args.offset + n
        notice = pager.notice(
            shown=n, more=more, stopped_by=fit_stop, clipped=0, available=available
        )
        return make(items[:n], n, more or pager.stopped is not None, notice)

    return fit_page(build, items, head_limit=page, budget=ctx.limits.search, cost=cost)


def _files_result(
    args: GrepArgs, ctx: ToolContext, scope: Scope, files: TextFiles, page: int
) -> GrepFilesResult:
    window = files.text[args.offset : args.offset + page]
    return _listing_page(
        args,
        ctx,
        _Page(args, ctx, [files.found.outcome]),
        items=[scope.shown(ctx.roots, p) for p in window],
        listed=len(files.text),
        page=page,
        available=len(window),
        make=lambda shown, n, truncated, notice: GrepFilesResult(
            files=shown, count=n, truncated=truncated, notice=notice
        ),
        cost=item_size,
    )


async def _count_result(
    args: GrepArgs,
    ctx: ToolContext,
    scope: Scope,
    files: TextFiles,
    page: int,
    deadline: float,
) -> GrepCountResult:
    window = files.text[args.offset : args.offset + page]
    counts, outcomes = await _file_counts(args, ctx, scope=scope, files=window, deadline=deadline)
    return _listing_page(
        args,
        ctx,
        _Page(args, ctx, [files.found.outcome, *outcomes]),
        items=[
            GrepFileCount(path=scope.shown(ctx.roots, p), count=counts[p])
            for p in window
            if counts.get(p)
        ],
        listed=len(files.text),
        page=page,
        available=len(window),
        make=lambda rows, n, truncated, notice: GrepCountResult(
            counts=rows, count=n, truncated=truncated, notice=notice
        ),
        cost=lambda r: item_size(r.to_wire()),
    )


async def _content_result(
    args: GrepArgs,
    ctx: ToolContext,
    scope: Scope,
    files: TextFiles,
    page: int,
    want: int,
    deadline: float,
) -> GrepContentResult:
    entries, outcomes = await _content_entries(
        args, ctx, scope=scope, files=files, want=want, deadline=deadline
    )
    window = entries[args.offset : args.offset + page]
    paths: dict[int, str] = {}
    for e in window:
        if e.rank not in paths:
            paths[e.rank] = scope.shown(ctx.roots, files.text[e.rank])
    matches = [
        GrepMatch(path=paths[e.rank], line=e.line, text=e.text, context=e.context or None)
        for e in window
    ]
    pager = _Page(args, ctx, [files.found.outcome, *outcomes])

    def build(n: int, fit_stop: str | None) -> GrepContentResult:
        more = len(entries) > args.offset + n
        return GrepContentResult(
            matches=matches[:n],
            count=n,
            files=len({m.path for m in matches[:n]}),
            truncated=more or pager.stopped is not None,
            notice=pager.notice(
                shown=n,
                more=more,
                stopped_by=fit_stop,
                clipped=sum(e.clipped for e in window[:n]),
                available=len(window),
            ),
        )

    return fit_page(
        build,
        matches,
        head_limit=page,
        budget=ctx.limits.search,
        cost=lambda m: item_size(m.to_wire()),
    )
