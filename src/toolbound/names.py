"""How a found file's name is shown: whole, and always valid UTF-8.

A name is bytes on Linux and may hold a newline or bytes that are not UTF-8.
A valid UTF-8 name (newline included) is shown as it is. A name that is not
valid UTF-8 cannot be put in JSON as it is (Python's ``surrogateescape`` text
is not UTF-8), and U+FFFD would lose which bytes it held, so each byte that
does not decode is written ``\\xHH`` and, in such a name only, a backslash is
doubled; ``real_name`` undoes it. The result stays valid JSON, is plain to
read, and names one file.

Pieces:
    shown_name  path bytes -> the text the model sees
    real_name   that text -> the path bytes, when it was escaped
"""

from __future__ import annotations

import codecs
import re

_ESCAPE = re.compile(r"\\(\\|x[0-9a-f]{2})")


def _escape_bad_bytes(err: UnicodeError) -> tuple[str, int]:
    assert isinstance(err, UnicodeDecodeError)
    bad = err.object[err.start : err.end]
    return "".join(f"\\x{b:02x}" for b in bad), err.end


codecs.register_error("toolbound-hex", _escape_bad_bytes)


def shown_name(raw: bytes) -> str:
    """``raw`` decoded; when it is not UTF-8, bad bytes as ``\\xHH``, ``\\`` as ``\\\\``."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.replace(b"\\", b"\\\\").decode("utf-8", "toolbound-hex")


def real_name(shown: str) -> bytes | None:
    """The bytes ``shown_name`` escaped into ``shown``, or None if it escaped nothing."""
    if "\\" not in shown:
        return None
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(shown):
        out += shown[pos : m.start()].encode()
        token = m.group(1)
        out += b"\\" if token == "\\" else bytes([int(token[1:], 16)])
        pos = m.end()
    out += shown[pos:].encode()
    raw = bytes(out)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw
    return None
