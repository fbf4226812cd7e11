"""Grep's two passes on rg: the files with a match, then their lines or counts.

Pass 1 (``walk_args``, run by ``files.newest_files``) lists the files holding
a match, stopping at each file's first one. Pass 2 searches only the kept
files again, in rank order: their lines (``content_entries``) in growing
batches until the page is full, with ``--max-count`` capping what each file
can print to what can still reach the page, or their matching-line counts
(``file_counts``). Both passes match with the same flags (``match_args``).

Pass 2 never hands rg a file by name: each file is reached from the scope's
folder descriptor through real folders only (``fsroot.reach_fd``) and given
to rg as ``/proc/self/fd/N`` (N passed to it), its records mapped back to the
name pass 1 printed. A file swapped for a symlink (or under a folder that
was) since pass 1 is not searched; rg follows a symlink named on its command
line, a descriptor it cannot.

Pieces:
    match_args  the flags that decide what matches, shared by both passes
    walk_args   pass 1's rg arguments
    SecondPass  pass 2: ``content_entries`` (the first entries by file rank, then
                line) and ``file_counts`` (matching lines per file)
"""

from __future__ import annotations

import asyncio
import functools
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from toolbound.fsroot import reach_fd
from toolbound.limits import Limits
from toolbound.models.grep import GrepArgs
from toolbound.search.files import TextFiles
from toolbound.search.matchlines import read_counts, read_records
from toolbound.search.ranking import Entry, FirstEntries
from toolbound.search.rg import RgOutcome, base_args, run_rg
from toolbound.search.scope import Scope

# Pass 2 searches files in batches that grow by this factor, starting small:
# dense matches fill the page from the first few files, sparse ones need more.
_FIRST_BATCH_FILES = 8
_BATCH_GROWTH = 4
# At most this many paths on one rg command line (keeps it far below ARG_MAX).
_MAX_BATCH_FILES = 256


def match_args(args: GrepArgs) -> list[str]:
    """The flags deciding which lines match, shared by both passes."""
    out: list[str] = []
    if args.case_insensitive:
        out.append("--ignore-case")
    if args.multiline:
        out += ["--multiline", "--multiline-dotall"]
    out += ["--regexp", args.pattern]
    return out


def walk_args(args: GrepArgs, scope: Scope) -> list[str]:
    """Pass 1: list the files with a match (rg stops reading each at its first)."""
    return [
        *base_args(explicit_path=scope.explicit),
        "--files-with-matches",
        *match_args(args),
    ]


@dataclass(frozen=True, slots=True)
class SecondPass:
    """Pass 2 of one Grep call: rg over files it names, matching as pass 1 did."""

    args: GrepArgs
    scope: Scope
    deadline: float
    limits: Limits
    abort: asyncio.Event

    async def content_entries(
        self, files: TextFiles, *, want: int
    ) -> tuple[list[Entry], list[RgOutcome]]:
        """The entries of the first ``want`` matches of ``files`` (best first), with
        their context lines, searching as few files as needed."""
        args = self.args
        # A match brings at most before + after context lines: the entries up to the
        # want-th match are at most this many.
        heap = FirstEntries(want * (1 + (args.before or 0) + (args.after or 0)))
        outcomes: list[RgOutcome] = []
        context: list[str] = []
        if args.before:
            context += ["--before-context", str(args.before)]
        if args.after:
            context += ["--after-context", str(args.after)]
        max_chars = self.limits.max_line_chars
        first, size = 0, _FIRST_BATCH_FILES
        while (need := want - heap.matches) > 0:
            await asyncio.to_thread(files.ensure, first + size)
            batch = files.text[first : first + size]
            if not batch:
                break
            ranks = {p: first + i for i, p in enumerate(batch)}

            def consume(
                stream: IO[bytes], given: dict[bytes, bytes], ranks: dict[bytes, int] = ranks
            ) -> None:
                by_given = {alias: ranks[p] for alias, p in given.items()}
                for r in read_records(stream, paths=by_given, max_chars=max_chars):
                    heap.add(by_given[r.path], r.line, r.text, r.clipped, r.context, r.column)

            flags = ["--line-number", "--column", "--no-heading", "--no-context-separator"]
            outcome = await self._run([*flags, "--max-count", str(need), *context], batch, consume)
            outcomes.append(outcome)
            if outcome.stopped is not None:
                break
            first += len(batch)
            size = min(size * _BATCH_GROWTH, _MAX_BATCH_FILES)
        return heap.ranked(), outcomes

    async def file_counts(self, files: list[bytes]) -> tuple[dict[bytes, int], list[RgOutcome]]:
        """Matching-line counts of ``files``."""
        counts: dict[bytes, int] = {}
        outcomes: list[RgOutcome] = []
        for start in range(0, len(files), _MAX_BATCH_FILES):
            batch = files[start : start + _MAX_BATCH_FILES]

            def consume(stream: IO[bytes], given: dict[bytes, bytes]) -> None:
                counts.update((given[alias], n) for alias, n in read_counts(stream, paths=given))

            outcome = await self._run(["--count"], batch, consume)
            outcomes.append(outcome)
            if outcome.stopped is not None:
                break
        return counts, outcomes

    async def _run(
        self,
        flags: list[str],
        batch: list[bytes],
        consume: Callable[[IO[bytes], dict[bytes, bytes]], None],
    ) -> RgOutcome:
        """One rg run over ``batch``: every record names its file, NUL-terminated.
        ``consume`` gets the names rg prints, each mapped to the printed path it is."""
        given, fds = await asyncio.to_thread(_reach_batch, self.scope, batch)
        try:
            if not given:
                # Every file changed since pass 1: rg given no path would search its cwd.
                return RgOutcome(stopped=None, returncode=1, skipped_paths=0, stderr="")
            return await run_rg(
                [
                    *base_args(explicit_path=True),
                    "--with-filename",
                    "--null",
                    *flags,
                    *match_args(self.args),
                    "--",
                    *given,
                ],
                cwd=self.scope.cwd,
                pass_fds=(*self.scope.pass_fds, *fds),
                consume=functools.partial(_consume_given, consume, given),
                deadline=self.deadline,
                abort=self.abort,
                grace_s=self.limits.kill_grace_s,
            )
        finally:
            for fd in fds:
                os.close(fd)


def _consume_given(
    consume: Callable[[IO[bytes], dict[bytes, bytes]], None],
    given: dict[bytes, bytes],
    stream: IO[bytes],
) -> None:
    consume(stream, given)


def _reach_batch(scope: Scope, batch: list[bytes]) -> tuple[dict[bytes, bytes], list[int]]:
    """The batch's files as names rg opens through descriptors (see the module docstring):
    ``/proc/self/fd/N`` -> printed path, and the descriptors to pass. Without a scope
    descriptor (no /proc), the printed paths themselves."""
    if scope.fd < 0:
        return {p: p for p in batch}, []
    given: dict[bytes, bytes] = {}
    fds: list[int] = []
    try:
        for printed in batch:
            fd = reach_fd(scope.fd, printed)
            if fd < 0:
                continue
            fds.append(fd)
            if stat.S_ISREG(os.fstat(fd).st_mode):
                given[b"/proc/self/fd/%d" % fd] = printed
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return given, fds
