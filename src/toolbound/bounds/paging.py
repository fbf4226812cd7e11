"""Read's window, as pure functions over bytes: what a page of a file shows.

A file is a sequence of lines, each ending in ``\\n`` (kept as ``\\n`` or
``\\r\\n``) except perhaps the last. A page is the lines from ``offset`` on,
stopping at the line limit or the byte budget (whole lines only), whichever
comes first. Lines longer than MAX_LINE_CHARS characters are clipped (ending
kept); bytes that are not UTF-8 become U+FFFD and are counted. Nothing here
opens a file: bytes come from a ``read_at(position, size)`` callable, so every
rule is testable on a ``bytes`` value.

A line is never held whole: only its first ``head_bytes_for(max_line_chars)``
bytes are kept, enough for MAX_LINE_CHARS characters however they are encoded,
and the rest is scanned with ``bytes.find`` and dropped. A page therefore
costs O(window) memory even when one line is a gigabyte.

Pieces:
    RawLine          a line's first bytes, its full length and its ending
    head_bytes_for   how many bytes of a line are enough to clip it
    iter_raw_lines   read_at + byte range -> RawLine stream (memchr-speed scan)
    decode_counting  UTF-8 -> text, with the positions and sizes of bad bytes
    Page, build_page RawLine stream + limits -> the window's text and counts
    quick_page       the same page from one buffer, when no line needs repair
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from toolbound.bounds.lines import clip_line
from toolbound.bounds.newlines import count_newlines, nth_newline

ReadAt = Callable[[int, int], bytes]
"""``read_at(position, size)``: up to ``size`` bytes at ``position``; fewer only at the end."""

_UTF8_MAX_BYTES = 4


@dataclass(frozen=True, slots=True)
class RawLine:
    """One line of a file, without holding it whole.

    ``head`` is the first bytes of the line's body (at most the reader's
    ``head_bytes``); ``body_bytes`` is the body's full length; ``eol`` is the
    ending that followed it: ``b"\\r\\n"``, ``b"\\n"`` or ``b""`` (last line).
    """

    head: bytes
    body_bytes: int
    eol: bytes

    @property
    def raw_bytes(self) -> int:
        """The line's size in the file, ending included."""
        return self.body_bytes + len(self.eol)


def head_bytes_for(max_line_chars: int) -> int:
    """Bytes of a line that always decode to more than ``max_line_chars`` characters.

    A character takes at most 4 UTF-8 bytes (an invalid byte becomes one
    U+FFFD), so ``4 * max_line_chars`` bytes hold the first ``max_line_chars``
    characters; 4 more keep a character cut at the end of the head out of them.
    """
    return _UTF8_MAX_BYTES * (max_line_chars + 1)


def _line(head: bytes, length: int, last_byte: int, *, ended: bool) -> RawLine:
    """A RawLine from a body seen up to its newline (``ended``) or up to the end."""
    if ended and length > 0 and last_byte == 0x0D:
        return RawLine(head[: length - 1], length - 1, b"\r\n")
    return RawLine(head, length, b"\n" if ended else b"")


def iter_raw_lines(
    read_at: ReadAt, start: int, end: int, *, head_bytes: int, chunk_bytes: int
) -> Iterator[RawLine]:
    """The lines of bytes ``start..end``, read lazily ``chunk_bytes`` at a time.

    ``start`` must be a line start. Reading stops at ``end`` (the file size
    when it was opened) or earlier if ``read_at`` comes back short (the file
    shrank). A line longer than ``head_bytes`` is scanned for its newline
    chunk by chunk and only its head is kept.
    """
    pos = start
    buf = b""
    i = 0
    while True:
        nl = buf.find(b"\n", i)
        if nl >= 0:
            body_end = min(nl, i + head_bytes)
            yield _line(buf[i:body_end], nl - i, buf[nl - 1] if nl > i else 0, ended=True)
            i = nl + 1
            continue
        rest = buf[i:]
        chunk = read_at(pos, min(chunk_bytes, end - pos)) if pos < end else b""
        pos += len(chunk)
        if not chunk:
            if rest:
                yield _line(rest[:head_bytes], len(rest), 0, ended=False)
            return
        if len(rest) <= head_bytes:
            buf, i = rest + chunk, 0
            continue
        # A long line: keep its head, scan the rest for the newline and drop it.
        head, length = rest[:head_bytes], len(rest)
        while True:
            nl = chunk.find(b"\n")
            if nl >= 0:
                length += nl
                last = chunk[nl - 1] if nl > 0 else rest[-1]
                yield _line(head, length, last, ended=True)
                buf, i = chunk, nl + 1
                break
            length += len(chunk)
            rest = chunk
            chunk = read_at(pos, min(chunk_bytes, end - pos)) if pos < end else b""
            pos += len(chunk)
            if not chunk:
                yield _line(head, length, 0, ended=False)
                return


def decode_counting(data: bytes) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Decode UTF-8 like ``errors="replace"``, and say where bytes were replaced.

    Returns the text and, for every U+FFFD that stands for bad bytes, its
    character index and how many bytes it replaced. Valid input costs one
    decode.
    """
    try:
        return data.decode("utf-8"), ()
    except UnicodeDecodeError:
        pass
    parts: list[str] = []
    bad: list[tuple[int, int]] = []
    chars = 0
    at = 0
    while at < len(data):
        try:
            text = data[at:].decode("utf-8")
        except UnicodeDecodeError as err:
            text = data[at : at + err.start].decode("utf-8")
            parts.append(text)
            chars += len(text)
            bad.append((chars, err.end - err.start))
            parts.append("\ufffd")
            chars += 1
            at += err.end
            continue
        parts.append(text)
        break
    return "".join(parts), tuple(bad)


Stop = Literal["limit", "budget", "eof"]


@dataclass(frozen=True, slots=True)
class Page:
    """A window of lines, as the model sees it, and what shaped it.

    ``stop`` is what ended the window: the line ``limit``, the byte
    ``budget`` (the next line did not fit), or ``eof`` (no more lines).
    ``raw_bytes`` is the file bytes the window's lines occupy, so the next
    line starts ``raw_bytes`` after the first.
    """

    text: str
    line_count: int
    raw_bytes: int
    clipped_lines: int
    replaced_bytes: int
    stop: Stop


def _render(line: RawLine, max_line_chars: int) -> tuple[str, bool, int]:
    """A line's text (clipped, ending kept), whether it was clipped, bytes replaced."""
    text, bad = decode_counting(line.head)
    body, clipped = clip_line(text, max_line_chars)
    # A head shorter than the body always holds more than max_line_chars characters.
    clipped = clipped or line.body_bytes > len(line.head)
    replaced = sum(size for at, size in bad if at < len(body))
    return body + line.eol.decode("ascii"), clipped, replaced


def _fit(text: str, eol: str, max_bytes: int) -> str:
    """The longest char-safe prefix of a line body that fits ``max_bytes`` with its ending."""
    room = max(0, max_bytes - len(eol))
    body = text[: len(text) - len(eol)] if eol else text
    return body.encode("utf-8")[:room].decode("utf-8", "ignore") + eol


def build_page(
    lines: Iterator[RawLine], *, max_lines: int, max_bytes: int, max_line_chars: int
) -> Page:
    """Take whole lines until ``max_lines`` lines or ``max_bytes`` UTF-8 bytes.

    The first line always goes in: if even clipped to ``max_line_chars`` it
    exceeds ``max_bytes`` (only possible with custom limits), a char-safe
    prefix that fits is kept and counted as clipped, never an empty page.
    At most one line past the window is pulled from ``lines`` (the one that
    did not fit).
    """
    parts: list[str] = []
    size = raw = clipped = replaced = 0
    stop: Stop = "limit"
    while len(parts) < max_lines:
        line = next(lines, None)
        if line is None:
            stop = "eof"
            break
        text, was_clipped, bad = _render(line, max_line_chars)
        n = len(text.encode("utf-8"))
        if size + n > max_bytes:
            if parts:
                stop = "budget"
                break
            text, was_clipped = _fit(text, line.eol.decode("ascii"), max_bytes), True
            n = len(text.encode("utf-8"))
        parts.append(text)
        size += n
        raw += line.raw_bytes
        clipped += was_clipped
        replaced += bad
    return Page("".join(parts), len(parts), raw, clipped, replaced, stop)


def quick_page(
    buf: bytes, *, at_eof: bool, max_lines: int, max_bytes: int, max_line_chars: int
) -> Page | None:
    """The common page in a few C-level passes, or None to build it line by line.

    ``buf`` holds the file from the window's first line on (``at_eof``: up to
    the end of the file). The answer is :func:`build_page`'s whenever it is
    not None: it applies when the window is valid UTF-8 with no line over
    ``max_line_chars`` bytes (so nothing is clipped or replaced and text bytes
    equal file bytes), and a budget stop is certain (the next line is in
    ``buf`` and too short to be clipped into the budget).
    """
    nl = nth_newline(buf, max_lines) if buf else -1
    stop: Stop
    if 0 <= nl < max_bytes:
        end, stop = nl + 1, "limit"
    elif at_eof and len(buf) <= max_bytes:
        end, stop = len(buf), "eof"
    else:
        end, stop = buf.rfind(b"\n", 0, max_bytes) + 1, "budget"
        next_nl = buf.find(b"\n", end)
        if next_nl < 0 and not at_eof:
            return None
        next_len = (next_nl if next_nl >= 0 else len(buf)) - end
        if end == 0 or next_len > max_line_chars:
            return None
    window = buf[:end]
    try:
        text = window.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if end > max_line_chars and max(map(len, window.split(b"\n"))) > max_line_chars:
        return None
    lines = count_newlines(window) + (0 if not window or window.endswith(b"\n") else 1)
    if lines == max_lines:
        stop = "limit"  # as build_page says: the limit ended it, whatever follows
    return Page(text, lines, end, 0, 0, stop)
