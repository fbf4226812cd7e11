"""Roots: where a tool may look (CONTRACT section 2).

A path resolves, symlinks included, to one of three roots: the workspace
(relative paths are workspace-relative), this session's scratch dir, or a
folder approved with ``--allow-external``. Anything else is refused with
``TOOL_PATH_NOT_ALLOWED`` before it is opened. Workspace paths are shown
workspace-relative; scratch and external paths absolute.

Pieces:
    default_data_dir  --data-dir, $TOOLBOUND_DATA_DIR, $XDG_DATA_HOME, ~/.local/share
    Resolved          a resolved path, its root, and how it is shown
    Roots             the three roots; resolve() and display()
    os_error          the one map from an OSError to its TOOL_ error (a tool may word it)
    path_error        os_error in the general wording
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from toolbound.results import ErrorCode, Root, ToolError
from toolbound.search.names import real_name


def default_data_dir() -> Path:
    """$TOOLBOUND_DATA_DIR, else $XDG_DATA_HOME/toolbound, else ~/.local/share/toolbound."""
    explicit = os.environ.get("TOOLBOUND_DATA_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_DATA_HOME")
    if xdg:
        return Path(xdg) / "toolbound"
    return Path.home() / ".local" / "share" / "toolbound"


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(path))


# How often resolving is tried again when a symlink on the path changed under it.
RESOLVE_ATTEMPTS = 3


def _resolve_racing(joined: str, shown: str) -> Path:
    """``realpath``, tried again while the path changes under it, else a TOOL_ error.

    Non-strict ``realpath`` still raises when a symlink it has just seen is
    swapped or removed before it reads it (``readlink`` then fails): another
    process may do that at any moment. A settled path resolves on the next
    attempt; one that keeps changing, or cannot be looked up at all, is an
    error the model reads.
    """
    for _ in range(RESOLVE_ATTEMPTS - 1):
        try:
            return _real(joined)
        except OSError:
            continue
    try:
        return _real(joined)
    except OSError as err:
        raise path_error(err, shown) from err


# What an OSError met on a tool's path means for the model; the code follows from it.
OsErrorKind = Literal["permission", "no_space", "not_found", "too_long", "loop", "other"]

_CODES: dict[OsErrorKind, ErrorCode] = {
    "permission": ErrorCode.PERMISSION_DENIED,
    "no_space": ErrorCode.PERMISSION_DENIED,
    "not_found": ErrorCode.NOT_FOUND,
    "too_long": ErrorCode.INVALID_ARGUMENT,
    "loop": ErrorCode.NOT_FOUND,
    "other": ErrorCode.NOT_FOUND,
}


def os_error_kind(err: OSError) -> OsErrorKind:
    if isinstance(err, PermissionError) or err.errno == errno.EROFS:
        return "permission"
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        return "no_space"
    if isinstance(err, FileNotFoundError | NotADirectoryError):
        return "not_found"
    if err.errno == errno.ENAMETOOLONG:
        return "too_long"
    if err.errno == errno.ELOOP:
        return "loop"
    return "other"


def os_error(
    err: OSError,
    shown: str | None = None,
    *,
    words: Callable[[OsErrorKind], str | None] | None = None,
) -> ToolError:
    """The one map from an OSError to the TOOL_ error the model reads.

    The kind of error decides the code; ``words`` lets a tool say it in its
    own terms (Read names the file it could not read), returning None for the
    kinds it leaves to the general wording: the path changed under the call
    (another process may swap or remove any file at any moment) or the system
    refused it. ``shown`` defaults to the error's file name.
    """
    kind = os_error_kind(err)
    message = words(kind) if words is not None else None
    if message is None:
        where = shown or (os.fsdecode(err.filename) if err.filename is not None else "the path")
        message = _general_words(kind, where, err)
    return ToolError(_CODES[kind], message)


def _general_words(kind: OsErrorKind, where: str, err: OSError) -> str:
    if kind == "permission":
        return (
            f"Permission denied on {where}: toolbound's user may not read it or search a "
            "folder on its path. Use a path you have access to."
        )
    if kind == "no_space":
        return f"{where}: {err.strerror or err} (no space left). Free some space, then call again."
    if kind == "too_long":
        return f"The path is too long: {where}."
    return (
        f"{where} could not be reached ({err.strerror or err}): it or a symlink on its path "
        "changed or vanished meanwhile. Check the path (Glob lists what is there) and call again."
    )


def path_error(err: OSError, shown: str | None = None) -> ToolError:
    """An OSError met on the way from a tool's arguments to its result, in the general
    wording (``os_error`` without a tool's own words)."""
    return os_error(err, shown)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


@dataclass(frozen=True, slots=True)
class Resolved:
    """A path inside the roots: ``real`` is what gets opened, ``shown`` what the model sees."""

    real: Path
    root: Root
    shown: str


@dataclass(frozen=True, slots=True)
class Roots:
    workspace: Path
    scratch: Path
    external: tuple[Path, ...] = ()

    @classmethod
    def create(
        cls,
        workspace: str | os.PathLike[str],
        scratch: str | os.PathLike[str],
        external: Iterable[str | os.PathLike[str]] = (),
    ) -> Roots:
        return cls(_real(workspace), _real(scratch), tuple(_real(e) for e in external))

    def root_of(self, real: Path) -> Root | None:
        """The root a resolved path lies in; scratch first, as it may sit inside another."""
        if _inside(real, self.scratch):
            return "scratch"
        if _inside(real, self.workspace):
            return "workspace"
        if any(_inside(real, e) for e in self.external):
            return "external"
        return None

    def display(self, real: Path, root: Root) -> str:
        """Workspace paths relative (``.`` for the workspace itself), others absolute."""
        if root == "workspace":
            rel = os.path.relpath(real, self.workspace)
            return rel
        return str(real)

    def resolve(self, path: str | None) -> Resolved:
        """Resolve a tool's ``path`` argument, or refuse it. None means the workspace."""
        if path is None or path == "":
            return Resolved(self.workspace, "workspace", ".")
        if "\x00" in path:
            raise ToolError(ErrorCode.INVALID_ARGUMENT, "The path contains a NUL byte.")
        expanded = os.path.expanduser(path) if path.startswith("~") else path
        joined = os.path.join(self.workspace, expanded)
        if (raw := real_name(joined)) is not None and not os.path.lexists(joined):
            joined = os.fsdecode(raw)  # a non-UTF-8 name as Glob and Grep show it
        real = _resolve_racing(joined, path)
        root = self.root_of(real)
        if root is None:
            raise ToolError(
                ErrorCode.PATH_NOT_ALLOWED,
                f"{path} resolves to {real}, outside the workspace ({self.workspace}), "
                "this session's scratch dir and the approved external folders. Use a path "
                "inside the workspace, or start toolbound with --allow-external DIR to "
                "approve that folder.",
            )
        return Resolved(real, root, self.display(real, root))
