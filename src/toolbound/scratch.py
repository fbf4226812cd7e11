"""Session scratch dirs and spill files (seed section 3a).

``<data_dir>/scratch/<session_id>/tool-output/<label>-<ms>-<seq>.log``: the
folder is created on the first spill only, so a session that stayed under
budget leaves nothing behind. Folders are 0700 and files 0600. A failed spill
returns None and costs the caller only the spill sentence.

A live host holds an advisory lock on ``<data_dir>/locks/<session_id>.lock``,
so a sweep in another process never removes a live session's dir.

A command may write its session's scratch dir (or, unconfined, anything the
user may), so what lies below it is never trusted: the host reaches its
folders (``tool-output``, ``jobs``, ``jobs/<jobId>``) from a descriptor of the
data dir, one ``private_dir`` step at a time (``toolbound.fsroot``), and
creates its files with ``openat(O_EXCL | O_NOFOLLOW)`` in them. A ``tool-output``
or ``jobs`` planted as a symlink to an outside folder is removed and made again
as a real folder, never written through.

Pieces:
    SessionIdError    a session id that is not one safe path component (a ValueError)
    check_session_id  refuse ids that are not one safe path component
    derived_session_id  a session id made from a foreign name (an MCP session id)
    scratch_root      where a data dir keeps the sessions' scratch dirs
    Scratch           one session's scratch dir: spill(), ensure(), open_folder(),
                      remove_entry(), remove()
    LiveLock          the lock a live host holds
    sweep             remove ended and stale sessions' dirs, never a live one's
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import re
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

from toolbound.fsroot import open_dir, private_dir
from toolbound.results import ErrorCode, ToolError

_SESSION_ID_CHARS = 128
_SESSION_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{_SESSION_ID_CHARS - 1}}}")
_LABEL = re.compile(r"[^A-Za-z0-9._-]+")
_SPILL_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class SessionIdError(ValueError):
    """A session id that is not one safe path component; the message says what is."""

    def to_tool_error(self) -> ToolError:
        """The refusal as a tool call's error, for an adapter answering a tool call."""
        return ToolError(ErrorCode.INVALID_ARGUMENT, str(self))


def check_session_id(session_id: str) -> str:
    """A session id is one path component: letters, digits, ``.``, ``_``, ``-``.

    Raises SessionIdError (a ValueError, like any bad constructor argument).
    """
    if not _SESSION_ID.fullmatch(session_id):
        raise SessionIdError(
            f"Session id {session_id!r} is not allowed: use 1-128 letters, digits, '.', '_' "
            "or '-', starting with a letter or digit."
        )
    return session_id


def derived_session_id(prefix: str, name: str) -> str:
    """A session id made from a foreign name (an MCP session id): ``prefix`` + its safe
    characters, each run of others one ``-``, cut to the longest id allowed."""
    return check_session_id(f"{prefix}{_LABEL.sub('-', name)}"[:_SESSION_ID_CHARS])


def scratch_root(data_dir: Path) -> Path:
    return data_dir / "scratch"


def _mkdir_private(path: Path, *, below: Path) -> None:
    """Create ``path`` and the folders between it and ``below``, each 0700."""
    below.mkdir(parents=True, exist_ok=True)
    for part in reversed([path, *path.parents]):
        if part == below or below not in part.parents:
            continue
        part.mkdir(mode=0o700, exist_ok=True)


class Scratch:
    """One session's scratch dir. Nothing is created until the first spill."""

    def __init__(self, data_dir: Path, session_id: str) -> None:
        self.session_id = check_session_id(session_id)
        self.data_dir = data_dir
        self.dir = scratch_root(data_dir) / session_id
        self.spill_dir = self.dir / "tool-output"
        self._seq = itertools.count()
        self._lock = threading.Lock()

    def ensure(self) -> bool:
        """Create this session's scratch dir (0700) if missing; False if it cannot exist.
        The Bash sandbox calls it: a folder must exist to be made writable."""
        if self.dir.is_dir():
            return True
        try:
            _mkdir_private(self.dir, below=self.data_dir)
        except OSError:
            return False
        return True

    def open_folder(self, *names: str) -> int:
        """The folder ``names`` below this scratch dir, each made 0700 if missing, as a
        descriptor (the caller closes it); OSError for one that is not a folder the
        host's user made (see ``fsroot.private_dir``)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        fd = open_dir(self.data_dir)
        try:
            for name in ("scratch", self.session_id, *names):
                below = private_dir(fd, name)
                os.close(fd)
                fd = below
        except BaseException:
            os.close(fd)
            raise
        return fd

    def remove_entry(self, *names: str) -> None:
        """Remove ``names`` (a folder and what it holds) below this scratch dir, reached
        through descriptors: a symlink on the way is not followed."""
        *folders, last = names
        try:
            fd = self.open_folder(*folders)
        except OSError:
            return
        try:
            shutil.rmtree(last, dir_fd=fd, ignore_errors=True)
        finally:
            os.close(fd)

    def spill(self, label: str, data: bytes) -> Path | None:
        """Write ``data`` to a new private spill file; None if that failed."""
        with self._lock:
            seq = next(self._seq)
        safe = _LABEL.sub("-", label).strip("-") or "output"
        name = f"{safe}-{int(time.time() * 1000)}-{seq}.log"
        try:
            folder = self.open_folder("tool-output")
        except OSError:
            return None
        try:
            fd = os.open(name, _SPILL_FLAGS, 0o600, dir_fd=folder)
        except OSError:
            os.close(folder)
            return None
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=folder)
            return None
        finally:
            os.close(folder)
        return self.spill_dir / name

    def remove(self) -> None:
        """Remove the whole scratch dir (a session's end)."""
        shutil.rmtree(self.dir, ignore_errors=True)


class LiveLock:
    """An advisory lock that marks a session live while a host serves it."""

    def __init__(self, data_dir: Path, session_id: str) -> None:
        self.data_dir = data_dir
        self.path = data_dir / "locks" / f"{check_session_id(session_id)}.lock"
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take a shared lock (several hosts may serve one session); False if impossible."""
        try:
            _mkdir_private(self.path.parent, below=self.data_dir)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError:
            return False
        fcntl.flock(fd, fcntl.LOCK_SH)
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            # Remove the lock file only if nobody else holds it.
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            with contextlib.suppress(OSError):
                self.path.unlink()
        except OSError:
            pass
        finally:
            os.close(fd)


def _is_live(data_dir: Path, session_id: str) -> bool:
    lock = data_dir / "locks" / f"{session_id}.lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _last_touched(path: Path) -> float:
    newest = path.lstat().st_mtime
    for sub in (path / "tool-output",):
        with contextlib.suppress(OSError):
            newest = max(newest, sub.lstat().st_mtime)
    return newest


def sweep(
    data_dir: Path,
    *,
    stale_s: float,
    is_ended: Callable[[str], bool] = lambda _sid: False,
    keep: frozenset[str] = frozenset(),
    now: float | None = None,
) -> list[str]:
    """Remove scratch dirs of ended sessions and of ones untouched for ``stale_s``.

    Never a live session's: ids in ``keep``, or held by a :class:`LiveLock` in
    any process. Returns the ids removed.
    """
    root = scratch_root(data_dir)
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    current = time.time() if now is None else now
    removed: list[str] = []
    for entry in entries:
        sid = entry.name
        if sid in keep or not entry.is_dir(follow_symlinks=False):
            continue
        if _is_live(data_dir, sid):
            continue
        try:
            stale = current - _last_touched(Path(entry.path)) > stale_s
        except OSError:
            continue
        if stale or is_ended(sid):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(sid)
    return removed
