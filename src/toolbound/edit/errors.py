"""The four error codes of Edit and Write, until they join ``ErrorCode``.

CONTRACT section 7 adds ``TOOL_NO_MATCH``, ``TOOL_AMBIGUOUS_MATCH``,
``TOOL_NOT_READ`` and ``TOOL_FILE_CHANGED`` in 0.2. ``results.ErrorCode`` does
not hold them yet, and ``ToolError`` (whose result model validates its code
against ``ErrorCode``) cannot carry them, so the edit core raises
:class:`EditError` for these four and ``ToolError`` for every code that exists.

MERGE ADAPTER: when ``ErrorCode`` gains ``NO_MATCH``, ``AMBIGUOUS_MATCH``,
``NOT_READ`` and ``FILE_CHANGED`` (same spellings), delete ``EditCode``, make
``EditError`` raise ``ToolError`` directly, and drop :func:`as_tool_error`.

Pieces:
    EditCode       the four code strings, spelled as CONTRACT section 7 spells them
    EditError      the exception the edit core raises for them
    as_tool_error  EditError -> ToolError (works once ErrorCode has the members)
"""

from __future__ import annotations

from enum import StrEnum

from toolbound.results import ErrorCode, ToolError


class EditCode(StrEnum):
    NO_MATCH = "TOOL_NO_MATCH"
    AMBIGUOUS_MATCH = "TOOL_AMBIGUOUS_MATCH"
    NOT_READ = "TOOL_NOT_READ"
    FILE_CHANGED = "TOOL_FILE_CHANGED"


class EditError(Exception):
    """An Edit/Write failure the model reads: one of the four new codes and a next step."""

    def __init__(self, code: EditCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def as_tool_error(err: EditError) -> ToolError:
    """The same failure as a ``ToolError``: ``ErrorCode(value)`` needs the merged members."""
    return ToolError(ErrorCode(err.code.value), err.message)
