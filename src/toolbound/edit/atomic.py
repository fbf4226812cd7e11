"""Atomic replacement of a file: the old file or the new, never a partial one.

``atomic_write`` writes the new content into a temporary file in the target's
own folder (same file system, so the rename is atomic), flushes it to disk,
gives it the old file's mode (and owner, when the process may), renames it over
the target and flushes the folder. A SIGKILL at any moment leaves the target
as it was or wholly new: before the rename the target is untouched, the rename
itself is one step of the kernel, and nothing touches the target after it.
The fsyncs make the same hold across a power cut.

Every step is a ``*at`` call on the descriptor of the target's folder
(``dir_fd``, from the walk in ``toolbound.fsroot``): the temporary is opened,
renamed, removed and the folder flushed through it, so a folder on the path
swapped for a symlink meanwhile cannot move the write elsewhere. Without a
``dir_fd`` the target's folder is opened by its path first (a trusted folder).
This module imports the standard library only (a test runs it alone).

The temporary file is created with ``O_EXCL`` and mode 0600 (the new content
is not visible to others before the old file's mode is given to it), and named
``.<name>.toolbound-<pid>-<random>.tmp``: never the target, never an existing
file, and hidden, so Glob and Grep (which skip hidden files, as ``rg --files``
does) do not list one a killed process left behind. Any failure removes it. A
process killed outright cannot remove it; the next write of the same target
sweeps such leftovers whose writer is gone (:func:`sweep_temp_files`).

A new file gets the normal mode for workspace files: 0666 less the umask (as
an editor or ``cat >`` would create it); missing parent folders 0777 less the
umask (``fsroot.Spot.make_parents``, at the parent's descriptor). Replacing a
file gives the name a new inode: hard links to the old one keep the old
content (as with ``sed -i`` and most editors).

Pieces:
    atomic_write      fill a temporary file, keep mode and owner, fsync, rename, fsync folder
    write_all         os.write until every byte is out
    temp_name         the temporary file's name for a target
    sweep_temp_files  remove temporaries of a target left by writers that are gone
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

TEMP_TAG = ".toolbound-"
TEMP_SUFFIX = ".tmp"
# A file name longer than this many bytes gets a shorter temporary name (NAME_MAX is 255).
_MAX_NAME_BYTES = 255
_TEMP_PID = re.compile(re.escape(TEMP_TAG) + r"(\d+)-[0-9a-f]+" + re.escape(TEMP_SUFFIX) + "$")
_NEW_FILE_MODE = 0o666
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_LIST_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_FOLDER_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC


def temp_name(target_name: str) -> str:
    """``.<name>.toolbound-<pid>-<random>.tmp``, hidden and unique (``O_EXCL`` makes sure)."""
    tag = f"{TEMP_TAG}{os.getpid()}-{secrets.token_hex(6)}{TEMP_SUFFIX}"
    name = f".{target_name}{tag}"
    if len(os.fsencode(name)) > _MAX_NAME_BYTES:
        return tag
    return name


def write_all(fd: int, data: bytes | memoryview) -> None:
    """Write every byte of ``data`` (``os.write`` may write fewer)."""
    view = memoryview(data)
    with view:
        while view:
            written = os.write(fd, view)
            view = view[written:]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_temp_files(folder: Path, target_name: str, *, dir_fd: int | None = None) -> int:
    """Remove the temporaries of ``target_name`` in ``folder`` (reached through
    ``dir_fd`` when given) whose writer process is gone.

    Returns how many were removed. Only names this module makes are touched.
    """
    prefix = f".{target_name}{TEMP_TAG}"
    removed = 0
    try:
        listing = os.open("." if dir_fd is not None else folder, _LIST_FLAGS, dir_fd=dir_fd)
    except OSError:
        return 0
    try:
        with os.scandir(listing) as entries:
            names = [e.name for e in entries if e.name.startswith(prefix)]
    except OSError:
        return 0
    finally:
        os.close(listing)
    for name in names:
        match = _TEMP_PID.search(name)
        if match is None or _pid_alive(int(match.group(1))):
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name if dir_fd is not None else folder / name, dir_fd=dir_fd)
            removed += 1
    return removed


def _fsync_folder(dir_fd: int) -> None:
    fd = os.open(".", _LIST_FLAGS, dir_fd=dir_fd)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _take_owner_and_mode(fd: int, like: os.stat_result) -> None:
    """The old file's owner (when this process may give it) and then its mode:
    chown clears set-user-ID bits, so the mode goes last."""
    if (like.st_uid, like.st_gid) != (os.getuid(), os.getgid()):
        with contextlib.suppress(PermissionError):
            os.fchown(fd, like.st_uid, like.st_gid)
    os.fchmod(fd, stat.S_IMODE(like.st_mode))


def atomic_write(
    target: Path,
    fill: Callable[[int], None],
    *,
    like: os.stat_result | None,
    before_rename: Callable[[], None] | None = None,
    dir_fd: int | None = None,
) -> None:
    """Replace ``target`` atomically with what ``fill(fd)`` writes to a temporary file.

    ``like`` is the stat of the file being replaced (its mode and owner are
    kept), None for a new file. ``before_rename`` runs after the content is on
    disk and before it replaces the target: it may raise to give up (the
    target is then untouched). Any failure removes the temporary file.
    ``dir_fd`` is a descriptor of the target's folder (``target.name`` is then
    the name in it); without it the folder is opened by path.
    """
    if dir_fd is None:
        folder_fd = os.open(target.parent, _FOLDER_FLAGS)
        try:
            atomic_write(target, fill, like=like, before_rename=before_rename, dir_fd=folder_fd)
        finally:
            os.close(folder_fd)
        return
    name = target.name
    sweep_temp_files(target.parent, name, dir_fd=dir_fd)
    tmp = temp_name(name)
    fd = os.open(tmp, _TEMP_FLAGS, 0o600 if like is not None else _NEW_FILE_MODE, dir_fd=dir_fd)
    try:
        try:
            fill(fd)
            if like is not None:
                _take_owner_and_mode(fd, like)
            os.fsync(fd)
        finally:
            os.close(fd)
        if before_rename is not None:
            before_rename()
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    _fsync_folder(dir_fd)
