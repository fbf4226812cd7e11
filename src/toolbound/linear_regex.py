"""Regular expressions an agent hands us, matched in linear time (RE2), never by backtracking.

Python's ``re`` backtracks: ``(a+)+$`` against a line of a's, or a glob with a
dozen stars against a long name, never answers. Every pattern that comes from
an agent outside ripgrep (whose engine is already linear) is compiled here
instead, with google-re2: its syntax is Python's without backreferences and
look-around, and its match time is linear in the text. A pattern RE2 cannot
compile raises ``PatternError`` with RE2's reason; the caller names the
argument in a TOOL_INVALID_PATTERN.

RE2 is imported on first use, so a call that hands us no pattern never loads it.

Pieces:
    LinearRegex       a compiled pattern: ``search(data)`` / ``fullmatch(data)`` on bytes
    compile_lines     a UTF-8 pattern with ``^`` and ``$`` at each line (JobOutput's ``until``)
    compile_bytes     a byte pattern, ``.`` matching a newline too (a translated glob)
    PatternError      what RE2 said about a pattern it cannot compile
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable


class PatternError(ValueError):
    """RE2 cannot compile the pattern; the message is RE2's reason."""


@dataclass(frozen=True, slots=True)
class LinearRegex:
    """A pattern compiled by RE2; offsets are byte offsets into the searched bytes."""

    pattern: str | bytes
    _search: Callable[[bytes], Any]
    _fullmatch: Callable[[bytes], Any]

    def search(self, data: bytes) -> tuple[int, int] | None:
        """The span of the leftmost match in ``data``, or None."""
        found = self._search(data)
        return None if found is None else found.span()

    def fullmatch(self, data: bytes) -> bool:
        return self._fullmatch(data) is not None


def compile_lines(pattern: str) -> LinearRegex:
    """``pattern`` (UTF-8, Python-like syntax) with ``^`` and ``$`` matching at each line."""
    return _compile(pattern, "(?m)" + pattern, latin1=False)


def compile_bytes(source: bytes) -> LinearRegex:
    """``source`` on raw bytes (each byte one character), ``.`` matching ``\\n`` too."""
    return _compile(source, source, latin1=True)


def _compile(shown: str | bytes, source: str | bytes, *, latin1: bool) -> LinearRegex:
    import re2  # imported here: only a call with a pattern pays for it

    options = re2.Options()
    options.log_errors = False
    if latin1:
        options.encoding = re2.Options.Encoding.LATIN1
        options.dot_nl = True
    try:
        compiled = re2.compile(source, options)
    except re2.error as err:
        raise PatternError(_reason(err, shown, source)) from None
    return LinearRegex(shown, compiled.search, compiled.fullmatch)


def _reason(err: Exception, shown: str | bytes, source: str | bytes) -> str:
    """RE2's message as text, quoting the pattern as the agent wrote it."""
    said = err.args[0] if err.args else str(err)
    text = said.decode("utf-8", "replace") if isinstance(said, bytes) else str(said)
    if isinstance(shown, str) and isinstance(source, str) and source != shown:
        text = text.replace(source, shown)
    return text
