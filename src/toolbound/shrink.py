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
context_window=N)`` and ``host.context_used(tokens)``).

Pieces:
    shrink_factor  fill share -> the factor of the budget (pure)
    shrunk         a budget scaled by a factor, within the floor (pure)
    budget_for     ctx + budget name + base budget -> (budget, notice sentence or None)
"""

from __future__ import annotations

import math

from toolbound import notices
from toolbound.context import ToolContext
from toolbound.limits import Budget, Economy


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
