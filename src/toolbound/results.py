"""Result models, events and the error vocabulary (CONTRACT sections 4 and 7).

Models are pydantic v2 with camelCase on the wire; ``to_wire()`` gives the
plain JSON-able dict that ``ToolHost.call`` returns. Optional fields the
contract marks with ``?`` are omitted when unset; nullable ones (``exitCode``,
``signal``) are always present.

Pieces:
    ErrorCode, ToolError        the TOOL_… codes and the one exception tools raise
    ReadResult, GlobResult      Read and Glob results
    ReadImageResult, ImageData  Read of an image; ReadPdfResult, Read of a PDF
    ListResult, ListEntry       List's result (CONTRACT section 15)
    GrepContentResult, GrepFilesResult, GrepCountResult   the three Grep variants
    BashResult                  Bash result, with StreamCounts/StreamPair/SpillPaths
    EditResult, WriteResult     Edit and Write results (CONTRACT section 10)
    ApplyPatchResult            with PatchFile and PatchHunk (CONTRACT section 15)
    ErrorResult                 {"error": {"code", "message"}}
    is_error                    whether the protocols report a result as an error
    ChunkEvent, ResultEvent     streamed events (a result event carries the model text)
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from toolbound.fit import NO_FIT, Fit
from toolbound.model_text import Profile, model_text


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


class ReadResult(WireModel):
    path: str
    root: Root
    content: str
    offset: int
    line_count: int
    total_lines: int | None = _optional()
    file_bytes: int
    truncated: bool
    notice: str | None = _optional()
    # The economy profile's re-read of a window an earlier call of this context
    # returned with the same bytes: True, and ``content`` is empty (the notice names
    # that call). Absent otherwise, so the exact profile's shape is unchanged.
    unchanged: bool | None = _optional()


class ImageData(WireModel):
    mime_type: str
    # The image's bytes, base64.
    data: str
    width: int
    height: int
    original_width: int
    original_height: int


class ReadImageResult(WireModel):
    """Read of an image (CONTRACT 15): scaled to fit, base64."""

    path: str
    root: Root
    image: ImageData
    file_bytes: int


class ReadPdfResult(WireModel):
    """Read of a PDF (CONTRACT 15): the pages' text, ``--- Page N ---`` between them."""

    path: str
    root: Root
    content: str
    # The pages shown ("3" or "1-10"; "" when none).
    pages: str
    total_pages: int
    file_bytes: int
    truncated: bool
    notice: str | None = _optional()


class GlobResult(WireModel):
    matches: list[str]
    count: int
    truncated: bool
    notice: str | None = _optional()


class ListEntry(WireModel):
    path: str
    type: Literal["dir", "file", "link"]
    # A file's size in bytes; a folder's count of listed entries.
    size: int | None = _optional()
    entries: int | None = _optional()


class ListResult(WireModel):
    path: str
    entries: list[ListEntry]
    count: int
    truncated: bool
    notice: str | None = _optional()


class GrepMatch(WireModel):
    path: str
    line: int
    text: str
    # True on a before/after line; absent on a match.
    context: bool | None = _optional()
    # A clipped line's window: the 1-based character of the line it starts at; absent
    # when the text starts at the line's start.
    column: int | None = _optional()


class GrepContentResult(WireModel):
    matches: list[GrepMatch]
    count: int
    files: int
    truncated: bool
    notice: str | None = _optional()


class GrepFilesResult(WireModel):
    files: list[str]
    count: int
    truncated: bool
    notice: str | None = _optional()


class GrepFileCount(WireModel):
    path: str
    count: int


class GrepCountResult(WireModel):
    counts: list[GrepFileCount]
    count: int
    truncated: bool
    notice: str | None = _optional()


class StreamCounts(WireModel):
    bytes: int
    lines: int


class StreamPair(WireModel):
    stdout: StreamCounts
    stderr: StreamCounts


class SpillPaths(WireModel):
    stdout: str | None = _optional()
    stderr: str | None = _optional()


class BashResult(WireModel):
    stdout: str
    stderr: str
    exit_code: int | None
    signal: str | None
    timed_out: bool
    aborted: bool
    truncated: bool
    spill: SpillPaths
    omitted: StreamPair
    totals: StreamPair
    duration_ms: int
    # Model-facing prose: a timeout or the processes stopped after the shell exited.
    notice: str | None = _optional()


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


class PatchHunk(WireModel):
    matched: Literal["exact", "trailing-space", "whitespace"]
    line: int
    # True when the chunk's new lines were there already (left as they were).
    already_applied: bool | None = _optional()


class PatchFile(WireModel):
    path: str
    action: Literal["add", "update", "delete", "move"]
    hunks: list[PatchHunk]
    # A move's old path (``path`` is the new one).
    moved_from: str | None = _optional(alias="from")
    # True when the file already was as the patch makes it (nothing written).
    already_applied: bool | None = _optional()


class ApplyPatchResult(WireModel):
    files: list[PatchFile]
    diff: str
    truncated: bool
    notice: str | None = _optional()


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
    # What the model reads for the result: model_text(tool, result, profile=…).
    text: str

    @staticmethod
    def of(
        tool: str,
        tool_call_id: str,
        seq: int,
        result: dict[str, Any],
        *,
        profile: Profile = "exact",
        fit: Fit = NO_FIT,
        wire: bool = False,
    ) -> dict[str, Any]:
        """The wire dict of a result event of ``tool``, its ``text`` rendered from ``result``
        for the call's ``profile`` within its ``fit``.

        The host's stream and the store's replay both build result events here.
        ``wire``: ``result`` is a model's ``to_wire()`` dict, already checked and
        JSON-able, so the event's dict is built as the model would dump it (the
        same keys in the same order) without checking and copying it again
        (about 9 us a call).
        """
        text = model_text(tool, result, profile=profile, fit=fit)
        if wire:
            return {
                "type": "result",
                "toolCallId": tool_call_id,
                "seq": seq,
                "result": result,
                "text": text,
            }
        return ResultEvent(tool_call_id=tool_call_id, seq=seq, result=result, text=text).to_wire()


ToolResult = (
    ReadResult
    | GlobResult
    | GrepContentResult
    | GrepFilesResult
    | GrepCountResult
    | BashResult
    | ErrorResult
)


def is_error(result: dict[str, Any]) -> bool:
    """Whether the protocols report ``result`` as an error (MCP ``isError``, CLI exit 1).

    A tool error, and a timed-out Bash call (the seed: "kill process tree +
    error"), which keeps its BashResult: the partial output is still the result.
    """
    return "error" in result or result.get("timedOut") is True
