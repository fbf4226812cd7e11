"""Line clipping at MAX_LINE_CHARS, for Read and Grep (seed priority rule 4).

Clipping counts characters (code points), so it never splits a UTF-8
character. A line's ending (``\\n`` or ``\\r\\n``) is not part of its length
and survives the clip, so a clipped window keeps its line structure.

Pieces:
    split_eol   a line -> (body, ending)
    clip_line   one line body -> (clipped body, was it clipped)
    clip_lines  many lines -> (clipped lines, how many were clipped)
"""

from __future__ import annotations

from collections.abc import Iterable


def split_eol(line: str) -> tuple[str, str]:
    """Split a line into its body and its ending (``\\r\\n``, ``\\n`` or none)."""
    if line.endswith("\r\n"):
        return line[:-2], "\r\n"
    if line.endswith("\n"):
        return line[:-1], "\n"
    return line, ""


def clip_line(body: str, max_chars: int) -> tuple[str, bool]:
    """Keep the first ``max_chars`` characters of a line body."""
    if len(body) <= max_chars:
        return body, False
    return body[:max_chars], True


def clip_lines(lines: Iterable[str], max_chars: int) -> tuple[list[str], int]:
    """Clip every line (endings kept) and count the clipped ones."""
    out: list[str] = []
    clipped = 0
    for line in lines:
        if len(line) <= max_chars:
            out.append(line)
            continue
        body, eol = split_eol(line)
        body, was = clip_line(body, max_chars)
        clipped += was
        out.append(body + eol)
    return out, clipped
