"""List's view: a tree, an entry a line indented two spaces per level below the
folder listed: a folder as ``name/  (N entries)``, a file as ``name  (N bytes)``,
a link as ``name@``; then the notice.

Pieces:
    NO_ENTRIES  the text of an empty listing
    ListView    text; short arguments (the folder and the depth)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolbound.views.base import View
from toolbound.views.parts import listing
from toolbound.views.read import window_args

NO_ENTRIES = "No entries listed."


class ListView(View):
    def text(self, result: dict[str, Any]) -> str:
        return listing(_tree_lines(result), result.get("notice"), empty=NO_ENTRIES)

    def short_args(self, args: dict[str, Any]) -> str | None:
        return window_args(str(args.get("path", ".")), args)


def _tree_lines(result: dict[str, Any]) -> Iterable[str]:
    """The entries as an indented tree (the folder listed is the top)."""
    base = result["path"]
    top = 0 if base == "." else base.count("/") + 1
    for entry in result["entries"]:
        path = entry["path"]
        level = path.count("/") - top
        name = path.rsplit("/", 1)[-1]
        if entry["type"] == "dir":
            n = entry.get("entries", 0)
            yield f"{'  ' * level}{name}/  ({n} {'entry' if n == 1 else 'entries'})"
        elif entry["type"] == "link":
            yield f"{'  ' * level}{name}@"
        else:
            yield f"{'  ' * level}{name}  ({entry.get('size', 0)} bytes)"
