"""Results that fit the harness (CONTRACT section 14): each known client's cap, and the fit.

An agent harness takes only so much of one tool result: past its cap it cuts
the result itself (Codex CLI keeps both ends, opencode the head) or moves it to
a file of its own (Claude Code), and the model loses toolbound's marker,
stderr's tail and the spill path. So ``toolbound serve`` recognises the client
from ``initialize``'s ``clientInfo`` and keeps every result's whole text
within that client's cap, cutting it itself: the tools' budgets shrink to the
cap (``shrink.Budgets``) and a last guard (``bounds/whole.py``) cuts
whatever still exceeds it, with a marker.

``KNOWN_CLIENTS`` is the one table of the clients toolbound knows, matched on
``clientInfo.name``. Each cap is the largest result the harness hands its
model whole, measured with the version named by running it headless against a
scripted model server that records what reaches the model (a probe tool
returning texts of chosen sizes), less a margin for what the harness adds
around the text; the measurements are in each entry's comment.

Pieces:
    ClientCap      a known client: its clientInfo name, what it is, its cap
    KNOWN_CLIENTS  the table; ``known_client`` looks a clientInfo name up in it
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

    def matches(self, client_name: str) -> bool:
        return client_name == self.name or client_name.startswith(self.name + "-")


KNOWN_CLIENTS: tuple[ClientCap, ...] = (
    # 50,000 characters kept whole, 50,001 moved to a file of its own outside the
    # workspace, the model shown a 2 KB preview; lines do not count.
    ClientCap("claude-code", "Claude Code", "2.1.332", max_bytes=50_000),
    # About 12,000 bytes with its own 33-byte "Wall time ... Output:" header (11,960
    # of text kept, 11,967 cut in the middle); bytes only.
    ClientCap("codex-mcp-client", "Codex CLI", "0.169.0", max_bytes=11_500),
    # 40,000 characters with its 41-character wrapper (39,959 of text kept, 39,960
    # cut to the first 8,000 and last 32,000); no line cap. Gemini CLI names its
    # client "gemini-cli-mcp-client" (older versions append "-<server>").
    ClientCap("gemini-cli-mcp-client", "Gemini CLI", "0.61.0", max_bytes=39_900),
    # 51,200 bytes and 2,000 pieces of text.split("\n") (so 1,999 newlines) kept;
    # past either it keeps the head.
    ClientCap("opencode", "opencode", "1.18.33", max_bytes=51_200, max_lines=1_999),
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
