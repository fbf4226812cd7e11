"""Pure bounding: what the model is allowed to see.

Nothing here does I/O except ``is_binary_file``'s sniff of a file's first
bytes: paging reads through a ``read_at`` callable its caller gives.

Pieces:
    markers   every marker string
    truncate  cut, the one cutter: head / tail / both ends, lines/bytes, char-safe
    utf8      UTF-8 sizes and character boundaries
    newlines  counting and finding newlines at memory speed (StringZilla's SIMD kernels)
    lines     clip_line: a line body clipped at MAX_LINE_CHARS characters
    paging    Read's window over a file's bytes, as pure functions
    binary    the binary test shared by Read and Grep
    terminal  what a terminal shows of a stream: rewrites collapsed, styling removed
    headtail  a stream's first and last parts retained, and the budget of each end
    outline   the top-level definitions past a cut Read window (economy profile)
"""

from toolbound.bounds.binary import BinaryVerdict, is_binary_file, sniff_binary
from toolbound.bounds.lines import clip_line
from toolbound.bounds.markers import CHECKPOINT_MARKER, lines_marker, single_line_marker
from toolbound.bounds.truncate import Cut, HeadTailCut, count_lines, cut

__all__ = [
    "CHECKPOINT_MARKER",
    "BinaryVerdict",
    "Cut",
    "HeadTailCut",
    "clip_line",
    "count_lines",
    "cut",
    "is_binary_file",
    "lines_marker",
    "single_line_marker",
    "sniff_binary",
]
