"""The walk both tools share: rg lists files, the newest N are kept.

Glob lists files (``rg --files``), Grep lists files with a match
(``rg --files-with-matches``, which stops reading a file at its first match).
Either way rg walks in parallel and prints paths in no particular order; each
one is stat'ed as it arrives and offered to a bounded heap, so a tree of a
million files costs the memory of ``capacity`` paths.

Grep skips binary files: one on the extension list is dropped as it arrives
(no I/O); the content sniff (first 4 KB) runs afterwards on the kept files
only, in rank order. If that sniff drops files from a heap that had to let
others go, those others may belong in the result, so the walk is run again
sniffing every file that would enter the heap (slower, and rare: rg itself
already skips files with a NUL byte).

Pieces:
    Found         the newest files, how the walk ended
    newest_files  run rg, keep the ``capacity`` newest files
    TextFiles     the kept files with binary ones dropped, sniffed as a page needs them
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from toolbound.bounds import is_binary_file
from toolbound.bounds.binary import BINARY_EXTENSIONS
from toolbound.context import ToolContext
from toolbound.limits import Limits
from toolbound.search.ranking import NewestFiles
from toolbound.search.rg import RgOutcome, run_rg
from toolbound.search.scope import Scope, mtime_ns, split_nul


@dataclass(frozen=True, slots=True)
class Found:
    """The kept files, newest first, as rg printed them (relative to the scope's cwd)."""

    ranked: list[bytes]
    outcome: RgOutcome
    # True when the heap had to let files go (more matched than it holds).
    overflowed: bool


Sniff = Literal["none", "extension", "content"]


def _binary_extension(printed: bytes) -> bool:
    ext = os.path.splitext(printed)[1].lower()
    return ext.decode("ascii", "replace") in BINARY_EXTENSIONS


async def newest_files(
    args: Sequence[str],
    *,
    scope: Scope,
    ctx: ToolContext,
    capacity: int,
    deadline: float,
    sniff: Sniff = "none",
) -> Found:
    """Run ``rg ARGS --null -- TARGET`` and keep the ``capacity`` newest printed files.

    ``sniff`` skips binary files as they would enter the heap: by extension
    only, or by extension and content.
    """
    heap = NewestFiles(capacity)
    cwd = os.fsencode(scope.cwd)
    limits = ctx.limits

    def consume(stream: IO[bytes]) -> None:
        for printed in split_nul(stream):
            mtime = mtime_ns(cwd, printed)
            if mtime is None or not heap.would_keep(mtime, printed):
                continue
            if sniff != "none" and _binary_extension(printed):
                continue
            if sniff == "content" and is_binary_file(
                os.fsdecode(cwd + b"/" + printed), limits=limits
            ):
                continue
            heap.add(mtime, printed)

    outcome = await run_rg(
        [*args, "--null", "--", scope.target],
        cwd=scope.cwd,
        consume=consume,
        deadline=deadline,
        abort=ctx.abort,
        grace_s=ctx.limits.kill_grace_s,
    )
    return Found(heap.ranked(), outcome, overflowed=heap.overflowed)


class TextFiles:
    """The kept files in rank order, content-sniffed lazily: only those a page uses.

    ``ensure(n)`` sniffs until the first ``n`` text files are known (or the
    kept files run out). ``incomplete`` is true when binary files were dropped
    from a heap that had let other files go: the list may then be missing
    files that belong in it, and the walk must be rerun with ``sniff="content"``.
    """

    def __init__(self, found: Found, cwd: Path, limits: Limits, *, sniffed: bool) -> None:
        self.found = found
        self._cwd = os.fsencode(cwd)
        self._limits = limits
        self.text: list[bytes] = list(found.ranked) if sniffed else []
        self._next = len(self.text)
        self._dropped = 0

    def ensure(self, n: int) -> None:
        ranked = self.found.ranked
        while len(self.text) < n and self._next < len(ranked):
            printed = ranked[self._next]
            self._next += 1
            if is_binary_file(os.fsdecode(self._cwd + b"/" + printed), limits=self._limits):
                self._dropped += 1
            else:
                self.text.append(printed)

    @property
    def incomplete(self) -> bool:
        return (
            self._dropped > 0
            and self._next >= len(self.found.ranked)
            and self.found.overflowed
            and self.found.outcome.stopped is None
        )
