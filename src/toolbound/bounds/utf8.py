"""UTF-8 sizes and character boundaries, for every cut in ``bounds/`` and its callers.

Pieces:
    utf8_len      a text's size in UTF-8 bytes (ASCII: its length, no encoding)
    prefix_end    the largest character boundary at or before an offset of UTF-8 bytes
    suffix_start  the smallest character boundary at or after one
"""

from __future__ import annotations


def utf8_len(text: str) -> int:
    """``text``'s UTF-8 size; a lone surrogate counts as the 3 bytes it encodes to."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def prefix_end(data: bytes | bytearray | memoryview, end: int) -> int:
    """The largest char boundary <= ``end``: back off over at most 3 continuation bytes."""
    for _ in range(3):
        if 0 < end < len(data) and data[end] & 0xC0 == 0x80:
            end -= 1
    return end


def suffix_start(data: bytes | bytearray | memoryview, start: int) -> int:
    """The smallest char boundary >= ``start``: skip at most 3 continuation bytes."""
    for _ in range(3):
        if 0 < start < len(data) and data[start] & 0xC0 == 0x80:
            start += 1
    return start
