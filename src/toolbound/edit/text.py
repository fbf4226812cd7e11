"""Pure helpers on a file's bytes: a ``bytes`` value or a read-only mapping of the file.

Everything here works on ``bytes`` and ``mmap`` alike and never copies more
than one block of a large file at a time.

Pieces:
    Text            bytes or a mapping of the file
    BOM             the UTF-8 byte order mark
    Endings         a file's line-ending style: "crlf", "lf", "mixed" or "none"
    line_endings    the style of a whole buffer, stopping at the first mix
    to_crlf         every bare ``\\n`` as ``\\r\\n``
    has_bare_lf     whether bytes hold a ``\\n`` not preceded by ``\\r``
    count_newlines  ``\\n`` bytes in a span
    line_start, line_end   the line around a position
"""

from __future__ import annotations

import mmap
import re
from typing import Literal

Text = bytes | mmap.mmap
BOM = b"\xef\xbb\xbf"
Endings = Literal["crlf", "lf", "mixed", "none"]

# Large buffers are counted this much at a time (one block copied out of a mapping).
BLOCK_BYTES = 1024 * 1024
_BARE_LF = re.compile(rb"(?<!\r)\n")


def count_newlines(buf: Text, start: int = 0, end: int | None = None) -> int:
    """The number of ``\\n`` bytes in ``buf[start:end]``."""
    stop = len(buf) if end is None else min(end, len(buf))
    total = 0
    for at in range(start, stop, BLOCK_BYTES):
        total += buf[at : min(at + BLOCK_BYTES, stop)].count(b"\n")
    return total


def line_endings(buf: Text) -> Endings:
    """``crlf`` when every ``\\n`` follows a ``\\r``, ``lf`` when none does, ``mixed``
    otherwise, ``none`` without a newline. Stops at the first sign of a mix."""
    lf = crlf = 0
    for at in range(0, len(buf), BLOCK_BYTES):
        # One byte more, so a \r\n across the block's end is seen (and counted once).
        block = buf[at : at + BLOCK_BYTES + 1]
        lf += block.count(b"\n", 0, BLOCK_BYTES)
        crlf += block.count(b"\r\n")
        if crlf and lf != crlf:
            return "mixed"
    if not lf:
        return "none"
    return "crlf" if lf == crlf else "lf"


def has_bare_lf(data: bytes) -> bool:
    return _BARE_LF.search(data) is not None


def to_crlf(data: bytes) -> bytes:
    """Every ``\\n`` not already preceded by ``\\r`` written as ``\\r\\n``."""
    return _BARE_LF.sub(b"\r\n", data)


def line_start(buf: Text, pos: int) -> int:
    """Where the line holding byte ``pos`` starts."""
    return buf.rfind(b"\n", 0, pos) + 1


def line_end(buf: Text, pos: int) -> int:
    """Just past the end of the line holding byte ``pos`` (its ``\\n`` included)."""
    at = buf.find(b"\n", pos)
    return len(buf) if at < 0 else at + 1
