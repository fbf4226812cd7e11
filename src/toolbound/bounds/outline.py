"""The definitions a cut window did not show: a structure-aware pointer past it.

When the economy profile's Read window stops before the end of a source file,
the model often wants one definition further on (the class or function it
came for) and pages towards it window by window. The outline names the
top-level definitions after the window with their line numbers, so one Read
with the right offset reaches it: the window's cut stays as it was (marked,
the next offset named); the outline only says where things are.

A definition is a line that starts at column 0 with a defining keyword of a
common language (Python ``def``/``class``, JavaScript/TypeScript
``function``/``class``/``export``, Go ``func``/``type``, Rust ``fn``/``struct``/
``impl``..., C-family ``struct``/``enum``). Indented definitions (methods) are
left out: the top level is what a file's outline is.

Pieces:
    Definition  one line of the outline: its number and its text
    Outline     the definitions kept, and how many more there were
    outline     the top-level definitions of some bytes of a file
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Keywords at column 0 that begin a top-level definition, optionally after
# ``export``/``pub``/``async`` style qualifiers.
_DEFINITION = re.compile(
    rb"^(?:(?:export|default|pub(?:\([^)\n]*\))?|async|abstract|public|static)[ \t]+)*"
    rb"(?:def|class|function\*?|func|fn|struct|enum|trait|impl|interface|type|module|mod)"
    rb"\b[^\n]*",
    re.MULTILINE,
)


@dataclass(frozen=True, slots=True)
class Definition:
    """A definition's 1-based line number and its line (clipped, right-stripped)."""

    line: int
    text: str


@dataclass(frozen=True, slots=True)
class Outline:
    """The first ``max_entries`` definitions found, and how many more followed."""

    entries: tuple[Definition, ...]
    more: int = 0


def outline(data: bytes, *, first_line: int, max_entries: int, max_line_chars: int) -> Outline:
    """The top-level definitions in ``data``, whose first line is line ``first_line``.

    ``data`` should start at a line's start; a last line without its newline
    counts as a line. Each definition's text is its line clipped at
    ``max_line_chars`` characters (an ellipsis marks a clipped one); invalid
    UTF-8 shows as U+FFFD.
    """
    entries: list[Definition] = []
    more = 0
    line = first_line
    at = 0
    for found in _DEFINITION.finditer(data):
        start = found.start()
        line += data.count(b"\n", at, start)
        at = start
        if len(entries) >= max_entries:
            more += 1
            continue
        text = found.group().decode("utf-8", "replace").rstrip()
        if len(text) > max_line_chars:
            text = text[: max_line_chars - 1] + "…"
        entries.append(Definition(line, text))
    return Outline(tuple(entries), more)
