"""Budgets that shrink as the model's context fills (economy profile, CONTRACT section 8).

A result budget that suits an empty context crowds a nearly full one: the
next result then forces a compaction, and the facts of every earlier result
leave with it. So under the economy profile each tool reads its budget
through :meth:`Budgets.budget`, which scales it by how full the context is:

    fill below 50%    the whole budget
    from 50%          1/2
    from 70%          1/4
    from 85%          1/8
    never below 4KB / 100 lines (nor above the budget itself)

(``Limits.economy.shrink_steps`` and ``shrink_floor``.) Under any profile a
client's per-result cap (``Budgets.fit``, toolbound/fit.py) bounds every budget
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

The host makes one :class:`Budgets` per call (``Budgets.for_call``: the
profile, the context's fill when the call starts, the client's fit) and puts
it on the call's ``ToolContext``; a tool asks it for its budget and never
which profile is in force. Grep and Glob shrink both their byte budget and
their page of entries (``search_page``); Read's window and Bash's streams
call ``budget``.

Pieces:
    shrink_factor  fill share -> the factor of the budget (pure)
    fitted         a budget within a share of the client's cap (pure)
    shrunk         a budget scaled by a factor, within the floor (pure)
    Budgets        one call's budgets: profile + fill + fit (EXACT_BUDGETS: the seed's)
                   .budget(tool, base, share) -> (budget, notice sentence or None)
                   .search_page(limits, tool, entries) -> SearchPage
                   .streams(limits) -> Bash's two streams, each fitted and shrunk
    SearchPage     Grep's or Glob's page: its entries, its byte budget, the sentence
    ShellStream    one Bash stream's budget as applied, its end(s), the sentence
    noted          a result with the sentence added to its notice, when it was cut
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeVar

from toolbound import notices
from toolbound.fit import NO_FIT, Fit
from toolbound.gauge import ContextGauge
from toolbound.limits import EXACT, KB, Budget, Economy, Ends, Limits, Profile
from toolbound.results import WireModel

R = TypeVar("R", bound=WireModel)


def shrink_factor(fill: float, economy: Economy) -> float:
    """The factor of a budget when ``fill`` of the context window is in use."""
    return _factor(fill, economy.shrink_steps)


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


@dataclass(frozen=True, slots=True)
class SearchPage:
    """Grep's or Glob's page: at most ``entries`` entries within ``budget``, and the
    sentence naming a budget that shrank (None when nothing shrank)."""

    entries: int
    budget: Budget
    sentence: str | None = None


@dataclass(frozen=True, slots=True)
class ShellStream:
    """One Bash stream as a call keeps it: ``budget`` (shrunk and fitted), the
    ``keep`` end(s) and the head's share of both, and the sentence naming the
    budget when it is smaller than the profile's."""

    budget: Budget
    keep: Ends
    head_share: float
    sentence: str | None


@dataclass(frozen=True, slots=True)
class Budgets:
    """The budgets one call runs under: the profile's, shrunk as the context fills,
    within the client's per-result cap.

    ``fill`` is the share of the context window in use when the call started,
    None when the profile does not shrink or the window is unknown; ``steps``
    and ``floor`` are the shrink schedule (``Limits.economy``). ``fit`` is the
    client's cap (``toolbound.fit``). The default is the exact profile with
    nothing shrunk or fitted.
    """

    profile: Profile = EXACT
    fit: Fit = NO_FIT
    fill: float | None = None
    steps: tuple[tuple[float, float], ...] = ()
    floor: Budget = FIT_FLOOR

    @classmethod
    def for_call(
        cls, limits: Limits, profile: Profile, *, gauge: ContextGauge, fit: Fit = NO_FIT
    ) -> Budgets:
        """The budgets of a call starting now, under ``profile``, as full as ``gauge``
        says, for the client ``fit`` names."""
        fill = gauge.fill() if profile.shrinks else None
        economy = limits.economy
        return cls(profile, fit, fill, economy.shrink_steps, economy.shrink_floor)

    def budget(self, tool: str, base: Budget, *, share: float = 1.0) -> tuple[Budget, str | None]:
        """The budget a tool applies now, and the notice sentence naming it when it shrank.

        ``tool`` names the budget in that sentence (``"Read"``, ``"Grep"``,
        ``"Bash stdout"``); ``base`` is the profile's budget for an empty
        context; ``share`` the part of the client's cap (``fit``) this budget
        may take (Bash's two streams split it). Without a fill nothing shrinks;
        without a cap nothing is fitted; then it is ``base`` and no sentence. A
        tool adds the sentence to its notice when the smaller budget cut its
        result (a budget that cut nothing needs no word).
        """
        budget, sentence = base, None
        if self.fill is not None:
            budget = shrunk(base, _factor(self.fill, self.steps), self.floor)
            if budget != base:
                sentence = notices.budget_shrunk(tool, budget=budget, base=base, fill=self.fill)
        if self.fit.capped:
            within = fitted(budget, self.fit, share)
            if within != budget:
                budget = within
                sentence = notices.budget_fitted(tool, budget=budget, client=self.fit.client)
        return budget, sentence

    def search_page(self, limits: Limits, tool: str, entries: int) -> SearchPage:
        """Grep's or Glob's page of ``entries`` and its byte budget, shrunk together.

        The page starts from the profile's search budget (``Profile.search``,
        never more than ``limits.search``), then shrinks and fits. The budget
        the page is cut to is ``limits.search`` itself when nothing changed it,
        so every fit and notice of the page names that.
        """
        search = self.profile.search(limits)
        base = Budget(max_bytes=search.max_bytes, max_lines=min(entries, search.max_lines))
        budget, sentence = self.budget(tool, base)
        if budget == Budget(limits.search.max_bytes, min(entries, limits.search.max_lines)):
            return SearchPage(entries, limits.search)
        return SearchPage(budget.max_lines, budget, sentence)

    def streams(self, limits: Limits) -> tuple[ShellStream, ShellStream]:
        """Bash's stdout and stderr as this call keeps them: the profile's stream
        budgets, each shrunk, and fitted to its share of the client's cap (the two
        share it in proportion to their budgets)."""
        out, err = self.profile.streams(limits)
        total_bytes = out.budget.max_bytes + err.budget.max_bytes
        kept: list[ShellStream] = []
        for label, stream in (("stdout", out), ("stderr", err)):
            share = stream.budget.max_bytes / total_bytes
            budget, sentence = self.budget(f"Bash {label}", stream.budget, share=share)
            kept.append(ShellStream(budget, stream.keep, stream.head_share, sentence))
        return kept[0], kept[1]


# The exact profile's budgets, nothing shrunk or fitted (a context made outside a host).
EXACT_BUDGETS = Budgets()


def _factor(fill: float, steps: tuple[tuple[float, float], ...]) -> float:
    factor = 1.0
    for from_fill, step_factor in steps:
        if fill >= from_fill:
            factor = step_factor
    return factor


def noted(result: R, sentence: str | None) -> R:
    """``result`` with ``sentence`` after its notice, when the result was cut."""
    if sentence is None or not getattr(result, "truncated", False):
        return result
    said = [n for n in (getattr(result, "notice", None), sentence) if n]
    return result.model_copy(update={"notice": notices.join(said)})
