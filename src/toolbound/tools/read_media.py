"""Read of an image or a PDF (CONTRACT section 15): what Read returns for these two kinds.

Read's text path hands a file here when its first bytes are an image's or a
PDF's signature (``media_kind``), or when the call gave ``pages``. The file is
already open (reached from its root's descriptor, ``toolbound.tools.read``);
this module reads it through that descriptor only.

An image (png, jpeg, gif, webp) is decoded with Pillow, never our own
decoder, and scaled down to fit ``IMAGE_MAX_EDGE`` px on its longest side and
``IMAGE_MAX_PIXELS`` pixels (the sizes the Messages API documents as the most
it uses), then encoded within ``IMAGE_MAX_BYTES`` of base64. One that already
fits is returned byte for byte. Memory is bounded before any pixel is decoded:
a file over ``IMAGE_MAX_FILE_BYTES`` or an image over ``IMAGE_MAX_SOURCE_PIXELS``
(a decompression bomb) is refused from its header; a JPEG is decoded at the
smallest scale that still covers the target (``Image.draft``).

A PDF's pages are extracted as text with pypdf: ``pages`` ("N" or "N-M", at
most ``limits.pdf_pages_max``), by default the first
``limits.pdf_pages_default``; each page's text under a ``--- Page N ---``
header, whole pages within the Read budget, and a notice naming the pages to
ask for next. An encrypted or broken PDF is a clear TOOL_ error.

Pillow and pypdf are imported on the first image or PDF only (each takes tens
of milliseconds to import; a host that never reads one never pays).

Pieces:
    MediaResult    what Read returns for an image or a PDF
    media_kind     the first bytes -> "image/png" | … | "application/pdf" | None
    read_image     an open image file -> ReadImageResult
    read_pdf       an open PDF -> ReadPdfResult
"""

from __future__ import annotations

import base64
import io
import math
import os
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO, Final

from toolbound import notices
from toolbound.limits import Budget, Limits, human_size
from toolbound.models.read import ImageData, ReadImageResult, ReadPdfResult
from toolbound.paths import Resolved
from toolbound.results import ErrorCode, ToolError

if TYPE_CHECKING:
    from PIL import Image

# The largest image the model is sent (the Messages API's documented sizes).
IMAGE_MAX_EDGE: Final = 1568
IMAGE_MAX_PIXELS: Final = 1_150_000
IMAGE_MAX_BYTES: Final = 5 * 1024 * 1024
# Refused before decoding: a file this large, or an image of this many pixels.
IMAGE_MAX_FILE_BYTES: Final = 64 * 1024 * 1024
IMAGE_MAX_SOURCE_PIXELS: Final = 64_000_000
# Each further attempt to fit the bytes scales the image by this much.
_REFIT_SCALE: Final = 0.75
_JPEG_QUALITY: Final = 85

_SIGNATURES: Final[tuple[tuple[bytes, str], ...]] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
)
_FORMATS: Final = {
    "image/png": "PNG",
    "image/jpeg": "JPEG",
    "image/gif": "GIF",
    "image/webp": "WEBP",
}
PDF: Final = "application/pdf"

MediaResult = ReadImageResult | ReadPdfResult


def media_kind(head: bytes) -> str | None:
    """The media type a file's first bytes announce, if Read shows it (else None)."""
    for signature, kind in _SIGNATURES:
        if head.startswith(signature):
            return kind
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _refused(target: Resolved, what: str, why: str, step: str) -> ToolError:
    return ToolError(ErrorCode.BINARY_CONTENT, f"{target.shown} is {what}, but {why}. {step}")


# --- images -------------------------------------------------------------------


def _fit(width: int, height: int) -> tuple[int, int]:
    """The size within IMAGE_MAX_EDGE and IMAGE_MAX_PIXELS, aspect kept (never larger)."""
    scale = min(
        1.0,
        IMAGE_MAX_EDGE / max(width, height),
        math.sqrt(IMAGE_MAX_PIXELS / (width * height)),
    )
    if scale >= 1.0:
        return width, height
    # A hair over the exact product, so 3000 x (1568 / 3000) is 1568, not 1567.
    return max(1, math.floor(width * scale + 1e-6)), max(1, math.floor(height * scale + 1e-6))


def _encode(image: Image.Image, kind: str) -> tuple[bytes, str]:
    """The scaled image as bytes: PNG for an image with transparency or a palette
    (a GIF's first frame), else its own format (JPEG for a JPEG, WEBP for a WEBP)."""
    out = io.BytesIO()
    if kind in ("image/jpeg", "image/webp") and image.mode in ("RGB", "L"):
        image.save(out, _FORMATS[kind], quality=_JPEG_QUALITY)
        return out.getvalue(), kind
    if kind == "image/jpeg":
        image.convert("RGB").save(out, "JPEG", quality=_JPEG_QUALITY)
        return out.getvalue(), kind
    image.save(out, "PNG", optimize=False)
    return out.getvalue(), "image/png"


def _load_pillow(target: Resolved) -> Any:
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - a dependency of toolbound
        raise _refused(
            target,
            "an image",
            "Pillow, which toolbound decodes images with, is not installed",
            "Install toolbound's dependencies (pip install pillow).",
        ) from None
    return Image


def read_image(fd: int, target: Resolved, st: os.stat_result, kind: str) -> ReadImageResult:
    """The image, scaled to fit (see the module docstring), or a TOOL_ error."""
    what = f"an image ({kind})"
    if st.st_size > IMAGE_MAX_FILE_BYTES:
        raise _refused(
            target,
            what,
            f"its {st.st_size} bytes are over the {human_size(IMAGE_MAX_FILE_BYTES, exact=False)} "
            "Read decodes",
            "Scale it down with Bash (e.g. `convert` or a Python script), then Read the copy.",
        )
    pil = _load_pillow(target)
    with os.fdopen(os.dup(fd), "rb") as file, warnings.catch_warnings():
        # Pillow warns of a bomb past 89 megapixels (and refuses past twice that)
        # while it opens the header; the check below refuses it in our words.
        warnings.simplefilter("error", pil.DecompressionBombWarning)
        try:
            return _scaled(pil, file, target, st, kind, what)
        except ToolError:
            raise
        except (pil.DecompressionBombWarning, pil.DecompressionBombError):
            raise _too_many_pixels(target, what, "it is") from None
        except (OSError, ValueError, SyntaxError, EOFError) as err:
            # Pillow's "cannot identify" names its file object, which says nothing here.
            reason = (
                "not an image Pillow recognizes"
                if isinstance(err, pil.UnidentifiedImageError)
                else err
            )
            raise _refused(
                target,
                what,
                f"it cannot be decoded ({reason})",
                "It may be truncated or corrupt; check it with Bash (`file`).",
            ) from None


def _too_many_pixels(target: Resolved, what: str, it: str) -> ToolError:
    return _refused(
        target,
        what,
        f"{it} over the {IMAGE_MAX_SOURCE_PIXELS // 1_000_000} megapixels Read decodes",
        "Scale it down with Bash first, then Read the copy.",
    )


def _scaled(
    pil: Any, file: io.BufferedReader, target: Resolved, st: os.stat_result, kind: str, what: str
) -> ReadImageResult:
    image = pil.open(file, formats=[_FORMATS[kind]])
    width, height = image.size
    if width * height > IMAGE_MAX_SOURCE_PIXELS:
        raise _too_many_pixels(target, what, f"it is {width}x{height} pixels,")
    size = _fit(width, height)
    if size == (width, height) and st.st_size * 4 // 3 + 4 <= IMAGE_MAX_BYTES:
        image.verify()  # a corrupt file is refused even when sent as it is
        file.seek(0)
        data, mime = file.read(), kind
    else:
        if kind == "image/jpeg":
            image.draft("RGB", size)
        image.load()
        data, mime, size = _shrink(image, size, kind)
    return ReadImageResult(
        path=target.shown,
        root=target.root,
        image=ImageData(
            mime_type=mime,
            data=base64.b64encode(data).decode("ascii"),
            width=size[0],
            height=size[1],
            original_width=width,
            original_height=height,
        ),
        file_bytes=st.st_size,
    )


def _shrink(image: Any, size: tuple[int, int], kind: str) -> tuple[bytes, str, tuple[int, int]]:
    """Resize to ``size`` and encode; smaller again while the base64 is over the bound."""
    if image.mode not in ("RGB", "RGBA", "L", "LA"):
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    while True:
        resized = image.resize(size, reducing_gap=3.0) if size != image.size else image
        data, mime = _encode(resized, kind)
        if (len(data) + 2) // 3 * 4 <= IMAGE_MAX_BYTES or min(size) <= 1:
            return data, mime, size
        size = (max(1, int(size[0] * _REFIT_SCALE)), max(1, int(size[1] * _REFIT_SCALE)))


# --- PDFs ---------------------------------------------------------------------


def _page_range(pages: str | None, total: int, limits: Limits, target: Resolved) -> range:
    """The pages to show (0-based), from ``pages`` ("N" or "N-M", checked for form by
    ReadArgs) or the default first ones."""
    if pages is None:
        return range(min(total, limits.pdf_pages_default))
    first, _, last = pages.partition("-")
    lo, hi = int(first), int(last or first)
    if hi - lo + 1 > limits.pdf_pages_max:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"'pages' {pages} asks for {hi - lo + 1} pages; Read shows at most "
            f'{limits.pdf_pages_max} pages a call (e.g. "{lo}-{lo + limits.pdf_pages_max - 1}").',
        )
    if lo > total:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"'pages' {pages} starts past the end: {target.shown} has {total} "
            f"page{'s' if total != 1 else ''}.",
        )
    return range(lo - 1, min(hi, total))


def _open_pdf(fd: int, target: Resolved) -> tuple[Any, BinaryIO]:
    """A pypdf reader on the open file, and that file (the caller closes it); a TOOL_
    error for an encrypted or broken PDF."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    file = os.fdopen(os.dup(fd), "rb")
    try:
        reader = PdfReader(file)
        if reader.is_encrypted and not reader.decrypt(""):
            raise _refused(
                target,
                "a PDF",
                "it is encrypted with a password",
                "Ask the user for a copy without the password.",
            )
        _ = len(reader.pages)
    except ToolError:
        file.close()
        raise
    except (PdfReadError, OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        file.close()
        message = str(err) or type(err).__name__
        if "decrypt" in message.lower() or "encrypt" in message.lower():
            why = f"it is encrypted and cannot be opened ({message})"
        else:
            why = f"it cannot be parsed ({message})"
        raise _refused(target, "a PDF", why, "It may be damaged; check it with Bash.") from None
    return reader, file


def read_pdf(
    fd: int,
    target: Resolved,
    st: os.stat_result,
    *,
    pages: str | None,
    limits: Limits,
    budget: Budget,
    stop: Callable[[], bool] = lambda: False,
) -> ReadPdfResult:
    """The text of the asked pages within ``budget``, page headers between them."""
    reader, file = _open_pdf(fd, target)
    try:
        total = len(reader.pages)
        wanted = _page_range(pages, total, limits, target)
        deadline = time.monotonic() + limits.search_timeout_s
        parts: list[str] = []
        size = lines = 0
        shown: list[int] = []
        cut = False
        for index in wanted:
            if stop() or time.monotonic() > deadline:
                break
            try:
                text = reader.pages[index].extract_text() or ""
            except Exception as err:  # pypdf raises many kinds on a damaged page
                text = f"[the text of this page could not be extracted: {err}]"
            part = f"--- Page {index + 1} ---\n{text.rstrip()}\n"
            part_bytes = len(part.encode("utf-8", "surrogatepass"))
            part_lines = part.count("\n")
            if size + part_bytes > budget.max_bytes or lines + part_lines > budget.max_lines:
                if not shown:
                    part = _clip(part, budget)
                    parts.append(part)
                    shown.append(index)
                    cut = True
                break
            parts.append(part)
            shown.append(index)
            size += part_bytes
            lines += part_lines
    finally:
        file.close()
    return _pdf_result(target, st, "".join(parts), shown, wanted, total, cut, budget)


def _clip(part: str, budget: Budget) -> str:
    """A page's text cut to whole lines within the budget."""
    kept: list[str] = []
    size = 0
    for line in part.splitlines(keepends=True):
        size += len(line.encode("utf-8", "surrogatepass"))
        if size > budget.max_bytes or len(kept) >= budget.max_lines:
            break
        kept.append(line)
    return "".join(kept)


def _span(first: int, last: int) -> str:
    return f"{first}" if first == last else f"{first}-{last}"


def _pdf_result(
    target: Resolved,
    st: os.stat_result,
    content: str,
    shown: list[int],
    wanted: range,
    total: int,
    cut: bool,
    budget: Budget,
) -> ReadPdfResult:
    last_shown = shown[-1] + 1 if shown else wanted.start
    following = None
    if last_shown < total:
        following = _span(last_shown + 1, min(total, last_shown + max(1, len(wanted))))
    notice = notices.pdf_pages(
        cut_page=last_shown if cut else None,
        budget=budget,
        shown=f"page{'s' if len(shown) != 1 else ''} "
        f"{_span(shown[0] + 1, last_shown) if shown else 'none'}",
        total=total,
        next_pages=following,
    )
    return ReadPdfResult(
        path=target.shown,
        root=target.root,
        content=content,
        pages=_span(shown[0] + 1, last_shown) if shown else "",
        total_pages=total,
        file_bytes=st.st_size,
        truncated=last_shown < total or cut,
        notice=notice,
    )
