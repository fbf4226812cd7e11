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

(``Limits.economy.shrink_steps`` and ``shrink_floor``.) Under any profile a
client's per-result cap (``ctx.fit``, toolbound/fit.py) bounds every budget
too: a tool's share of the cap, less the room its outcome, labels and notice
take (``FIT_RESERVE``), so the harness never cuts the result. A smaller budget
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
    fitted         a budget within a share of the client's cap (pure)
    shrunk         a budget scaled by a factor, within the floor (pure)
    budget_for     ctx + budget name + base budget (+ share of the cap)
                   -> (budget, notice sentence or None)
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
from toolbound.fit import Fit
from toolbound.limits import KB, Budget, Economy
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


# What a result's text holds besides a fitted budget's payload: the outcome, the
# stream labels, the markers and the notice sentences (a spill path each).
FIT_RESERVE = Budget(max_bytes=KB, max_lines=20)
# A fitted budget never goes below this (a cap too small for it is the last guard's).
FIT_FLOOR = Budget(max_bytes=KB, max_lines=10)


def fitted(base: Budget, fit: Fit, share: float) -> Budget:
    """``base`` within ``share`` of ``fit``'s cap, less ``FIT_RESERVE``, never below
    ``FIT_FLOOR`` (nor above ``base``)."""
    max_bytes, max_lines = base.max_bytes, base.max_lines
    if fit.max_bytes is not None:
        room = math.floor((fit.max_bytes - FIT_RESERVE.max_bytes) * share)
        max_bytes = min(max_bytes, max(FIT_FLOOR.max_bytes, room))
    if fit.max_lines is not None:
        room = math.floor((fit.max_lines - FIT_RESERVE.max_lines) * share)
        max_lines = min(max_lines, max(FIT_FLOOR.max_lines, room))
    return Budget(max_bytes=max_bytes, max_lines=max_lines)


def budget_for(
    ctx: ToolContext, tool: str, base: Budget, *, share: float = 1.0
) -> tuple[Budget, str | None]:
    """The budget a tool applies now, and the notice sentence naming it when it shrank.

    ``tool`` names the budget in that sentence (``"Read"``, ``"Grep"``,
    ``"Bash stdout"``); ``base`` is the profile's budget for an empty context;
    ``share`` the part of the client's cap (``ctx.fit``) this budget may take
    (Bash's two streams split it). Under the exact profile, or without a known
    context window, nothing shrinks; without a cap nothing is fitted; then it
    is ``base`` and no sentence. A tool adds the sentence to its notice when
    the smaller budget cut its result (a budget that cut nothing needs no word).
    """
    budget, sentence = base, None
    fill = ctx.gauge.fill() if ctx.profile == "economy" else None
    if fill is not None:
        economy = ctx.limits.economy
        budget = shrunk(base, shrink_factor(fill, economy), economy.shrink_floor)
        if budget != base:
            sentence = notices.budget_shrunk(tool, budget=budget, base=base, fill=fill)
    if ctx.fit.capped:
        within = fitted(budget, ctx.fit, share)
        if within != budget:
            budget = within
            sentence = notices.budget_fitted(tool, budget=budget, client=ctx.fit.client)
    return budget, sentence


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
