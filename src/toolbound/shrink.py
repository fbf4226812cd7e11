"""Budgets that shrink as the model's context fills (economy profile, CONTRACT section 8).

A result budget that suits an empty context crowds a nearly full one: the
next result then forces a compaction, and the facts of every earlier result
leave with it. So under the economy profile each tool reads its budget
through :func:`budget_for`, which scales it by how full the context is:

    fill below 50%    the whole budget
    from 50%          1/2
    from 70%          1/4
    from 85%          1/8
    never below 4KB / 100 lines (nor above the budget itself)

(``Limits.economy.shrink_steps`` and ``shrink_floor``.) A smaller budget
loses no fact: every cut still names its continuation (the next offset, the
spill file), and the shrunken budget is named in the result's notice. The
exact profile, and a host that does not know its context window, never
shrink anything.

How full the context is comes from the host's gauge (``ToolHost(
context_window=N)`` and ``host.context_used(tokens)``); until the caller
reports, from the session's own context estimate when the host records into a
store that holds the transcript (``ContextGauge.estimate_from``: the messages
the model would be sent, after the last checkpoint, by ``estimate_tokens``).

Grep and Glob shrink both their byte budget and their page of entries
(``search_page``); Read's window and Bash's streams call ``budget_for``.

Pieces:
    shrink_factor  fill share -> the factor of the budget (pure)
    shrunk         a budget scaled by a factor, within the floor (pure)
    budget_for     ctx + budget name + base budget -> (budget, notice sentence or None)
    search_page    Grep/Glob: ctx + entries -> (ctx with the shrunken search budget,
                   entries, sentence)
    noted          a result with the sentence added to its notice, when it was cut
"""

from __future__ import annotations

import dataclasses
import math
from typing import TypeVar

from toolbound import notices
from toolbound.context import ToolContext
from toolbound.limits import Budget, Economy
from toolbound.results import WireModel

R = TypeVar("R", bound=WireModel)


def shrink_factor(fill: float, economy: Economy) -> float:
    """The factor of a budget when ``fill`` of the context window is in use."""
    factor = 1.0
    for from_fill, step_factor in economy.shrink_steps:
        if fill >= from_fill:
            factor = step_factor
    return factor


def shrunk(base: Budget, factor: float, floor: Budget) -> Budget:
    """``base`` times ``factor``, each ceiling kept within ``floor`` and ``base``."""
    if factor >= 1.0:
        return base
    return Budget(
        max_bytes=min(base.max_bytes, max(floor.max_bytes, math.floor(base.max_bytes * factor))),
        max_lines=min(base.max_lines, max(floor.max_lines, math.floor(base.max_lines * factor))),
    )


def budget_for(ctx: ToolContext, tool: str, base: Budget) -> tuple[Budget, str | None]:
    """The budget a tool applies now, and the notice sentence naming it when it shrank.

    ``tool`` names the budget in that sentence (``"Read"``, ``"Grep"``,
    ``"Bash stdout"``); ``base`` is the profile's budget for an empty context.
    Under the exact profile, or without a known context window, it is ``base``
    and no sentence. A tool adds the sentence to its notice when the shrunken
    budget cut its result (a budget that cut nothing needs no word).
    """
    if ctx.profile != "economy":
        return base, None
    fill = ctx.gauge.fill()
    if fill is None:
        return base, None
    economy = ctx.limits.economy
    budget = shrunk(base, shrink_factor(fill, economy), economy.shrink_floor)
    if budget == base:
        return base, None
    return budget, notices.budget_shrunk(tool, budget=budget, base=base, fill=fill)


def search_page(ctx: ToolContext, tool: str, entries: int) -> tuple[ToolContext, int, str | None]:
    """Grep's or Glob's page of ``entries`` and its byte budget, shrunk together.

    Under the economy profile the page starts from ``limits.economy.search``
    (never more than the exact profile's ``limits.search``), then shrinks.

    Returns the context to search with (its ``limits.search`` the shrunken
    budget, so every fit and notice of the page uses it), the entries a page
    may show, and the sentence naming the shrink (None when nothing shrank).
    """
    search = ctx.limits.search
    if ctx.profile == "economy":
        page = ctx.limits.economy.search
        search = Budget(
            max_bytes=min(search.max_bytes, page.max_bytes),
            max_lines=min(search.max_lines, page.max_lines),
        )
    base = Budget(max_bytes=search.max_bytes, max_lines=min(entries, search.max_lines))
    budget, sentence = budget_for(ctx, tool, base)
    if budget == Budget(ctx.limits.search.max_bytes, min(entries, ctx.limits.search.max_lines)):
        return ctx, entries, None
    limits = ctx.limits.replace(search=budget)
    return dataclasses.replace(ctx, limits=limits), budget.max_lines, sentence


def noted(result: R, sentence: str | None) -> R:
    """``result`` with ``sentence`` after its notice, when the result was cut."""
    if sentence is None or not getattr(result, "truncated", False):
        return result
    said = [n for n in (getattr(result, "notice", None), sentence) if n]
    return result.model_copy(update={"notice": notices.join(said)})
