"""Results that fit the harness (CONTRACT section 14): each known client's cap, and the fit.

An agent harness takes only so much of one tool result: past its cap it cuts
the result itself (Codex CLI keeps both ends, opencode the head) or moves it to
a file of its own (Claude Code), and the model loses toolbound's marker,
stderr's tail and the spill path. So ``toolbound serve`` recognises the client
from ``initialize``'s ``clientInfo`` and keeps every result's whole text
within that client's cap, cutting it itself: the tools' budgets shrink to the
cap (``shrink.budget_for``) and a last guard (``bounds/whole.py``) cuts
whatever still exceeds it, with a marker.

``KNOWN_CLIENTS`` is the one table of the clients toolbound knows, matched on
``clientInfo.name``. Each cap is the largest result the harness hands its
model whole, measured with the version named by running it headless against a
scripted model server (tests/harness, bench/harness.py); an entry marked
``provisional`` is taken from the harness's behaviour as first reported and
awaits that measurement.

Pieces:
    ClientCap      a known client: its clientInfo name, what it is, its cap
    KNOWN_CLIENTS  the table
    Fit            the cap in force for one call (and the client it is for)
    NO_FIT         no cap (``--fit off``, an unknown client)
    FitMode        ``auto`` | ``off`` | a byte cap; ``fit_mode`` parses ``--fit``
    fit_for        mode + clientInfo -> Fit
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from toolbound.limits import KB

# The smallest byte cap ``--fit N`` takes: room for the outcome, a notice and
# the guard's marker.
MIN_FIT_BYTES = 2 * KB


@dataclass(frozen=True, slots=True)
class ClientCap:
    """A client toolbound recognises, and the most of one result it hands its model whole.

    ``name`` is ``clientInfo.name`` as the harness sends it; a name that
    starts with it followed by ``-`` matches too (Gemini CLI appends the
    server's name). ``max_lines`` is set where the harness also counts lines.
    """

    name: str
    harness: str
    version: str
    max_bytes: int
    max_lines: int | None = None
    provisional: bool = False

    def matches(self, client_name: str) -> bool:
        return client_name == self.name or client_name.startswith(self.name + "-")


KNOWN_CLIENTS: tuple[ClientCap, ...] = (
    # Moves a larger MCP result to a file of its own, outside the workspace, and
    # shows the model a 2 KB note: a 48 KB Read window was moved (provisional).
    ClientCap("claude-code", "Claude Code", "2.1.332", max_bytes=24 * KB, provisional=True),
    # Keeps about 12 KB of a result, cutting its middle (provisional).
    ClientCap("codex-mcp-client", "Codex CLI", "0.169.0", max_bytes=10 * KB, provisional=True),
    # No cut seen on the economy profile's results (provisional).
    ClientCap("gemini-cli-mcp-client", "Gemini CLI", "0.61.0", max_bytes=48 * KB, provisional=True),
    # Keeps the first 50 KB / 2,000 lines of a result (provisional).
    ClientCap(
        "opencode", "opencode", "1.18.33", max_bytes=50 * KB, max_lines=2000, provisional=True
    ),
)


@dataclass(frozen=True, slots=True)
class Fit:
    """The cap one call's whole model text is kept within, and whom it is for.

    ``client`` names the client as recognised (``"claude-code 2.1.332"``), or
    is None; ``max_bytes`` / ``max_lines`` None means no cap of that kind.
    """

    client: str | None = None
    max_bytes: int | None = None
    max_lines: int | None = None

    @property
    def capped(self) -> bool:
        return self.max_bytes is not None or self.max_lines is not None


NO_FIT = Fit()

# ``auto``: the recognised client's cap; ``off``: none; an int: that many bytes for any client.
FitMode = Literal["auto", "off"] | int


def fit_mode(text: str) -> FitMode:
    """``--fit``'s value; ValueError saying what it takes."""
    if text in ("auto", "off"):
        return "auto" if text == "auto" else "off"
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < MIN_FIT_BYTES:
        raise ValueError(
            f"--fit takes auto, off or a byte cap of at least {MIN_FIT_BYTES} (got {text!r})"
        )
    return n


def known_client(name: str | None) -> ClientCap | None:
    """The table's entry for ``clientInfo.name``, if toolbound knows the client."""
    if not name:
        return None
    for cap in KNOWN_CLIENTS:
        if cap.matches(name):
            return cap
    return None


def fit_for(mode: FitMode, client_name: str | None, client_version: str | None) -> Fit:
    """The fit in force for a call from the client ``clientInfo`` names, under ``mode``."""
    client = f"{client_name} {client_version}".strip() if client_name else None
    if mode == "off":
        return Fit(client=client)
    if isinstance(mode, int):
        return Fit(client=client, max_bytes=mode)
    cap = known_client(client_name)
    if cap is None:
        return Fit(client=client)
    return Fit(client=client, max_bytes=cap.max_bytes, max_lines=cap.max_lines)
