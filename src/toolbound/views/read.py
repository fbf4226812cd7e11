"""Read's view: a window's content as it is, an image as one line, a PDF's pages.

Pieces:
    ReadView  text, outputs (the file at its window), elided bytes, the image,
              re-reads avoided, short arguments (the path and the window)
"""

from __future__ import annotations

from typing import Any

from toolbound.bounds.utf8 import utf8_len
from toolbound.views.base import View
from toolbound.views.parts import bracketed, joined

# The arguments that say which window of the file: shown after its path.
_WINDOW = ("offset", "limit", "pages", "depth")


def window_args(path: str, args: dict[str, Any]) -> str:
    """``a.py offset=10 limit=5``: a path and the window arguments given."""
    return " ".join([path, *(f"{k}={args[k]}" for k in _WINDOW if k in args)])


class ReadView(View):
    def text(self, result: dict[str, Any]) -> str:
        if "image" in result:
            return _image_line(result)
        # The content stays byte-faithful; the notice (next offset) follows it.
        return joined(result["content"], bracketed(result.get("notice")))

    def outputs(self, result: dict[str, Any]) -> list[dict[str, Any]]:
        """A text window's file at its offset; an image or a PDF has no window of lines."""
        if isinstance(result.get("path"), str) and "offset" in result:
            return [{"name": "file", "path": result["path"], "offset": result["offset"]}]
        return []

    def elided_bytes(self, result: dict[str, Any]) -> int:
        """The bytes clipped off long lines, never the unread rest of the file: a window
        is not an elision, and its notice names the next offset.

        The result tells them when the window is the whole file (offset 0 and
        ``totalLines`` present: it reached the end), as ``fileBytes`` minus the
        content's bytes, at least 0 (net of invalid bytes, each shown as a
        3-byte U+FFFD); a window that starts later or stops before the end
        does not tell its lines' file bytes, and counts 0. A re-read answered
        ``unchanged`` counts 0 (it is the re-read avoided).
        """
        whole_file = result.get("offset") == 0 and result.get("totalLines") is not None
        if whole_file and result.get("unchanged") is not True:
            return max(0, int(result["fileBytes"]) - utf8_len(result["content"]))
        return 0

    def image(self, result: dict[str, Any]) -> dict[str, Any] | None:
        image = result.get("image")
        return image if isinstance(image, dict) else None

    def reread_avoided(self, result: dict[str, Any]) -> bool:
        return result.get("unchanged") is True

    def short_args(self, args: dict[str, Any]) -> str | None:
        path = args.get("path")
        return window_args(path, args) if isinstance(path, str) else None


def _image_line(result: dict[str, Any]) -> str:
    image = result["image"]
    size, original = (
        (image["width"], image["height"]),
        (image["originalWidth"], image["originalHeight"]),
    )
    sent = len(image["data"]) * 3 // 4
    if size == original:
        how = "sent at full size"
    else:
        how = f"scaled down to {size[0]}x{size[1]} to fit 1568 px and 1.15 megapixels"
    return (
        f"[Image {result['path']}: {original[0]}x{original[1]}, {how}, as {image['mimeType']} "
        f"({sent} bytes).]"
    )
