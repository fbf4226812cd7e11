"""``ContextGauge``: how full the model's context is, as far as the host knows.

The economy profile shrinks its budgets as the context fills (CONTRACT
section 8). The host keeps one gauge per session: ``ToolHost(context_window=N)``
sets the window in tokens, ``host.context_used(tokens)`` reports what the
caller's context holds now. Until the caller reports, a host that records into
a store holding the session's transcript estimates it from there before each
call (``HostSession.estimate_context``): the gauge keeps the tally, so each estimate reads
only the messages appended since the last one. A gauge without a window never
shrinks anything.

Pieces:
    ContextGauge  the window and the tokens used; ``fill()`` -> share or None
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only the type: the gauge is a value, the host reads the store
    from toolbound.store.context import ContextTally


@dataclass(slots=True)
class ContextGauge:
    """The model's context window (tokens, None when unknown) and what it holds."""

    window: int | None = None
    used: int = 0
    # The session's own estimate, used until the caller reports (None: none).
    estimated: int | None = None
    reported: bool = False
    # How far the estimate was counted (the store's tally), to count on from.
    tally: ContextTally | None = None

    def __post_init__(self) -> None:
        if self.window is not None and self.window < 1:
            raise ValueError(
                f"context_window must be a positive number of tokens, not {self.window}"
            )

    def report(self, tokens: int) -> None:
        """The caller's context holds ``tokens`` tokens now."""
        if tokens < 0:
            raise ValueError(f"context_used takes a number of tokens >= 0, not {tokens}")
        self.used = tokens
        self.reported = True

    def take_estimate(self, tally: ContextTally | None) -> None:
        """The session's transcript as counted so far (``HostSession.estimate_context``),
        or None when it could not be read: no estimate then."""
        self.tally = tally
        self.estimated = tally.tokens if tally is not None and tally.messages else None

    def fill(self) -> float | None:
        """The share of the window in use (may pass 1.0), or None without a window."""
        if self.window is None:
            return None
        if not self.reported and self.estimated is not None:
            return self.estimated / self.window
        return self.used / self.window
