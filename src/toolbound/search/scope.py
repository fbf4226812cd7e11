"""Where a search runs: the ``path`` argument resolved to a folder or file rg can walk.

rg runs with the searched folder as its working directory and ``.`` (or
``./NAME`` for a single file) as its target. That makes a glob with a slash
(``src/**/*.ts``) match relative to ``path``, and every path rg prints relative
to it, so a found file's real path is ``cwd / printed`` with no symlink in it
(rg does not follow symlinks), hence inside the same roots.

The folder is reached by the walk from its root's descriptor (``Roots.locate``,
CONTRACT section 16), and rg's working directory is that descriptor itself:
``/proc/self/fd/N`` with ``N`` passed to the child, so a folder on the path
swapped for a symlink after the walk cannot move the search elsewhere. The
host's own stats and sniffs of the files rg prints start from the same
descriptor. What stays path-based is rg's own walk below that folder: it reads
subfolders by name, so a subfolder swapped for a symlink in the instant
between rg listing it and opening it could let rg read that one subtree
through the symlink (rg never follows a symlink it lists). The files it names
are therefore confirmed (``Scope.confirmed``: reached again from the
descriptor through real folders only) before any is ranked, shown or searched
again, so such a name never reaches a result. Where ``/proc`` is not mounted,
the folder's path is used instead.

A Scope holds its descriptor: ``close()`` it when the search is done.

Pieces:
    Scope          the resolved search: cwd (a descriptor), rg target, explicit or not
    resolve_scope  ``path`` -> Scope, or TOOL_PATH_NOT_ALLOWED / TOOL_NOT_FOUND / …
    split_nul      stream of NUL-terminated paths -> lists of paths
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from toolbound.fsroot import Spot, reach
from toolbound.names import shown_name
from toolbound.paths import Located, Roots
from toolbound.results import ErrorCode, Root, ToolError

# Where a descriptor of this process is a path (the child's own, once passed to it).
_PROC_FDS = "/proc/self/fd"
# Bytes asked of a pipe per read: enough to keep up with rg, small enough to stream.
_READ_CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Scope:
    """A resolved search.

    ``cwd`` is rg's working directory, ``target`` its one search path (``.`` or
    ``./NAME``); ``explicit`` is true when the agent named a path other than
    the workspace, which lifts parent ignore files (seed section 3a).
    """

    cwd: Path
    target: str
    explicit: bool
    is_file: bool
    root: Root
    # How ``cwd`` is shown (b"" for the workspace itself), as bytes, so a found
    # file is shown by concatenation, not a path computation per file.
    shown_cwd: bytes
    # True when this session's scratch dir lies inside ``cwd``: its files are
    # shown as scratch files (absolute), so each path needs its own root.
    holds_scratch: bool
    # The folder's real path (``cwd`` is its descriptor's /proc path), and that
    # descriptor, owned by the Scope (-1 when there is none).
    real_cwd: Path
    fd: int = -1

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """The descriptors rg must inherit for ``cwd`` to name its folder."""
        return (self.fd,) if self.fd >= 0 else ()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)

    def confirmed(self, printed: list[bytes]) -> list[bytes]:
        """The printed files that are still reached from the scope's folder through
        real folders only (see the module docstring), in order: a name rg found
        through a folder swapped for a symlink during its walk is dropped."""
        if self.fd < 0:
            return printed
        at = self.fd
        kept = []
        for p in printed:
            st = reach(at, p)
            if st is not None and stat.S_ISREG(st.st_mode):
                kept.append(p)
        return kept

    def real(self, printed: bytes) -> Path:
        """The real path of a file rg printed (relative to ``cwd``)."""
        return self.real_cwd / os.fsdecode(printed.removeprefix(b"./"))

    def shown(self, roots: Roots, printed: bytes) -> str:
        """How the model sees a found file: workspace-relative, else absolute."""
        if self.holds_scratch:
            real = self.real(printed)
            return shown_name(os.fsencode(roots.display(real, roots.root_of(real) or self.root)))
        rel = printed.removeprefix(b"./")
        return shown_name(self.shown_cwd + b"/" + rel if self.shown_cwd else rel)


def resolve_scope(roots: Roots, path: str | None) -> Scope:
    """Resolve ``path`` (default: the workspace) into a Scope (holding the folder's
    descriptor: close it), or refuse it."""
    located = roots.locate(path)
    try:
        return _located_scope(roots, path, located)
    except BaseException:
        located.spot.close()
        raise


def _located_scope(roots: Roots, path: str | None, located: Located) -> Scope:
    resolved, spot = located.target, located.spot
    real = resolved.real
    if spot.missing() is not None or (spot.rest and spot.st is None):
        raise ToolError(
            ErrorCode.NOT_FOUND,
            f"{path} does not exist. Check the path (Glob finds files by name), or leave "
            "`path` out to search the whole workspace.",
        )
    explicit = path not in (None, "") and real != roots.workspace
    if not spot.rest:
        return _scope(
            roots, real, ".", explicit=explicit, is_file=False, root=resolved.root, spot=spot
        )
    assert spot.st is not None
    if stat.S_ISREG(spot.st.st_mode):
        return _scope(
            roots,
            real.parent,
            f"./{real.name}",
            explicit=explicit,
            is_file=True,
            root=resolved.root,
            spot=spot,
        )
    raise ToolError(
        ErrorCode.NOT_REGULAR_FILE,
        f"{path} is not a regular file or folder (a FIFO, socket or device cannot be "
        "searched). Give a file or folder.",
    )


def _scope(
    roots: Roots,
    cwd: Path,
    target: str,
    *,
    explicit: bool,
    is_file: bool,
    root: Root,
    spot: Spot,
) -> Scope:
    """The Scope in the walk's folder; the Spot's descriptor passes to it."""
    shown_cwd = roots.display(cwd, root)
    held, spot.dir_fd = spot.dir_fd, -1
    through = Path(f"{_PROC_FDS}/{held}") if os.path.isdir(_PROC_FDS) else cwd
    return Scope(
        cwd=through,
        real_cwd=cwd,
        fd=held,
        target=target,
        explicit=explicit,
        is_file=is_file,
        root=root,
        shown_cwd=b"" if shown_cwd == "." else os.fsencode(shown_cwd),
        holds_scratch=root != "scratch" and roots.scratch.is_relative_to(cwd),
    )


def split_nul(stream: IO[bytes]) -> Iterator[list[bytes]]:
    """The NUL-terminated paths of a stream, a list per read as they arrive.

    Lists, not single paths, so a consumer filters each read with one
    comprehension instead of a Python call per path.
    """
    rest = b""
    read1 = getattr(stream, "read1", stream.read)
    while chunk := read1(_READ_CHUNK_BYTES):
        parts = (rest + chunk).split(b"\0")
        rest = parts.pop()
        yield parts
    if rest:
        yield [rest]
