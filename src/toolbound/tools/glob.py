"""Glob: files whose path matches a pattern, newest first (seed sections 2, 5, 6).

Stages: resolve ``path`` -> list files with rg (``--files``, rg's ignore
rules, parallel walk), keep those the pattern matches and the ``limit + 1``
newest of them -> fit the search budget -> result. The glob has ripgrep's
syntax: without a ``/`` it matches file names at any depth (``*.md``), with
one it is matched from ``path`` (``src/**/*.ts``); a leading ``./`` or the
absolute ``path`` is dropped. It only filters what a plain ``rg --files``
lists (search/select.py): ``**/*`` lists no ``.git/``, no gitignored
``node_modules/``, no hidden folder; an explicit ``path`` reaches into one.

Pieces:
    run  GlobArgs + context -> GlobResult
"""

from __future__ import annotations

import asyncio
import os
import time

from toolbound import notices
from toolbound.arguments import filled
from toolbound.models.glob import GlobArgs, GlobResult
from toolbound.results import ErrorCode, ToolError
from toolbound.search.files import newest_files
from toolbound.search.ranking import fit_page, item_size
from toolbound.search.rg import base_args, raise_if_fatal
from toolbound.search.scope import Scope, resolve_scope
from toolbound.search.select import FileSelection
from toolbound.shrink import SearchPage, noted
from toolbound.tools import ToolContext


def _glob(pattern: str, scope: Scope) -> str:
    """The pattern relative to ``path``: ``./`` and an absolute ``path`` prefix dropped."""
    inside = f"{scope.real_cwd}{os.sep}"
    if pattern.startswith(inside):
        return pattern[len(inside) :]
    return pattern.removeprefix("./")


async def run(args: GlobArgs, ctx: ToolContext) -> GlobResult:
    # The page and its budget are the profile's, shrunk as the context fills.
    limit = filled(args.limit)
    page = ctx.budgets.search_page(ctx.limits, "Glob", limit)
    return noted(await _search(args, ctx, page), page.sentence)


async def _search(args: GlobArgs, ctx: ToolContext, page: SearchPage) -> GlobResult:
    scope = await asyncio.to_thread(resolve_scope, ctx.roots, args.path)
    try:
        return await _search_in(args, ctx, page, scope)
    finally:
        scope.close()


async def _search_in(
    args: GlobArgs, ctx: ToolContext, page: SearchPage, scope: Scope
) -> GlobResult:
    limits, limit, budget = ctx.limits, page.entries, page.budget
    if scope.is_file:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"Glob searches folders and {args.path} is a file. Give its folder as `path`, "
            "or Read the file.",
        )
    deadline = time.monotonic() + limits.search_timeout_s
    selection = FileSelection.of(
        glob=_glob(args.pattern, scope), type_name=None, argument="pattern"
    )
    found = await newest_files(
        [*base_args(explicit_path=scope.explicit), "--files"],
        scope=scope,
        limits=ctx.limits,
        abort=ctx.abort,
        capacity=limit + 1,
        deadline=deadline,
        selection=selection,
    )
    raise_if_fatal(found.outcome, regex_arg="pattern", glob_arg="pattern")
    shown = [scope.shown(ctx.roots, p) for p in found.ranked[:limit]]
    stopped = found.outcome.stopped

    def build(n: int, fit_stop: str | None) -> GlobResult:
        more = len(found.ranked) > n
        budget_stopped = fit_stop in ("bytes", "lines")
        # A page the call's budgets shrank is not widened by a higher `limit`.
        asked = filled(args.limit)
        can_raise = not budget_stopped and limit == asked and limit < limits.glob_limit_max
        notice = notices.glob_page(
            shown=n,
            more=more,
            raise_to=limits.glob_limit_max if can_raise else None,
            budget_stopped=budget_stopped,
            budget=budget,
            stopped_by=stopped,
            timeout_s=limits.search_timeout_s,
            skipped=found.outcome.skipped_paths,
            first_skipped=found.outcome.first_skipped,
        )
        return GlobResult(
            matches=shown[:n],
            count=n,
            truncated=more or stopped is not None,
            notice=notice,
        )

    return fit_page(build, shown, head_limit=limit, budget=budget, cost=item_size)
