"""The pieces the views build a model text of (CONTRACT section 8).

Pieces:
    bracketed  a notice as ``[notice]``, nothing without one
    joined     the non-empty parts, each starting on a line of its own
    listing    lines, or the sentence for none, then the notice
    stream     a stream's text inside its ``<stdout>`` / ``<stderr>`` tags
"""

from __future__ import annotations

from collections.abc import Iterable


def bracketed(notice: str | None) -> str:
    return f"[{notice}]" if notice else ""


def joined(*parts: str) -> str:
    """The non-empty parts, each starting on a line of its own."""
    out = ""
    for part in parts:
        if not part:
            continue
        if out and not out.endswith("\n"):
            out += "\n"
        out += part
    return out


def listing(lines: Iterable[str], notice: str | None, *, empty: str) -> str:
    body = "\n".join(lines)
    return joined(body or empty, bracketed(notice))


def stream(label: str, text: str) -> str:
    """The stream's text follows the opening tag's line verbatim and the closing tag
    follows it directly, so a stream without a final newline stays without one."""
    return f"<{label}>\n{text}</{label}>" if text else ""
