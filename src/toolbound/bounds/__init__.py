"""Pure bounding: what the model is allowed to see.

Nothing here does I/O except ``is_binary_file``'s sniff of a file's first bytes.

Pieces:
    markers   every marker string
    truncate  truncate_to: head/tail, lines/bytes, char-safe
    lines     line clipping at MAX_LINE_CHARS
    binary    the binary test shared by Read and Grep
"""

from toolbound.bounds.binary import BinaryVerdict, is_binary_file, sniff_binary
from toolbound.bounds.lines import clip_line, clip_lines, split_eol
from toolbound.bounds.markers import CHECKPOINT_MARKER, lines_marker, single_line_marker
from toolbound.bounds.truncate import Cut, count_lines, truncate_to

__all__ = [
    "CHECKPOINT_MARKER",
    "BinaryVerdict",
    "Cut",
    "clip_line",
    "clip_lines",
    "count_lines",
    "is_binary_file",
    "lines_marker",
    "single_line_marker",
    "sniff_binary",
    "split_eol",
    "truncate_to",
]
