"""Edit's and Write's view: one summary line (``Edited src/a.py: 1 replacement.``,
``Created src/a.py (123 bytes).`` or ``Wrote …``), then the unified diff as it
is, then the notice in brackets.

Pieces:
    EditView, WriteView  text; short arguments (the path)
"""

from __future__ import annotations

from typing import Any

from toolbound.views.base import View
from toolbound.views.parts import bracketed, joined


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


class _ChangeView(View):
    def summary(self, result: dict[str, Any]) -> str:
        raise NotImplementedError

    def text(self, result: dict[str, Any]) -> str:
        return joined(self.summary(result), result["diff"], bracketed(result.get("notice")))

    def short_args(self, args: dict[str, Any]) -> str | None:
        path = args.get("path")
        return path if isinstance(path, str) else None


class EditView(_ChangeView):
    def summary(self, result: dict[str, Any]) -> str:
        return f"Edited {result['path']}: {_plural(result['replacements'], 'replacement')}."


class WriteView(_ChangeView):
    def summary(self, result: dict[str, Any]) -> str:
        verb = "Created" if result["created"] else "Wrote"
        return f"{verb} {result['path']} ({_plural(result['bytes'], 'byte')})."
