"""ApplyPatch's view: one line per file (``Updated src/a.py: exact at line 12,
whitespace at line 40.``, ``Added …``, ``Deleted …``, ``Moved a to b…``), then
the diff, then the notice.

Pieces:
    ApplyPatchView  text; short arguments (the files the patch names, in its order)
"""

from __future__ import annotations

from typing import Any

from toolbound.views.base import View
from toolbound.views.parts import bracketed, joined

_VERBS = {"add": "Added", "update": "Updated", "delete": "Deleted", "move": "Moved"}

# A patch's file operations (Codex's apply_patch grammar) as the short arguments name them.
_OPS = {
    "*** Add File: ": "add",
    "*** Update File: ": "update",
    "*** Delete File: ": "delete",
    "*** Move to: ": "move to",
}


class ApplyPatchView(View):
    def text(self, result: dict[str, Any]) -> str:
        summary = "\n".join(_file_line(entry) for entry in result["files"])
        return joined(summary, result["diff"], bracketed(result.get("notice")))

    def short_args(self, args: dict[str, Any]) -> str | None:
        """``update a.py, move to b.py, add c.py``; a patch naming no file as it is."""
        patch = args.get("patch")
        if not isinstance(patch, str):
            return None
        return _patch_files(patch) or patch


def _file_line(entry: dict[str, Any]) -> str:
    """One line per file: ``Updated src/a.py: exact at line 12, whitespace at line 40.``"""
    path = entry["path"]
    where = f"{entry['from']} to {path}" if "from" in entry else path
    unchanged = entry.get("alreadyApplied", False)
    hunks = ", ".join(
        f"{h['matched']} at line {h['line']}"
        + (" (already applied)" if h.get("alreadyApplied") and not unchanged else "")
        for h in entry["hunks"]
    )
    if unchanged:
        return f"{where}: already applied, unchanged" + (f" ({hunks})." if hunks else ".")
    return f"{_VERBS[entry['action']]} {where}" + (f": {hunks}." if hunks else ".")


def _patch_files(patch: str) -> str:
    named = []
    for line in patch.splitlines():
        for head, verb in _OPS.items():
            if line.startswith(head):
                named.append(f"{verb} {line[len(head) :].strip()}")
    return ", ".join(named)
