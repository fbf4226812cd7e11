"""Grep's view: ripgrep's heading layout, a path once and then its lines,
``12:text`` for a match and ``12-text`` for a context line, a blank line between
files; ``path`` a line for ``filesWithMatches`` and ``path:count`` for ``count``.

Pieces:
    NO_MATCHES  the text of no match
    GrepView    text; short arguments (the pattern, and where)
"""

from __future__ import annotations

from typing import Any

from toolbound.views.base import View
from toolbound.views.glob import pattern_args
from toolbound.views.parts import listing

NO_MATCHES = "No matches."


class GrepView(View):
    def text(self, result: dict[str, Any]) -> str:
        notice = result.get("notice")
        if "counts" in result:
            counts = (f"{c['path']}:{c['count']}" for c in result["counts"])
            return listing(counts, notice, empty=NO_MATCHES)
        if "matches" not in result:
            return listing(result["files"], notice, empty=NO_MATCHES)
        lines: list[str] = []
        path: str | None = None
        for entry in result["matches"]:
            if entry["path"] != path:
                if path is not None:
                    lines.append("")
                path = entry["path"]
                lines.append(path)
            sep = "-" if entry.get("context") else ":"
            column = entry.get("column")
            at = f"[from column {column}] " if column else ""
            lines.append(f"{entry['line']}{sep}{at}{entry['text']}")
        return listing(lines, notice, empty=NO_MATCHES)

    def short_args(self, args: dict[str, Any]) -> str | None:
        return pattern_args(args)
