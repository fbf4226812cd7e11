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
line numbers and ``"context": true``, in line order beside the matches.
``headLimit`` and ``offset`` count matches; a match's context lines come with
it, within the byte and line budget. A multiline match gives one entry per
line it spans.

Where each part lives: the walk that keeps the newest files in
search/files.py, the passes' rg arguments and pass 2 in search/passes.py,
rg's output parsed in search/matchlines.py, the heaps and the budget fit in
search/ranking.py, the page's notice in search/page_notice.py. This module
puts them together into a page.

Pieces:
    run              GrepArgs + context -> one of the three Grep results
    _result          the page in the output mode asked for
    _listing_page    one page of filesWithMatches or count, fitted to the budget
    _content_result  one page of content entries, fitted to the budget
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from typing import TypeVar

from toolbound.arguments import filled
from toolbound.models.grep import (
    GrepArgs,
    GrepContentResult,
    GrepCountResult,
    GrepFileCount,
    GrepFilesResult,
    GrepMatch,
)
from toolbound.results import WireModel
from toolbound.search.files import TextFiles, newest_files
from toolbound.search.page_notice import PageNotice
from toolbound.search.passes import SecondPass, walk_args
from toolbound.search.ranking import Entry, fit_page, item_size
from toolbound.search.rg import raise_if_fatal
from toolbound.search.scope import Scope, resolve_scope
from toolbound.search.select import NO_SELECTION, FileSelection
from toolbound.shrink import SearchPage, noted
from toolbound.tools import ToolContext

T = TypeVar("T")
R = TypeVar("R", bound=WireModel)


def _selection(args: GrepArgs, scope: Scope) -> FileSelection:
    """The files pass 1 keeps; a single file named as ``path`` is searched as it is."""
    if scope.is_file:
        return NO_SELECTION
    return FileSelection.of(glob=args.glob, type_name=args.type, argument="glob")


async def run(args: GrepArgs, ctx: ToolContext) -> WireModel:
    head = filled(args.head_limit)
    # No page can show more entries than the budget has lines; both are the
    # profile's, shrunk as the context fills (ctx.budgets).
    page = ctx.budgets.search_page(ctx.limits, "Grep", min(head, ctx.limits.search.max_lines))
    return noted(await _search(args, ctx, page), page.sentence)


async def _search(args: GrepArgs, ctx: ToolContext, page: SearchPage) -> WireModel:
    scope = await asyncio.to_thread(resolve_scope, ctx.roots, args.path)
    try:
        return await _search_in(args, ctx, page, scope)
    finally:
        scope.close()


async def _search_in(args: GrepArgs, ctx: ToolContext, page: SearchPage, scope: Scope) -> WireModel:
    limits = ctx.limits
    deadline = time.monotonic() + limits.search_timeout_s
    want = args.offset + page.entries + 1
    selection = _selection(args, scope)
    walk = functools.partial(
        newest_files,
        walk_args(args, scope),
        scope=scope,
        limits=ctx.limits,
        abort=ctx.abort,
        capacity=want,
        selection=selection,
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
    page: SearchPage,
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
    pager: PageNotice,
    *,
    items: list[T],
    listed: int,
    page: SearchPage,
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

    return fit_page(build, items, head_limit=page.entries, budget=page.budget, cost=cost)


def _files_result(
    args: GrepArgs, ctx: ToolContext, scope: Scope, files: TextFiles, page: SearchPage
) -> GrepFilesResult:
    window = files.text[args.offset : args.offset + page.entries]
    return _listing_page(
        args,
        ctx,
        PageNotice(args, ctx.limits, [files.found.outcome], budget=page.budget),
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
    page: SearchPage,
    deadline: float,
) -> GrepCountResult:
    window = files.text[args.offset : args.offset + page.entries]
    second = SecondPass(args, scope, deadline, ctx.limits, ctx.abort)
    counts, outcomes = await second.file_counts(window)
    return _listing_page(
        args,
        ctx,
        PageNotice(args, ctx.limits, [files.found.outcome, *outcomes], budget=page.budget),
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
    page: SearchPage,
    want: int,
    deadline: float,
) -> GrepContentResult:
    second = SecondPass(args, scope, deadline, ctx.limits, ctx.abort)
    entries, outcomes = await second.content_entries(files, want=want)
    after = args.after or 0
    found = [i for i, e in enumerate(entries) if not e.context]
    window = entries[_match_window(entries, found, args.offset, page.entries, after=after)]
    paths: dict[int, str] = {}
    for e in window:
        if e.rank not in paths:
            paths[e.rank] = scope.shown(ctx.roots, files.text[e.rank])
    matches = [
        GrepMatch(
            path=paths[e.rank], line=e.line, text=e.text, context=e.context or None, column=e.column
        )
        for e in window
    ]
    pager = PageNotice(args, ctx.limits, [files.found.outcome, *outcomes], budget=page.budget)

    def build(n: int, fit_stop: str | None) -> GrepContentResult:
        n = _whole_groups(window, n, after=after)
        shown = sum(not e.context for e in window[:n])
        more = len(found) > args.offset + shown
        return GrepContentResult(
            matches=matches[:n],
            count=n,
            files=len({m.path for m in matches[:n]}),
            truncated=more or pager.stopped is not None,
            notice=pager.notice(
                shown=shown,
                more=more,
                stopped_by=fit_stop,
                clipped=sum(e.clipped for e in window[:n]),
                windowed=next(((e.line, e.column) for e in window[:n] if e.column), None),
                available=len(window),
            ),
        )

    return fit_page(
        build,
        matches,
        head_limit=len(matches),
        budget=page.budget,
        cost=lambda m: item_size(m.to_wire()),
    )


def _belongs_before(prev: Entry, entry: Entry, after: int) -> bool:
    """Whether a context ``entry`` after the match ``prev`` is one of its after lines."""
    return entry.rank == prev.rank and entry.line <= prev.line + after


def _group_start(entries: list[Entry], prev: int, match: int, after: int) -> int:
    """Where the entries of the match at ``match`` begin (its before lines), the match
    at ``prev`` being the one before it."""
    for i in range(prev + 1, match):
        if not _belongs_before(entries[prev], entries[i], after):
            return i
    return match


def _match_window(
    entries: list[Entry], found: list[int], offset: int, page: int, *, after: int
) -> slice:
    """The entries of matches ``offset .. offset + page - 1`` with their context lines:
    ``headLimit`` and ``offset`` count matches, and context comes with its match."""
    if offset >= len(found):
        return slice(len(entries), len(entries))
    start = 0 if offset == 0 else _group_start(entries, found[offset - 1], found[offset], after)
    last = offset + page - 1
    if last + 1 >= len(found):
        return slice(start, len(entries))
    return slice(start, _group_start(entries, found[last], found[last + 1], after))


def _whole_groups(window: list[Entry], n: int, *, after: int) -> int:
    """``n`` less the before lines at its end whose match did not fit."""
    last = next((i for i in range(n - 1, -1, -1) if not window[i].context), None)
    if last is None:
        return n
    end = last + 1
    while end < n and _belongs_before(window[last], window[end], after):
        end += 1
    return end
