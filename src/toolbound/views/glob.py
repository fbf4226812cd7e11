"""Glob's view: one path a line, then the notice.

Pieces:
    NO_FILES   the text of no match
    GlobView   text; short arguments (the pattern, and where)
    pattern_args  ``pattern in path``, shared with Grep
"""

from __future__ import annotations

from typing import Any

from toolbound.views.base import View
from toolbound.views.parts import listing

NO_FILES = "No files matched."


def pattern_args(args: dict[str, Any]) -> str | None:
    """``def in src``: a search's pattern and, when given, where."""
    pattern = args.get("pattern")
    if not isinstance(pattern, str):
        return None
    return pattern + (f" in {args['path']}" if args.get("path") else "")


class GlobView(View):
    def text(self, result: dict[str, Any]) -> str:
        return listing(result["matches"], result.get("notice"), empty=NO_FILES)

    def short_args(self, args: dict[str, Any]) -> str | None:
        return pattern_args(args)
