"""What a Grep page says beside its entries: the notice, from how its rg runs ended.

One ``PageNotice`` per page, built from every rg run the page needed (the walk
and pass 2), so the three output modes word a stop, the next page, the budget,
clipped lines and skipped paths the same way (the sentences: toolbound.notices).

Pieces:
    PageNotice  rg outcomes + the call's offset -> whether the page stopped early, its notice
"""

from __future__ import annotations

from collections.abc import Sequence

from toolbound import notices
from toolbound.limits import Budget, Limits
from toolbound.models.grep import GrepArgs
from toolbound.search.rg import RgOutcome


class PageNotice:
    """Builds one page's notice, shared by the three output modes."""

    def __init__(
        self, args: GrepArgs, limits: Limits, outcomes: Sequence[RgOutcome], *, budget: Budget
    ) -> None:
        """``budget`` is the one the page was cut to (the call's, ``shrink.SearchPage``)."""
        self.args = args
        self.limits = limits
        self.budget = budget
        self.stopped = next((o.stopped for o in outcomes if o.stopped), None)
        self.skipped = sum(o.skipped_paths for o in outcomes)
        self.first_skipped = next((o.first_skipped for o in outcomes if o.first_skipped), None)

    def notice(
        self,
        *,
        shown: int,
        more: bool,
        stopped_by: str | None,
        clipped: int,
        available: int,
        windowed: tuple[int, int] | None = None,
    ) -> str | None:
        s: list[str] = []
        if self.stopped is not None:
            s.append(notices.stopped(self.stopped, timeout_s=self.limits.search_timeout_s))
        if more:
            s.append(
                notices.next_page(offset=self.args.offset, shown=shown, narrow=notices.GREP_NARROW)
            )
            if stopped_by in ("bytes", "lines"):
                s.append(notices.budget_reached(self.budget))
        elif shown == 0 and self.args.offset > 0 and available == 0:
            s.append(notices.past_the_end(self.args.offset))
        if clipped:
            s.append(
                notices.clipped_lines(
                    clipped, max_line_chars=self.limits.max_line_chars, windowed=windowed
                )
            )
        if self.skipped:
            s.append(notices.skipped_paths(self.skipped, first=self.first_skipped))
        return notices.join(s)
