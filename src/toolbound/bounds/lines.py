"""Line clipping at MAX_LINE_CHARS, for Read's pages (seed priority rule 4).

Clipping counts characters (code points), so it never splits a UTF-8
character (Grep clips around a match instead: search/matchlines.py). The
caller passes a line's body: its ending (``\\n`` or ``\\r\\n``) is not part
of its length and is kept by the caller.

Pieces:
    clip_line   one line body -> (clipped body, was it clipped)
"""

from __future__ import annotations


def clip_line(body: str, max_chars: int) -> tuple[str, bool]:
    """Keep the first ``max_chars`` characters of a line body."""
    if len(body) <= max_chars:
        return body, False
    return body[:max_chars], True
