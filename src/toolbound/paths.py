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
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

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
        real = _real(joined)
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
