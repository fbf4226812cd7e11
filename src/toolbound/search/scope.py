"""Where a search runs: the ``path`` argument resolved to a folder or file rg can walk.

rg runs with the searched folder as its working directory and ``.`` (or
``./NAME`` for a single file) as its target. That makes a glob with a slash
(``src/**/*.ts``) match relative to ``path``, and every path rg prints relative
to it, so a found file's real path is ``cwd / printed`` with no symlink in it
(rg does not follow symlinks), hence inside the same roots.

Pieces:
    Scope          the resolved search: cwd, rg target, explicit or not
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

from toolbound.paths import Roots
from toolbound.results import ErrorCode, Root, ToolError
from toolbound.search.names import shown_name

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

    def real(self, printed: bytes) -> Path:
        """The real path of a file rg printed (relative to ``cwd``)."""
        return self.cwd / os.fsdecode(printed.removeprefix(b"./"))

    def shown(self, roots: Roots, printed: bytes) -> str:
        """How the model sees a found file: workspace-relative, else absolute."""
        if self.holds_scratch:
            real = self.real(printed)
            return shown_name(os.fsencode(roots.display(real, roots.root_of(real) or self.root)))
        rel = printed.removeprefix(b"./")
        return shown_name(self.shown_cwd + b"/" + rel if self.shown_cwd else rel)


def resolve_scope(roots: Roots, path: str | None) -> Scope:
    """Resolve ``path`` (default: the workspace) into a Scope, or refuse it."""
    resolved = roots.resolve(path)
    real = resolved.real
    try:
        st = os.stat(real)
    except FileNotFoundError:
        raise ToolError(
            ErrorCode.NOT_FOUND,
            f"{path} does not exist. Check the path (Glob finds files by name), or leave "
            "`path` out to search the whole workspace.",
        ) from None
    except PermissionError:
        raise ToolError(
            ErrorCode.PERMISSION_DENIED,
            f"{path} cannot be read (permission denied). Search a folder you can read.",
        ) from None
    explicit = path not in (None, "") and real != roots.workspace
    if stat.S_ISDIR(st.st_mode):
        return _scope(roots, real, ".", explicit=explicit, is_file=False, root=resolved.root)
    if stat.S_ISREG(st.st_mode):
        return _scope(
            roots,
            real.parent,
            f"./{real.name}",
            explicit=explicit,
            is_file=True,
            root=resolved.root,
        )
    raise ToolError(
        ErrorCode.NOT_REGULAR_FILE,
        f"{path} is not a regular file or folder (a FIFO, socket or device cannot be "
        "searched). Give a file or folder.",
    )


def _scope(
    roots: Roots, cwd: Path, target: str, *, explicit: bool, is_file: bool, root: Root
) -> Scope:
    shown_cwd = roots.display(cwd, root)
    return Scope(
        cwd=cwd,
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
