"""List: a workspace folder's entries to a depth, folders first (CONTRACT section 15).

Stages: resolve ``path`` to a folder (``resolve_scope``: reached from its
root's descriptor, CONTRACT 16) -> list its files with rg (``rg --files``, the
same flags and ignore rules as Glob, so hidden and ignored entries are left
out as Glob leaves them) and fold each printed path to its first ``depth + 1``
names: the folders and files to ``depth``, and what each deepest folder
holds, to count -> add the symlinks of the listed folders (rg lists none; a
hidden one is left out) -> confirm each entry through real folders only from
the scope's descriptor (its size, its type) -> order it as a tree, each
folder's subfolders first, then its files and links, by name -> fit ``limit``
and the search budget.

A folder is listed when it holds a listed file at any depth (as ``git``
shows folders): an empty folder, or one whose files are all ignored, is not.
``entries`` counts a folder's listed files and subfolders (and its links,
for the folders above ``depth``).

The fold keeps at most ``MAX_FOLDED`` names; past it, or when the search
timeout stops rg, the listing is marked ``truncated`` and says why.

Pieces:
    run  ListArgs + context -> ListResult
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Final, Literal

from toolbound import notices
from toolbound.arguments import filled
from toolbound.context import ToolContext
from toolbound.fsroot import reach, reach_fd
from toolbound.models.listing import ListArgs, ListEntry, ListResult
from toolbound.results import ErrorCode, ToolError
from toolbound.search.ranking import fit_page, item_size
from toolbound.search.rg import base_args, raise_if_fatal, run_rg
from toolbound.search.scope import Scope, resolve_scope, split_nul

# The most distinct names the fold keeps (a tree this wide at the depth asked
# is cut and says so); each costs a tuple of a few names.
MAX_FOLDED: Final = 100_000

_LIST_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC

Kind = Literal["dir", "file", "link"]
Names = tuple[bytes, ...]


@dataclass(slots=True)
class _Fold:
    """The printed files folded to ``depth + 1`` names: every prefix, and whether it
    is a folder (a longer path went through it)."""

    depth: int
    kinds: dict[Names, Kind] = field(default_factory=dict)
    overflowed: bool = False

    def add(self, batch: Iterable[bytes]) -> None:
        kinds, deepest = self.kinds, self.depth + 1
        for printed in batch:
            names = tuple(n for n in printed.split(b"/") if n not in (b"", b"."))
            last = len(names)
            for k in range(1, min(last, deepest) + 1):
                prefix = names[:k]
                kind: Kind = "file" if k == last else "dir"
                if prefix in kinds:
                    if kind == "dir":
                        kinds[prefix] = "dir"
                    continue
                if len(kinds) >= MAX_FOLDED:
                    self.overflowed = True
                    return
                kinds[prefix] = kind


def _links(scope: Scope, folders: Iterable[Names]) -> dict[Names, Kind]:
    """The symlinks (not hidden) directly in each of ``folders`` (and the scope's own
    folder), each folder listed from a descriptor reached through real folders."""
    found: dict[Names, Kind] = {}
    for folder in ((), *folders):
        at = scope.fd if not folder else reach_fd(scope.fd, b"/".join(folder))
        if at < 0:
            continue
        try:
            listing = os.open(".", _LIST_FLAGS, dir_fd=at)
        except OSError:
            continue
        finally:
            if at != scope.fd:
                os.close(at)
        try:
            with os.scandir(listing) as entries:
                for entry in entries:
                    if entry.is_symlink() and not entry.name.startswith("."):
                        found[(*folder, os.fsencode(entry.name))] = "link"
        except OSError:
            continue
        finally:
            os.close(listing)
    return found


def _confirmed(scope: Scope, names: Names, kind: Kind) -> os.stat_result | None:
    """The entry's lstat, reached from the scope's folder through real folders only, if
    it still is of ``kind``."""
    st = reach(scope.fd, b"/".join(names))
    if st is None:
        return None
    wanted = {"dir": stat.S_ISDIR, "file": stat.S_ISREG, "link": stat.S_ISLNK}[kind]
    return st if wanted(st.st_mode) else None


def _tree_order(kinds: dict[Names, Kind], depth: int) -> list[Names]:
    """The entries to ``depth`` as a tree: under each folder its folders first, then
    the rest, each group by name; a folder's contents follow it."""
    children: dict[Names, list[Names]] = {}
    for names in kinds:
        if len(names) <= depth:
            children.setdefault(names[:-1], []).append(names)
    order: list[Names] = []
    stack: list[Names] = []

    def push(folder: Names) -> None:
        below = children.get(folder, [])
        below.sort(key=lambda n: (kinds[n] != "dir", n[-1]))
        stack.extend(reversed(below))

    push(())
    while stack:
        names = stack.pop()
        order.append(names)
        if kinds[names] == "dir":
            push(names)
    return order


def _counts(kinds: dict[Names, Kind]) -> dict[Names, int]:
    counts: dict[Names, int] = {}
    for names in kinds:
        counts[names[:-1]] = counts.get(names[:-1], 0) + 1
    return counts


async def run(args: ListArgs, ctx: ToolContext) -> ListResult:
    scope = await asyncio.to_thread(resolve_scope, ctx.roots, args.path)
    try:
        return await _list_in(args, ctx, scope)
    finally:
        scope.close()


async def _list_in(args: ListArgs, ctx: ToolContext, scope: Scope) -> ListResult:
    limits = ctx.limits
    if scope.is_file:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"List lists folders and {args.path} is a file. Read it, or give its folder as `path`.",
        )
    depth, limit = filled(args.depth), filled(args.limit)
    fold = _Fold(depth)

    def consume(stream: IO[bytes]) -> None:
        for batch in split_nul(stream):
            if not fold.overflowed:
                fold.add(batch)

    outcome = await run_rg(
        [*base_args(explicit_path=scope.explicit), "--files", "--null", "--", scope.target],
        cwd=scope.cwd,
        pass_fds=scope.pass_fds,
        consume=consume,
        deadline=time.monotonic() + limits.search_timeout_s,
        abort=ctx.abort,
        grace_s=limits.kill_grace_s,
    )
    raise_if_fatal(outcome, regex_arg="path", glob_arg="path")
    entries, total = await asyncio.to_thread(_entries, scope, fold, depth, limit, ctx)
    stopped = outcome.stopped
    shown_path = scope.shown_cwd.decode("utf-8", "surrogateescape") or "."

    def build(n: int, fit_stop: str | None) -> ListResult:
        sentences: list[str] = []
        if stopped is not None:
            sentences.append(notices.stopped(stopped, timeout_s=limits.search_timeout_s))
        if fold.overflowed:
            sentences.append(
                f"The folder holds more than {MAX_FOLDED} entries to this depth; only "
                "those found first are listed. List a subfolder, or lower `depth`."
            )
        if n < total:
            raise_to = limits.list_limit_max if limit < limits.list_limit_max else None
            step = f"raise `limit` (up to {raise_to}), " if raise_to and not fit_stop else ""
            sentences.append(
                f"Showing {n} of {total} entries (folders first); {step}lower `depth`, or "
                "List a subfolder to see the others."
            )
            if fit_stop in ("bytes", "lines"):
                sentences.append(notices.budget_reached(limits.search))
        return ListResult(
            path=shown_path,
            entries=entries[:n],
            count=n,
            truncated=n < total or stopped is not None or fold.overflowed,
            notice=notices.join(sentences),
        )

    return fit_page(build, entries, head_limit=limit, budget=limits.search, cost=_entry_size)


def _entry_size(entry: ListEntry) -> int:
    return item_size(entry.to_wire())


def _entries(
    scope: Scope, fold: _Fold, depth: int, limit: int, ctx: ToolContext
) -> tuple[list[ListEntry], int]:
    """The first ``limit`` entries to ``depth`` in tree order, each confirmed (one
    that is no longer there as listed is dropped); and how many there are."""
    kinds = fold.kinds
    above = [n for n, k in kinds.items() if k == "dir" and len(n) < depth]
    kinds.update((n, k) for n, k in _links(scope, above).items() if n not in kinds)
    counts = _counts(kinds)
    order = _tree_order(kinds, depth)
    out: list[ListEntry] = []
    dropped = 0
    for names in order:
        if len(out) >= limit:
            break
        kind = kinds[names]
        st = _confirmed(scope, names, kind)
        if st is None:
            dropped += 1
            continue
        out.append(
            ListEntry(
                path=scope.shown(ctx.roots, b"/".join(names)),
                type=kind,
                size=st.st_size if kind == "file" else None,
                entries=counts.get(names, 0) if kind == "dir" else None,
            )
        )
    return out, len(order) - dropped
