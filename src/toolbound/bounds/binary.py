"""Binary detection, one test shared by Read and Grep (seed priority rule 3).

A file is binary when its extension is on the list, or when the first 4 KB
hold a NUL byte, or more than 30% of their characters are non-printable.
Printable means text in any script: the sniff decodes UTF-8, so Chinese,
emoji and accented letters count as printable; control characters other than
the usual whitespace and ESC (ANSI colours in logs), and bytes that are not
UTF-8, do not.

Pieces:
    BINARY_EXTENSIONS  the extension list
    BinaryVerdict      why a file is binary, and a likely type
    sniff_binary       name + first bytes -> verdict or None
    is_binary_file     open, read the first bytes, sniff
"""

from __future__ import annotations

import codecs
import os
import re
from dataclasses import dataclass
from typing import Literal

from toolbound.limits import DEFAULT_LIMITS, Limits

# Extension -> a likely type, named in refusals.
BINARY_EXTENSIONS: dict[str, str] = {
    **dict.fromkeys(
        (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".webp", ".tif", ".tiff", ".psd"),
        "image",
    ),
    **dict.fromkeys((".heic", ".avif", ".icns"), "image"),
    **dict.fromkeys(
        (".zip", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".tar", ".lz4", ".lzma"),
        "archive",
    ),
    **dict.fromkeys((".jar", ".war", ".whl", ".egg", ".deb", ".rpm", ".apk", ".dmg"), "package"),
    **dict.fromkeys((".iso", ".img"), "disk image"),
    **dict.fromkeys(
        (".exe", ".dll", ".so", ".dylib", ".o", ".a", ".lib", ".obj", ".bin", ".wasm", ".pdb"),
        "compiled binary",
    ),
    **dict.fromkeys((".class", ".pyc", ".pyo", ".pyd"), "bytecode"),
    **dict.fromkeys((".db", ".sqlite", ".sqlite3", ".mdb"), "database"),
    **dict.fromkeys(
        (".mp3", ".wav", ".ogg", ".flac", ".aac", ".m4a", ".opus", ".wma"),
        "audio",
    ),
    **dict.fromkeys((".mp4", ".avi", ".mov", ".mkv", ".webm", ".wmv", ".flv", ".m4v"), "video"),
    **dict.fromkeys((".woff", ".woff2", ".ttf", ".otf", ".eot"), "font"),
    **dict.fromkeys((".pdf",), "PDF document"),
    **dict.fromkeys(
        (".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ods", ".odp"),
        "office document",
    ),
    **dict.fromkeys(
        (".npy", ".npz", ".pkl", ".pickle", ".pt", ".pth", ".onnx", ".h5", ".parquet"),
        "serialized data",
    ),
}

# Characters that make text unreadable: C0 controls other than \b \t \n \v \f
# \r and ESC, DEL, C1 controls, and U+FFFD (standing for a byte that is not UTF-8).
_NONPRINTABLE = re.compile("[\x00-\x07\x0e-\x1a\x1c-\x1f\x7f-\x9f\ufffd]")

# Magic numbers, to name a likely type for content the extension did not reveal.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x7fELF", "ELF executable"),
    (b"\x89PNG", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"%PDF", "PDF document"),
    (b"PK\x03\x04", "zip archive"),
    (b"\x1f\x8b", "gzip archive"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"\xca\xfe\xba\xbe", "Java class or Mach-O binary"),
    (b"\x00asm", "WebAssembly module"),
)


@dataclass(frozen=True, slots=True)
class BinaryVerdict:
    """Why content was judged binary, and what it likely is."""

    reason: Literal["extension", "nul", "nonprintable"]
    likely_type: str


def _likely_type(head: bytes, fallback: str) -> str:
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    return fallback


def sniff_binary(
    name: str, head: bytes, *, limits: Limits = DEFAULT_LIMITS
) -> BinaryVerdict | None:
    """Judge a file by its name and its first bytes; None means text."""
    ext = os.path.splitext(name)[1].lower()
    if ext in BINARY_EXTENSIONS:
        return BinaryVerdict("extension", _likely_type(head, BINARY_EXTENSIONS[ext]))
    head = head[: limits.binary_sniff_bytes]
    if not head:
        return None
    if b"\x00" in head:
        return BinaryVerdict("nul", _likely_type(head, "binary data"))
    # final=False: a character split by the sniff window is not counted as bad.
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(head, final=False)
    if not text:
        return None
    bad = len(_NONPRINTABLE.findall(text))
    if bad / len(text) > limits.binary_nonprintable_ratio:
        return BinaryVerdict("nonprintable", _likely_type(head, "binary data"))
    return None


def is_binary_file(path: str | os.PathLike[str], *, limits: Limits = DEFAULT_LIMITS) -> bool:
    """Open a regular file and sniff it; unreadable files are not judged binary."""
    name = os.fspath(path)
    if os.path.splitext(name)[1].lower() in BINARY_EXTENSIONS:
        return True
    try:
        with open(name, "rb") as f:
            head = f.read(limits.binary_sniff_bytes)
    except OSError:
        return False
    return sniff_binary(name, head, limits=limits) is not None
