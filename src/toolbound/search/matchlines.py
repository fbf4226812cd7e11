"""rg's content output read back whole: file names with newlines, giant lines, context.

Grep's second pass runs ``rg --null --line-number --column`` on files it names
itself, so every record is ``PATH\\0LINE:COLUMN:TEXT\\n`` (a match) or
``PATH\\0LINE-TEXT\\n`` (a context line). A path holds no NUL but may hold a
newline, so a record is read up to its NUL first and its path checked against
the names given to rg (a piece of a name is never mistaken for a file). The
text is read in pieces: of a line longer than the clip, only the bytes around
its first match are kept (``COLUMN`` is its byte offset), so a 10 MB minified
line costs a few KB and still shows its match.

Pieces:
    Record         one parsed record: path, line, context or not, its text window
    read_records   a stream of rg output -> Records, memory bounded per line
    read_counts    a stream of rg ``--count`` output -> (path, count) pairs
    match_window   pure: the ``max_chars`` window of a line holding its match
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterator
from dataclasses import dataclass
from typing import IO

# "LINE:COLUMN:" (a match) or "LINE-" (a context line) after the NUL.
_HEAD = re.compile(rb"(\d+)(?::(\d+):|-)")
# UTF-8 encodes a character in at most this many bytes.
_MAX_CHAR_BYTES = 4
# The longest path a record may start with (Linux PATH_MAX), so a stray line
# of output is never accumulated without bound.
_MAX_PATH_BYTES = 4096
# Room for the path and the line number before a line's text.
_PREFIX_ROOM_BYTES = 8192
# Every byte value but UTF-8's continuation bytes (deleted to count those).
_NOT_CONTINUATION = bytes(b for b in range(256) if not 0x80 <= b < 0xC0)


@dataclass(frozen=True, slots=True)
class Record:
    path: bytes
    line: int
    context: bool
    text: str
    clipped: bool
    # The 1-based character offset in the line where ``text`` starts, when not 1.
    column: int | None = None


def match_window(
    before: bytes, rest: bytes, *, from_start: bool, to_end: bool, max_chars: int
) -> tuple[str, bool, int]:
    """The ``max_chars`` characters of a line that hold its first match, whether clipped,
    and how many characters of ``before`` the window leaves out at its start.

    ``before`` are the bytes of the line just before the match and ``rest`` the
    bytes from the match on; ``from_start``/``to_end`` say whether they reach
    the line's start/end. A match that starts within the first three quarters
    of the clip keeps the line's head (the plain clip); a later one is shown
    with a quarter of the window before it, more when the line ends sooner.
    Cuts fall on character boundaries (a partial UTF-8 sequence at a cut edge
    is dropped).
    """
    if not from_start:
        before = _from_char_start(before)
    if not to_end:
        rest = _to_char_end(rest)
    head = before.decode("utf-8", "replace")
    tail = rest.decode("utf-8", "replace")
    if from_start and to_end and len(head) + len(tail) <= max_chars:
        return head + tail, False, 0
    if from_start and len(head) <= max_chars * 3 // 4:
        return (head + tail)[:max_chars], True, 0
    lead = max_chars // 4
    if to_end and len(tail) < max_chars - lead:
        lead = max_chars - len(tail)
    lead = min(lead, len(head))
    return (head[len(head) - lead :] + tail)[:max_chars], True, len(head) - lead


def _continuation_bytes(data: bytes) -> int:
    """How many bytes of ``data`` continue a UTF-8 character (0b10xxxxxx)."""
    return 0 if data.isascii() else len(data.translate(None, _NOT_CONTINUATION))


def _from_char_start(data: bytes) -> bytes:
    i = 0
    while i < len(data) and i < _MAX_CHAR_BYTES and 0x80 <= data[i] < 0xC0:
        i += 1
    return data[i:]


def _to_char_end(data: bytes) -> bytes:
    # Drop a trailing sequence the cut left incomplete.
    for back in range(1, min(_MAX_CHAR_BYTES, len(data)) + 1):
        b = data[-back]
        if b < 0x80:
            return data
        if b >= 0xC0:
            need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
            return data if back >= need else data[:-back]
    return data


class _Window:
    """Keeps the bytes of one line that lie within ``reach`` bytes of its match."""

    def __init__(self, match_at: int, reach: int) -> None:
        self.lo = max(0, match_at - reach)
        self.match_at = match_at
        self.hi = match_at + reach
        self.pos = 0
        self.kept = bytearray()
        self.ended = False
        # Characters (UTF-8 lead bytes) of the line before ``lo``, which is not kept.
        self.skipped_chars = 0

    def feed(self, piece: bytes) -> None:
        start, end = self.pos, self.pos + len(piece)
        if start < self.lo:
            skipped = piece[: self.lo - start]
            self.skipped_chars += len(skipped) - _continuation_bytes(skipped)
        if end > self.lo and start < self.hi:
            self.kept += piece[max(0, self.lo - start) : self.hi - start]
        self.pos = end

    def result(self, max_chars: int) -> tuple[str, bool, int]:
        """The window's text, whether it was clipped, and the 1-based character
        column in the line where it starts."""
        kept = bytes(self.kept)
        to_end = self.pos <= self.hi
        if to_end:
            # The line ending the last piece carried is not part of the text.
            kept = kept.removesuffix(b"\n").removesuffix(b"\r")
        split = min(self.match_at, self.pos) - self.lo
        text, clipped, left_out = match_window(
            kept[:split],
            kept[split:],
            from_start=self.lo == 0,
            to_end=to_end,
            max_chars=max_chars,
        )
        return text, clipped, 1 + self.skipped_chars + left_out


def read_records(stream: IO[bytes], *, paths: Container[bytes], max_chars: int) -> Iterator[Record]:
    """Parse rg's ``--null --line-number --column`` output for the files ``paths``."""
    room = _MAX_CHAR_BYTES * max_chars + _PREFIX_ROOM_BYTES
    reach = _MAX_CHAR_BYTES * max_chars
    while raw := stream.readline(room):
        # A name with a newline arrives in pieces: gather up to the NUL.
        while b"\0" not in raw and len(raw) < _MAX_PATH_BYTES:
            more = stream.readline(room)
            if not more:
                break
            raw += more
        nul = raw.find(b"\0")
        if nul < 0:
            continue  # not a record (e.g. a note about a binary file)
        path = raw[:nul]
        while path not in paths and b"\n" in path:
            path = path.split(b"\n", 1)[1]  # a stray line came before the record
        head = _HEAD.match(raw, nul + 1)
        if path not in paths or head is None:
            if not raw.endswith(b"\n"):
                _skip_line(stream, room)
            continue
        column = head.group(2)
        window = _Window(int(column) - 1 if column else 0, reach)
        window.feed(raw[head.end() :])
        while not raw.endswith(b"\n"):
            raw = stream.readline(room)
            if not raw:
                break
            window.feed(raw)
        text, clipped, at = window.result(max_chars)
        yield Record(
            path, int(head.group(1)), column is None, text, clipped, at if at > 1 else None
        )


def _skip_line(stream: IO[bytes], room: int) -> None:
    while piece := stream.readline(room):
        if piece.endswith(b"\n"):
            return


def read_counts(stream: IO[bytes], *, paths: Container[bytes]) -> Iterator[tuple[bytes, int]]:
    """Parse rg's ``--null --count`` output (``PATH\\0COUNT\\n``) for the files ``paths``."""
    pending = b""
    for raw in stream:
        raw = pending + raw
        nul = raw.find(b"\0")
        if nul < 0:
            pending = raw if len(raw) < _MAX_PATH_BYTES else b""
            continue
        pending = b""
        path = raw[:nul]
        while path not in paths and b"\n" in path:
            path = path.split(b"\n", 1)[1]
        count = raw[nul + 1 :].strip()
        if path in paths and count.isdigit():
            yield path, int(count)
