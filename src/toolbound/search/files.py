"""The walk both tools share: rg lists files, the newest N are kept.

Glob lists files (``rg --files``), Grep lists files with a match
(``rg --files-with-matches``, which stops reading a file at its first match).
Either way rg walks in parallel and prints paths in no particular order; they
are stat'ed a read at a time as they arrive (a large read on two threads, the
stat being the walk's main cost in Python) and offered to a bounded heap, so a
tree of a million files costs the memory of ``capacity`` paths. rg's pipe is
widened to 1 MB (search/rg.py) so its walk does not wait for the stats.

Grep skips binary files: one on the extension list is dropped as it arrives
(no I/O); the content sniff (first 4 KB) runs afterwards on the kept files
only, in rank order. If that sniff drops files from a heap that had to let
others go, those others may belong in the result, so the walk is run again
sniffing every file that would enter the heap (slower, and rare: rg itself
already skips files with a NUL byte).

Glob's pattern and Grep's ``glob``/``type`` filter what the walk lists without
lifting an ignore rule (search/select.py): rg is narrowed by a file type, the
exact glob is tested here before a file is stat'ed, and a dot file that only
the type let through waits for a plain walk to confirm it.

Pieces:
    Found         the newest files, how the walk ended
    newest_files  run rg, keep the ``capacity`` newest files
    TextFiles     the kept files with binary ones dropped, sniffed as a page needs them
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from toolbound.bounds import is_binary_file
from toolbound.bounds.binary import BINARY_EXTENSIONS
from toolbound.limits import Limits
from toolbound.search.ranking import NewestFiles
from toolbound.search.rg import RgOutcome, base_args, run_rg
from toolbound.search.scope import Scope, split_nul
from toolbound.search.select import NO_SELECTION, FileSelection, is_dot_file


@dataclass(frozen=True, slots=True)
class Found:
    """The kept files, newest first, as rg printed them (relative to the scope's cwd)."""

    ranked: list[bytes]
    outcome: RgOutcome
    # True when the heap had to let files go (more matched than it holds).
    overflowed: bool


Sniff = Literal["none", "extension", "content"]

# What a walk that had nothing to search reports: no match (rg's status 1).
_NOT_RUN = RgOutcome(stopped=None, returncode=1, skipped_paths=0, stderr="")

# A batch this long is stat'ed on two threads (a 64 KB read holds ~2,500 paths).
_SPLIT_BATCH_PATHS = 512


def _binary_extension(printed: bytes) -> bool:
    ext = os.path.splitext(printed)[1].lower()
    return ext.decode("ascii", "replace") in BINARY_EXTENSIONS


async def newest_files(
    args: Sequence[str],
    *,
    scope: Scope,
    limits: Limits,
    abort: asyncio.Event,
    capacity: int,
    deadline: float,
    selection: FileSelection = NO_SELECTION,
    sniff: Sniff = "none",
) -> Found:
    """Run ``rg ARGS --null -- TARGET`` and keep the ``capacity`` newest printed files.

    Only files ``selection`` keeps are ranked (its flags are added to ARGS).
    ``sniff`` skips binary files as they would enter the heap: by extension
    only, or by extension and content. rg is stopped when ``abort`` (the
    call's) is set, with ``limits.kill_grace_s`` to go.
    """
    if sniff != "none" and scope.is_file:
        # rg searches a file named on its command line whatever its content (a
        # multi-gigabyte file of NULs to its end); the core's test comes first.
        named = scope.cwd / scope.target
        if await asyncio.to_thread(is_binary_file, named, limits=limits):
            return Found([], _NOT_RUN, overflowed=False)
    heap = NewestFiles(capacity)
    cwd = os.fsencode(scope.cwd)
    held: list[bytes] = []
    hold = selection.holds_dot_files
    keep = selection.printed_filter()

    def offer(batch: list[bytes], stats: _Stats) -> None:
        # The per-file work of every walk, done a batch at a time: one stat
        # each (in a comprehension), then only the files that can still rank
        # are looked at one by one.
        would_keep, add = heap.would_keep, heap.add
        for mtime, printed in heap.contenders(*stats.mtimes(batch)):
            if not would_keep(mtime, printed):
                continue
            if sniff != "none" and _binary_extension(printed):
                continue
            if sniff == "content" and is_binary_file(
                os.fsdecode(cwd + b"/" + printed), limits=limits
            ):
                continue
            add(mtime, printed)

    def consume(stream: IO[bytes]) -> None:
        with _Stats(cwd) as stats:
            for batch in split_nul(stream):
                if keep is not None:
                    batch = keep(batch)
                if hold and b"/." in b"\0".join(batch):
                    held.extend(p for p in batch if is_dot_file(p))
                    batch = [p for p in batch if not is_dot_file(p)]
                offer(batch, stats)

    def confirm(stream: IO[bytes]) -> None:
        waiting = set(held)
        with _Stats(cwd) as stats:
            for batch in split_nul(stream):
                offer([p for p in batch if p in waiting], stats)

    outcome = await run_rg(
        [*args, *selection.rg_args(), "--null", "--", scope.target],
        cwd=scope.cwd,
        pass_fds=scope.pass_fds,
        consume=consume,
        deadline=deadline,
        abort=abort,
        grace_s=limits.kill_grace_s,
    )
    if held and outcome.stopped is None and outcome.returncode != 2:
        await run_rg(
            [
                *base_args(explicit_path=scope.explicit),
                "--files",
                *selection.confirm_args(),
                "--null",
                "--",
                scope.target,
            ],
            cwd=scope.cwd,
            pass_fds=scope.pass_fds,
            consume=confirm,
            deadline=deadline,
            abort=abort,
            grace_s=limits.kill_grace_s,
        )
    return Found(scope.confirmed(heap.ranked()), outcome, overflowed=heap.overflowed)


def _mtimes(batch: list[bytes], cwd: bytes, cwd_fd: int | None) -> tuple[list[int], list[bytes]]:
    """The mtimes of a batch of printed paths, and the paths (those still there).

    A stat relative to the held folder descriptor resolves only the file's own
    components: about 20% less per stat than the absolute path on the
    100k-file bench tree.
    """
    prefix = b"" if cwd_fd is not None else cwd + b"/"
    stat = os.stat
    try:
        return [stat(prefix + p, dir_fd=cwd_fd).st_mtime_ns for p in batch], batch
    except OSError:
        pass  # a file is gone since rg listed it: this batch goes one by one
    mtimes: list[int] = []
    kept: list[bytes] = []
    for printed in batch:
        try:
            mtimes.append(stat(prefix + printed, dir_fd=cwd_fd).st_mtime_ns)
        except OSError:
            continue
        kept.append(printed)
    return mtimes, kept


class _Stats:
    """The mtimes of printed paths, stat'ed relative to an open descriptor of the folder.

    A large batch is split in two: the reading thread stats one half while a
    helper thread stats the other (``os.stat`` lets go of the GIL in the
    system call). On the 100k-file bench tree the stats of ``**/*`` took
    300 ms after rg had finished its walk on one thread. The descriptor is
    None (absolute paths) if the folder cannot be opened.
    """

    def __init__(self, cwd: bytes) -> None:
        self.cwd = cwd
        self.fd: int | None = None
        self._helper: ThreadPoolExecutor | None = None

    def __enter__(self) -> _Stats:
        try:
            self.fd = os.open(self.cwd, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            self.fd = None  # stat by absolute path instead
        return self

    def __exit__(self, *exc: object) -> None:
        if self._helper is not None:
            self._helper.shutdown()
        if self.fd is not None:
            os.close(self.fd)

    def mtimes(self, batch: list[bytes]) -> tuple[list[int], list[bytes]]:
        """The batch's mtimes and paths, without the files gone since rg listed them."""
        if len(batch) < _SPLIT_BATCH_PATHS:
            return _mtimes(batch, self.cwd, self.fd)
        if self._helper is None:
            self._helper = ThreadPoolExecutor(1, thread_name_prefix="toolbound-stat")
        half = len(batch) // 2
        other = self._helper.submit(_mtimes, batch[half:], self.cwd, self.fd)
        mtimes, kept = _mtimes(batch[:half], self.cwd, self.fd)
        more_mtimes, more_kept = other.result()
        return mtimes + more_mtimes, kept + more_kept


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
