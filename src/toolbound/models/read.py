"""Read's arguments and results: a text window, an image, a PDF's pages (CONTRACT 4, 15).

Pieces:
    ReadArgs, ReadResult, ImageData, ReadImageResult, ReadPdfResult
"""

from __future__ import annotations

from pydantic import Field

from toolbound.arguments import Args
from toolbound.results import Root, WireModel, _optional


class ReadArgs(Args):
    path: str = Field(min_length=1, description="File to read.")
    offset: int = Field(default=0, ge=0, description="Lines to skip before the window starts.")
    limit: int | None = Field(default=None, description="Lines in the window, {range}.")
    pages: str | None = Field(
        default=None, description='PDF pages to read: "N" or "N-M" (a PDF only).'
    )

    def problem(self) -> str | None:
        if self.pages is None:
            return None
        first, dash, last = self.pages.partition("-")
        numbers = [first, last] if dash else [first]
        if not all(n.isascii() and n.isdigit() and int(n) >= 1 for n in numbers) or (
            dash and int(last) < int(first)
        ):
            return f'\'pages\' must be "N" or "N-M" with 1 <= N <= M, not {self.pages!r}'
        return None


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
