"""Result models, events and the error vocabulary (CONTRACT sections 4 and 7).

Models are pydantic v2 with camelCase on the wire; ``to_wire()`` gives the
plain JSON-able dict that ``ToolHost.call`` returns. Optional fields the
contract marks with ``?`` are omitted when unset; nullable ones (``exitCode``,
``signal``) are always present.

Each tool's result models live in its module of ``toolbound.models`` and are
given here by name as well, imported on first use (so a call builds its own
tool's models only).

Pieces:
    ErrorCode, ToolError        the TOOL_… codes and the one exception tools raise
    WireModel                   the base of every result model
    ErrorResult                 {"error": {"code", "message"}}
    is_error                    whether the protocols report a result as an error
    ChunkEvent, ResultEvent     streamed events (a result event carries the model text)
    ReadResult, GlobResult, ... every tool's results, from ``toolbound.models``
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from toolbound import views
from toolbound.fit import NO_FIT, Fit
from toolbound.lazy import loader
from toolbound.model_text import model_text


class ErrorCode(StrEnum):
    BINARY_CONTENT = "TOOL_BINARY_CONTENT"
    NOT_FOUND = "TOOL_NOT_FOUND"
    IS_DIRECTORY = "TOOL_IS_DIRECTORY"
    NOT_REGULAR_FILE = "TOOL_NOT_REGULAR_FILE"
    PERMISSION_DENIED = "TOOL_PERMISSION_DENIED"
    PATH_NOT_ALLOWED = "TOOL_PATH_NOT_ALLOWED"
    INVALID_ARGUMENT = "TOOL_INVALID_ARGUMENT"
    INVALID_PATTERN = "TOOL_INVALID_PATTERN"
    UNKNOWN = "TOOL_UNKNOWN"
    SANDBOX_UNAVAILABLE = "TOOL_SANDBOX_UNAVAILABLE"
    NO_MATCH = "TOOL_NO_MATCH"
    AMBIGUOUS_MATCH = "TOOL_AMBIGUOUS_MATCH"
    NOT_READ = "TOOL_NOT_READ"
    FILE_CHANGED = "TOOL_FILE_CHANGED"
    JOB_NOT_FOUND = "TOOL_JOB_NOT_FOUND"


class ToolError(Exception):
    """A tool failure the model reads: a code and a message naming the next step."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

    def to_result(self) -> ErrorResult:
        return ErrorResult(error=ErrorBody(code=self.code, message=self.message))


def _omit_none(value: object) -> bool:
    return value is None


def _optional(**kwargs: Any) -> Any:
    """An optional field that is left off the wire when unset (the contract's ``?``)."""
    return Field(default=None, exclude_if=_omit_none, **kwargs)


class WireModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        extra="forbid",
        # Each model's validator and serializer are built on its first use, so a
        # process pays only for the models its calls use (``toolbound call Read``).
        defer_build=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON-able dict with the contract's camelCase keys."""
        return self.model_dump(mode="json", by_alias=True)


Root = Literal["workspace", "scratch", "external"]


class ErrorBody(WireModel):
    code: ErrorCode
    message: str


class ErrorResult(WireModel):
    error: ErrorBody


Stream = Literal["stdout", "stderr"]


class ChunkEvent(WireModel):
    type: Literal["chunk"] = "chunk"
    tool_call_id: str
    stream: Stream
    seq: int
    data: str


class ResultEvent(WireModel):
    type: Literal["result"] = "result"
    tool_call_id: str
    seq: int
    result: dict[str, Any]
    # What the model reads for the result: model_text(tool, result, fit=…).
    text: str

    @staticmethod
    def of(
        tool: str,
        tool_call_id: str,
        seq: int,
        result: dict[str, Any],
        *,
        fit: Fit = NO_FIT,
        wire: bool = False,
    ) -> dict[str, Any]:
        """The wire dict of a result event of ``tool``, its ``text`` rendered from ``result``
        within the call's ``fit``.

        The host's stream and the store's replay both build result events here.
        ``wire``: ``result`` is a model's ``to_wire()`` dict, already checked and
        JSON-able, so the event's dict is built as the model would dump it (the
        same keys in the same order) without checking and copying it again
        (about 9 us a call).
        """
        text = model_text(tool, result, fit=fit)
        if wire:
            return {
                "type": "result",
                "toolCallId": tool_call_id,
                "seq": seq,
                "result": result,
                "text": text,
            }
        return ResultEvent(tool_call_id=tool_call_id, seq=seq, result=result, text=text).to_wire()


def is_error(tool: str, result: dict[str, Any]) -> bool:
    """Whether the protocols report ``result``, a result of ``tool``, as an error (MCP
    ``isError``, CLI exit 1): what its status says (``toolbound.views``).

    A tool error, and a timeout (the seed: "kill process tree + error"): a
    timed-out Bash call keeps its BashResult, the partial output is still the
    result. A command that exited non-zero, a job still running, a job
    stopped: not errors.
    """
    return views.status(tool, result).is_error


# Each tool's models live in its own module (``toolbound.models``), imported on
# first use (PEP 562): ``toolbound call Read`` builds Read's models, no others.
_HOMES = {
    "ReadResult": "toolbound.models.read",
    "ImageData": "toolbound.models.read",
    "ReadImageResult": "toolbound.models.read",
    "ReadPdfResult": "toolbound.models.read",
    "GlobResult": "toolbound.models.glob",
    "ListEntry": "toolbound.models.listing",
    "ListResult": "toolbound.models.listing",
    "GrepMatch": "toolbound.models.grep",
    "GrepContentResult": "toolbound.models.grep",
    "GrepFilesResult": "toolbound.models.grep",
    "GrepFileCount": "toolbound.models.grep",
    "GrepCountResult": "toolbound.models.grep",
    "StreamCounts": "toolbound.models.bash",
    "StreamPair": "toolbound.models.bash",
    "SpillPaths": "toolbound.models.bash",
    "BashResult": "toolbound.models.bash",
    "EditResult": "toolbound.models.change",
    "WriteResult": "toolbound.models.change",
    "PatchHunk": "toolbound.models.apply_patch",
    "PatchFile": "toolbound.models.apply_patch",
    "ApplyPatchResult": "toolbound.models.apply_patch",
}


__getattr__ = loader(__name__, _HOMES, globals())
