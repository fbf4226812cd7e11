"""Edit's and Write's arguments and results (CONTRACT section 10).

Pieces:
    EditOne, EditArgs, WriteArgs, EditResult, WriteResult
"""

from __future__ import annotations

from pydantic import Field

from toolbound.arguments import Args
from toolbound.results import WireModel, _optional


class EditOne(Args):
    """One edit of a multi-edit Edit."""

    old_string: str = Field(
        alias="oldString", description="Exact text to replace, as Read showed it."
    )
    new_string: str = Field(alias="newString", description="The text to put in its place.")
    replace_all: bool = Field(
        default=False, alias="replaceAll", description="Replace every occurrence."
    )


class EditArgs(Args):
    path: str = Field(min_length=1, description="Workspace file to change.")
    # An empty oldString is refused by the edit core, with a message that says what to do.
    old_string: str | None = Field(
        default=None, alias="oldString", description="Exact text to replace, as Read showed it."
    )
    new_string: str | None = Field(
        default=None, alias="newString", description="The text to put in its place."
    )
    replace_all: bool = Field(
        default=False, alias="replaceAll", description="Replace every occurrence."
    )
    edits: list[EditOne] | None = Field(
        default=None,
        min_length=1,
        description="Several edits instead of oldString/newString: applied in order, each "
        "to the text the earlier ones left, all or none.",
    )

    def problem(self) -> str | None:
        single = self.old_string is not None or self.new_string is not None
        if self.edits is not None:
            if single or self.replace_all:
                return (
                    "give either 'edits' or 'oldString'/'newString'/'replaceAll', not both "
                    "(each edit has its own)"
                )
            return None
        if self.old_string is None or self.new_string is None:
            missing = "oldString" if self.old_string is None else "newString"
            return f"'{missing}' is required (or 'edits', a list of {{oldString, newString}})"
        return None


class WriteArgs(Args):
    path: str = Field(min_length=1, description="Workspace file to create or overwrite.")
    content: str = Field(description="The file's whole new content.")


class EditResult(WireModel):
    path: str
    replacements: int
    created: bool
    diff: str
    truncated: bool
    notice: str | None = _optional()


class WriteResult(WireModel):
    path: str
    bytes: int
    created: bool
    diff: str
    truncated: bool
    notice: str | None = _optional()
