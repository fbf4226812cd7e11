"""What a terminal would show: rewrites collapsed, styling removed, on text.

A progress bar is one line rewritten thousands of times (``\\r``, or an
erase-line sequence, or a cursor move up over the lines it drew). A terminal
shows only the last state of each line, so 9 MB of pip, tqdm, npm or docker
progress is a few lines on screen; this module computes that screen for the
model text. The chunks and the store keep the bytes as they came: only what
the model reads is collapsed.

The model of a terminal is deliberately small, and every choice keeps text
rather than loses it:

- A line is the text last written on each of its cells: ``\\r`` returns to
  column 0 and later text overwrites cell by cell, as on a screen (write
  ``50%\\rdone`` and the line shows ``done``; write ``progress\\rok`` and it
  shows ``okogress``). ``\\b`` steps one cell back. One code point is one cell
  (wide characters are not measured; a tab is one cell).
- ``\\n`` ends a line and ``\\r\\n`` is a line ending too, kept as written (not
  a rewrite): text without control characters passes through unchanged.
- Erase in line (``CSI K``, ``0K``, ``1K``, ``2K``) blanks cells; blank cells
  at a line's end are not text. Erase below (``CSI J``, ``0J``) blanks the rest
  of the screen. Clearing the whole screen (``1J``, ``2J``, ``3J``) and
  absolute positioning (``H``, ``f``, ``d``) are dropped without effect: the
  text stays, as a scrollback would keep it.
- The cursor moves up (``CSI nA``, ``nF``, ``ESC M``), down (``nB``, ``nE``),
  left and right (``nD``, ``nC``), to a column (``nG``), and is saved and
  restored (``ESC 7``/``ESC 8``, ``CSI s``/``CSI u``), within the last
  ``max_rows`` lines: older lines are final, which bounds memory by those
  rows (and the line being written), never by the stream.
- Styling (SGR ``CSI ... m``), OSC sequences (hyperlinks ``ESC ]8;;url ST``,
  titles), DCS/APC strings and every other sequence that does not move the
  cursor are removed, leaving the text they decorated.

Both functions count what they removed, in UTF-8 bytes, for the context
ledger's ``elidedBytes``: ``styling_bytes`` (escape sequences that do not move
the cursor) and ``collapsed_bytes`` (everything else the input held that the
screen does not show: overwritten and erased text, ``\\r``, cursor moves).

Pieces:
    Shown               the text shown, and the bytes removed to get it
    strip_styling       text -> Shown: styling out, rewrites and cursor moves kept
    collapse            text -> Shown: the final screen, styling out
    TerminalCollapser   the same for a stream fed in chunks: feed() / finish()
    MAX_ROWS            how many lines back a cursor move can reach
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from toolbound.bounds.utf8 import utf8_len

# A terminal screen is rarely taller than this; docker and compose redraw at
# most one line per build step or service, far fewer.
MAX_ROWS = 200

# Longest OSC / DCS / APC string taken as one sequence. A longer one (an ESC ]
# that never ends) is not a sequence: its text is shown, never swallowed.
MAX_STRING_SEQUENCE_CHARS = 4096

_N = MAX_STRING_SEQUENCE_CHARS
_TOKEN = re.compile(
    r"\r\n|\r|\n|\x08"
    r"|\x1b\[[0-?]{0,64}[ -/]{0,8}[@-~]"  # CSI: parameters, intermediates, final
    rf"|\x1b[\]PX^_][^\x07\x1b]{{0,{_N}}}(?:\x07|\x1b\\)"  # OSC, DCS, SOS, PM, APC
    r"|\x1b[ -/]{0,8}[0-~]"  # ESC, intermediates, a final: ESC ( B, ESC 7, ESC M
    r"|\x1b"  # an ESC that starts no sequence: dropped
)
# The tail of a chunk that may be the start of a longer token.
_OPEN_STRING = re.compile(rf"\x1b[\]PX^_][^\x07\x1b]{{0,{_N}}}\x1b?")
_OPEN_OTHER = re.compile(r"\x1b(?:\[[0-?]{0,64}[ -/]{0,8}|[ -/]{0,8})")
_CONTROLS = re.compile(r"[\r\x08\x1b]")

# Final bytes of CSI sequences that move the cursor or erase (the rest is styling).
_CURSOR_FINALS = frozenset("ABCDEFGKJHfdsu")
# ESC sequences that move the cursor: save, restore, reverse index.
_CURSOR_ESCAPES = frozenset(("\x1b7", "\x1b8", "\x1bM"))


@dataclass(frozen=True, slots=True)
class Shown:
    """The text a terminal shows, and the UTF-8 bytes of the input it removed.

    ``collapsed_bytes`` is input bytes neither shown nor styling: input minus
    styling minus shown, floored at zero (a cursor move right can pad a line
    with blanks it never received).
    """

    text: str
    styling_bytes: int
    collapsed_bytes: int

    @property
    def elided_bytes(self) -> int:
        """Everything removed: what the ledger records as ``elidedBytes``."""
        return self.styling_bytes + self.collapsed_bytes


def _moves_cursor(token: str) -> bool:
    if token.startswith("\x1b["):
        return token[-1] in _CURSOR_FINALS
    return token in _CURSOR_ESCAPES or not token.startswith("\x1b")


def strip_styling(text: str) -> Shown:
    """``text`` without styling sequences; ``\\r``, ``\\b`` and cursor moves stay.

    Use it where the rewrites themselves matter; :func:`collapse` also removes
    styling.
    """
    if "\x1b" not in text:
        return Shown(text, 0, 0)
    kept: list[str] = []
    styling = 0
    at = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        kept.append(text[at : match.start()])
        at = match.end()
        if _moves_cursor(token):
            kept.append(token)
        else:
            styling += utf8_len(token)
    kept.append(text[at:])
    return Shown("".join(kept), styling, 0)


def collapse(text: str, *, max_rows: int = MAX_ROWS) -> Shown:
    """The screen a terminal shows after ``text``, styling removed (module docstring)."""
    collapser = TerminalCollapser(max_rows=max_rows)
    shown = collapser.feed(text) + collapser.finish()
    return Shown(shown, collapser.styling_bytes, collapser.collapsed_bytes)


class _Row:
    """One screen line: its text (cells past the end are blank) and its ending."""

    __slots__ = ("ending", "parts", "text")

    def __init__(self) -> None:
        self.text = ""
        # Appends at the end of the line wait here, so a line built from many
        # small writes is joined once, not copied on every write.
        self.parts: list[str] = []
        self.ending = ""

    def value(self) -> str:
        if self.parts:
            self.text += "".join(self.parts)
            self.parts.clear()
        return self.text

    def width(self) -> int:
        return len(self.text) + sum(map(len, self.parts))

    def write(self, col: int, run: str) -> int:
        """Write ``run`` from column ``col``; the column after it."""
        width = self.width()
        if col == width:
            self.parts.append(run)
        else:
            text = self.value()
            if col > width:
                text += " " * (col - width)
            self.text = text[:col] + run + text[col + len(run) :]
        return col + len(run)

    def erase(self, mode: int, col: int) -> None:
        """Erase in line: 0 from the cursor to the end, 1 from the start through
        the cursor, 2 the whole line."""
        text = self.value()
        if mode == 0:
            self.text = text[:col]
        elif mode == 2 or (mode == 1 and col + 1 >= len(text)):
            self.text = ""
        elif mode == 1:
            self.text = " " * (col + 1) + text[col + 1 :]


class TerminalCollapser:
    """:func:`collapse` for a stream: ``feed`` chunks, then ``finish`` once.

    ``feed`` returns the lines that became final (no cursor move can reach
    them any more), ``finish`` the rest of the screen; their concatenation is
    ``collapse`` of the whole stream, however it was split. A chunk may end
    inside an escape sequence or between ``\\r`` and ``\\n``: that tail waits
    for the next chunk. The counts are complete after ``finish``.
    """

    def __init__(self, *, max_rows: int = MAX_ROWS) -> None:
        if max_rows < 1:
            raise ValueError("max_rows must be at least 1")
        self._max_rows = max_rows
        self._rows: list[_Row] = [_Row()]
        self._row = 0
        self._col = 0
        self._saved = (0, 0)
        self._pending = ""
        self._final: list[str] = []
        self._in_bytes = 0
        self._shown_bytes = 0
        self.styling_bytes = 0

    @property
    def collapsed_bytes(self) -> int:
        """Input bytes neither shown nor styling (see :class:`Shown`)."""
        return max(0, self._in_bytes - self.styling_bytes - self._shown_bytes)

    def feed(self, text: str) -> str:
        """Take the next chunk; the text of the lines that became final."""
        self._in_bytes += utf8_len(text)
        text = self._pending + text
        self._pending = ""
        hold = _open_tail(text)
        if hold < len(text):
            self._pending = text[hold:]
            text = text[:hold]
        self._run(text)
        return self._take_final()

    def finish(self) -> str:
        """The rest of the screen. A sequence the stream left unfinished is dropped."""
        self._pending = ""
        rows = self._rows
        last = self._row
        for index in range(len(rows) - 1, self._row, -1):
            if rows[index].value():
                last = index
                break
        for index in range(last + 1):
            row = rows[index]
            text = row.value()
            # The last line shown ends where its text does, unless text follows.
            ending = row.ending if index < last or text else ""
            self._final.append(text + ending)
        self._rows = [_Row()]
        self._row = self._col = 0
        return self._take_final()

    def _take_final(self) -> str:
        if not self._final:
            return ""
        out = "".join(self._final)
        self._final.clear()
        self._shown_bytes += utf8_len(out)
        return out

    def _run(self, text: str) -> None:
        if not _CONTROLS.search(text):
            self._plain(text)
            return
        at = 0
        for match in _TOKEN.finditer(text):
            if match.start() > at:
                self._write(text[at : match.start()])
            at = match.end()
            self._control(match.group())
        if at < len(text):
            self._write(text[at:])

    def _plain(self, text: str) -> None:
        """Text whose only control is ``\\n``: written line by line."""
        lines = text.split("\n")
        for index, line in enumerate(lines):
            if index:
                self._newline("\n")
            if line:
                self._write(line)

    def _write(self, run: str) -> None:
        self._col = self._rows[self._row].write(self._col, run)

    def _newline(self, ending: str) -> None:
        rows = self._rows
        rows[self._row].ending = ending
        self._col = 0
        if self._row + 1 < len(rows):
            self._row += 1
            return
        rows.append(_Row())
        self._row += 1
        if len(rows) > self._max_rows:
            row = rows.pop(0)
            self._final.append(row.value() + row.ending)
            self._row -= 1
            self._saved = (max(0, self._saved[0] - 1), self._saved[1])

    def _control(self, token: str) -> None:
        if token in ("\n", "\r\n"):
            self._newline(token)
        elif token == "\r":
            self._col = 0
        elif token == "\x08":
            self._col = max(0, self._col - 1)
        elif token.startswith("\x1b[") and token[-1] in _CURSOR_FINALS:
            self._csi(token)
        elif token == "\x1b7":
            self._saved = (self._row, self._col)
        elif token == "\x1b8":
            self._row, self._col = self._saved
        elif token == "\x1bM":
            self._row = max(0, self._row - 1)
        else:
            self.styling_bytes += utf8_len(token)

    def _csi(self, token: str) -> None:
        final = token[-1]
        params = token[2:-1].lstrip("?")
        first = params.split(";", 1)[0]
        number = int(first) if first.isdigit() else 0
        count = max(number, 1)
        last_row = len(self._rows) - 1
        if final in "AF":
            self._row = max(0, self._row - count)
        elif final in "BE":
            self._row = min(last_row, self._row + count)
        if final in "EF":
            self._col = 0
        elif final == "C":
            self._col += count
        elif final == "D":
            self._col = max(0, self._col - count)
        elif final == "G":
            self._col = count - 1
        elif final == "K":
            self._rows[self._row].erase(number, self._col)
        elif final == "J" and number == 0:
            self._rows[self._row].erase(0, self._col)
            for row in self._rows[self._row + 1 :]:
                row.erase(2, 0)
        elif final == "s":
            self._saved = (self._row, self._col)
        elif final == "u":
            self._row, self._col = self._saved
            self._row = min(self._row, last_row)


def _open_tail(text: str) -> int:
    """Where the part of ``text`` that a later chunk could extend starts
    (``len(text)`` when none could): an open sequence, else a last ``\r`` (which
    a ``\n`` may follow). The sequence is looked for first: an OSC string holds
    any ``\r`` it has taken in, so a chunk that ends inside one holds from its
    ESC, as the whole text would."""
    hold = _open_sequence(text)
    if hold == len(text) and text.endswith("\r"):
        return len(text) - 1
    return hold


def _open_sequence(text: str) -> int:
    """Where an escape sequence that a later chunk could finish starts, else ``len(text)``."""
    esc = text.rfind("\x1b", max(0, len(text) - MAX_STRING_SEQUENCE_CHARS - 3))
    if esc < 0:
        return len(text)
    if esc == len(text) - 1:
        # A lone ESC at the end may be the first half of an OSC's ESC \ terminator.
        start = text.rfind("\x1b", max(0, esc - MAX_STRING_SEQUENCE_CHARS - 2), esc)
        if start >= 0 and _OPEN_STRING.fullmatch(text, start):
            return start
        return esc
    if _OPEN_STRING.fullmatch(text, esc) or _OPEN_OTHER.fullmatch(text, esc):
        return esc
    return len(text)
