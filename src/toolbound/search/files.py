"""The walk both tools share: rg lists files, the newest N are kept.

Glob lists files (``rg --files``), Grep lists files with a match
(``rg --files-with-matches``, which stops reading a file at its first match).
Either way rg walks in parallel and prints paths in no particular order; each
one is stat'ed as it arrives and offered to a bounded heap, so a tree of a
million files costs the memory of ``capacity`` paths. A binary file is sniffed
only when it would enter the heap.

Pieces:
    Found         the newest files, how the walk ended
    newest_files  run rg, keep the ``capacity`` newest files
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from toolbound.bounds import is_binary_file
from toolbound.search.ranking import NewestFiles
from toolbound.search.rg import RgOutcome, run_rg
from toolbound.search.scope import Scope, mtime_ns, split_nul
from toolbound.tools import ToolContext


@dataclass(frozen=True, slots=True)
class Found:
    """The kept files, newest first, as rg printed them (relative to the scope's cwd)."""

    ranked: list[bytes]
    outcome: RgOutcome


async def newest_files(
    args: Sequence[str],
    *,
    scope: Scope,
    ctx: ToolContext,
    capacity: int,
    deadline: float,
    skip_binary: bool,
) -> Found:
    """Run ``rg ARGS --null -- TARGET`` and keep the ``capacity`` newest printed files."""
    heap = NewestFiles(capacity)
    cwd = os.fsencode(scope.cwd)
    limits = ctx.limits

    def consume(stream: IO[bytes]) -> None:
        for printed in split_nul(stream):
            mtime = mtime_ns(cwd, printed)
            if mtime is None or not heap.would_keep(mtime, printed):
                continue
            if skip_binary and is_binary_file(os.fsdecode(cwd + b"/" + printed), limits=limits):
                continue
            heap.add(mtime, printed)

    outcome = await run_rg(
        [*args, "--null", "--", scope.target],
        cwd=scope.cwd,
        consume=consume,
        deadline=deadline,
        abort=ctx.abort,
    )
    return Found(heap.ranked(), outcome)
