"""Roots: where a tool may look (CONTRACT section 2).

A path resolves, symlinks included, to one of three roots: the workspace
(relative paths are workspace-relative), this session's scratch dir, or a
folder approved with ``--allow-external``. Anything else is refused with
``TOOL_PATH_NOT_ALLOWED`` before it is opened. Workspace paths are shown
workspace-relative; scratch and external paths absolute.

Resolving is a walk from the root's folder descriptor (``toolbound.fsroot``,
CONTRACT section 16), never ``realpath`` followed by an open by name: a path
is matched to the root it names lexically, walked a component at a time, and
when a symlink or ``..`` leads out of that root the walk starts again from
the root that holds where it leads (or the path is refused). Only a path that
names no root lexically (an absolute path through a symlink outside the
roots, such as a symlinked home folder) is first resolved by name, to
learn which root it reaches; the walk from that root then decides.

Pieces:
    default_data_dir  --data-dir, $TOOLBOUND_DATA_DIR, $XDG_DATA_HOME, ~/.local/share
    Resolved          a resolved path, its root, how it is shown, and how to reach it again
    Located           a Resolved with the open folder descriptor its walk reached
    Roots             the three roots; locate(), resolve() and display()
    os_error_kind     an OSError -> OsErrorKind (permission, no_space, not_found, ...)
    os_error          the one map from an OSError to its TOOL_ error (a tool may word it)
    path_error        os_error in the general wording
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from toolbound.fsroot import MAX_SYMLINKS, Outside, Spot, walk
from toolbound.names import real_name
from toolbound.results import ErrorCode, Root, ToolError


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
    if kind == "loop":
        return (
            f"{where} is a symlink loop (or leads through more than 40 symlinks) and "
            "reaches no file; use the path it was meant to point to."
        )
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
    """A path inside the roots: ``real`` names the file, ``shown`` is what the model sees.

    ``real`` is for showing and keying only; the file is reached with
    ``walk()``: from ``base`` (the root's folder) through ``parts``, names with
    no symlink and no ``..`` in them, following no symlink.
    """

    real: Path
    root: Root
    shown: str
    base: Path | None = None
    parts: tuple[str, ...] = ()

    def walk(self) -> Spot:
        """The Spot of this path now, reached again from its root (see toolbound.fsroot):
        a symlink swapped in on the way since it was resolved is an OSError (EAGAIN)."""
        if self.base is None:
            return walk(self.real.parent, [self.real.name], follow_last=False, strict=True)
        return walk(self.base, self.parts, follow_last=False, strict=True)


@dataclass(slots=True)
class Located:
    """A resolved path and the Spot its walk reached (open: close it, or use ``with``)."""

    target: Resolved
    spot: Spot

    def __enter__(self) -> Located:
        return self

    def __exit__(self, *exc: object) -> None:
        self.spot.close()


def _names(path: str) -> list[str]:
    return [c for c in path.split("/") if c not in ("", ".")]


@dataclass(frozen=True, slots=True)
class Roots:
    workspace: Path
    scratch: Path
    external: tuple[Path, ...] = ()
    # (root, folder, its names), the longest folder first: a root inside another wins.
    _prefixes: tuple[tuple[Root, Path, tuple[str, ...]], ...] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        named: list[tuple[Root, Path]] = [("scratch", self.scratch), ("workspace", self.workspace)]
        named += [("external", e) for e in self.external]
        prefixes = [(root, folder, tuple(_names(str(folder)))) for root, folder in named]
        prefixes.sort(key=lambda p: -len(p[2]))
        object.__setattr__(self, "_prefixes", tuple(prefixes))

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
        with self.locate(path) as located:
            return located.target

    def locate(self, path: str | None) -> Located:
        """Walk to a tool's ``path`` from the root that holds it, or refuse it.

        Symlinks are followed (the last one too) while they stay inside the
        roots. The Located holds the descriptor of the deepest folder reached
        (the target's own folder, or the target when it is a folder): every
        operation on the target goes through it. A path leaving the roots is
        ``TOOL_PATH_NOT_ALLOWED``; an OSError on the way (a loop, a folder that
        cannot be searched, a path that kept changing) is its TOOL_ error.
        """
        if path is None or path == "":
            spot = walk(self.workspace, [])
            return Located(Resolved(self.workspace, "workspace", ".", self.workspace), spot)
        if "\x00" in path:
            raise ToolError(ErrorCode.INVALID_ARGUMENT, "The path contains a NUL byte.")
        expanded = os.path.expanduser(path) if path.startswith("~") else path
        joined = os.path.join(self.workspace, expanded)
        if (raw := real_name(joined)) is not None and not os.path.lexists(joined):
            joined = os.fsdecode(raw)  # a non-UTF-8 name as Glob and Grep show it
        where = joined
        for _ in range(MAX_SYMLINKS):
            root, base, names = self._root_for(where, path)
            try:
                spot = walk(base, names)
            except Outside as out:
                where = out.path
                continue
            except OSError as err:
                raise path_error(err, path) from None
            parts = (*spot.parts, *spot.rest)
            real = base.joinpath(*parts)
            if base is self.workspace and ".." not in parts:
                shown = "/".join(parts) or "."  # what display() gives, without relpath's walk
            else:
                shown = self.display(real, root)
            return Located(Resolved(real, root, shown, base, parts), spot)
        raise path_error(OSError(errno.ELOOP, os.strerror(errno.ELOOP), path), path)

    def _root_for(self, where: str, path: str) -> tuple[Root, Path, list[str]]:
        """The root whose folder ``where`` names lexically, and the names below it.

        A path that names none may still reach one through a symlink outside
        the roots: resolved by name only to learn which (the walk decides).
        """
        found = self._lexical(where)
        if found is not None:
            return found
        real = _resolve_racing(where, path)
        found = self._lexical(str(real)) if self.root_of(real) is not None else None
        if found is None:
            raise ToolError(
                ErrorCode.PATH_NOT_ALLOWED,
                f"{path} resolves to {real}, outside the workspace ({self.workspace}), "
                "this session's scratch dir and the approved external folders. Use a path "
                "inside the workspace, or start toolbound with --allow-external DIR to "
                "approve that folder.",
            )
        return found

    def _lexical(self, where: str) -> tuple[Root, Path, list[str]] | None:
        names = _names(where)
        for root, folder, prefix in self._prefixes:
            if tuple(names[: len(prefix)]) == prefix:
                return root, folder, names[len(prefix) :]
        return None
