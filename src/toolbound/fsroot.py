"""Directory handles: every file operation reached from its root, one component at a time.

A path string checked once and opened later is a race: between the check and
the open another process (a background job, anyone) may swap a folder on the
path for a symlink to somewhere else, and ``O_NOFOLLOW`` guards only the last
component. So a tool never opens a path string below a root. It opens the
root (a trusted folder the host was given) as a descriptor and reaches the
file from it, a name at a time:

- where the kernel has ``openat2`` (Linux 5.6+), the folders of a path are
  opened in one call with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS``: the
  kernel refuses any symlink and any step above the root. Probed once; a
  kernel without it (``ENOSYS``) or a seccomp filter refusing it (``EPERM``)
  falls back to the walk below, which is as safe, only slower;
- otherwise, and whenever that call meets a symlink, each component is opened
  with ``O_NOFOLLOW | O_DIRECTORY`` at its parent's descriptor. A symlink met
  on the way is read at its parent (``readlinkat``) and its target spliced
  into the names still to walk, so a symlink inside a root that points inside
  it keeps working; ``..`` returns to the parent descriptor (the physical
  parent, as ``realpath`` has it); after 40 symlinks the walk fails with
  ``ELOOP``. A step that leaves the root (``..`` above it, an absolute target)
  raises :class:`Outside` with the absolute path it leads to: the caller
  (``paths.Roots``) decides whether another root holds it, else refuses.

What a walk returns, a :class:`Spot`, holds the descriptor of the deepest
folder it reached and the names below it that do not exist (yet). Every later
operation is a ``*at`` call on that descriptor with a single name and
``O_NOFOLLOW`` (``open``, ``mkdir``, ``rename``, ``unlink``, ``stat``), so a
swap anywhere on the path after the walk can no longer move it: the
descriptor stays on the folder it was opened on.

The API the tools use (and the 0.3 tools ApplyPatch, List, image/PDF Read and
Bash ``workdir`` are to use):

    walk(root, names, follow_last=)   -> Spot (close it; a context manager)
    Spot.open(flags, mode)            open the target at its folder's descriptor
    Spot.make_parents()               mkdirat the missing folders, descend into each
    Spot.listing_fd()                 a readable descriptor of a folder (scandir, fsync)
    Spot.proc_path                    ``/proc/self/fd/N`` of the folder, for a child's cwd
    private_dir(parent_fd, name)      a 0700 folder the host made, never a planted symlink
    reach(dir_fd, relative)           the lstat of a file below a folder descriptor,
                                      reached through no symlink (None if not so)
    reach_fd(dir_fd, relative)        the same as an O_PATH descriptor, for a child
    open_dir(path)                    a trusted folder (a root) as an O_PATH descriptor
    openat2_available()               whether the fast path is in use

Pieces:
    Outside            a walk left its root; ``path`` is where it leads
    Spot               where a walk ended: a folder descriptor and the names below it
    walk               the component walk from a root folder
    private_dir        create-or-open a private folder, refusing planted entries
    reach              a strict look-up below a descriptor (a listing's check)
    openat2_available  the kernel probe
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from functools import cache

# Linux's limit of symlinks in one lookup (MAXSYMLINKS); past it, ELOOP.
MAX_SYMLINKS = 40
# How often a component that changed between two looks is looked at again.
CHANGED_RETRIES = 3

_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LIST_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC

# openat2(2): the syscall number is shared by every architecture (asm-generic).
_SYS_OPENAT2 = 437
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_RESOLVE = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS


class Outside(Exception):
    """A walk left its root: ``path`` is the absolute path the step leads to."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


@cache
def _syscall() -> Callable[[int, str, int], int] | None:
    """``openat2`` through libc's ``syscall``, built once (ctypes is imported here only,
    when a walk first needs it), or None without a libc to call."""
    import ctypes

    class OpenHow(ctypes.Structure):
        _fields_ = [
            ("flags", ctypes.c_uint64),
            ("mode", ctypes.c_uint64),
            ("resolve", ctypes.c_uint64),
        ]

    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None

    def openat2(dir_fd: int, path: str, flags: int) -> int:
        how = OpenHow(flags, 0, _RESOLVE)
        fd = int(
            libc.syscall(
                ctypes.c_long(_SYS_OPENAT2),
                ctypes.c_int(dir_fd),
                ctypes.c_char_p(os.fsencode(path)),
                ctypes.byref(how),
                ctypes.c_size_t(ctypes.sizeof(how)),
            )
        )
        return fd if fd >= 0 else -(ctypes.get_errno() or errno.EIO)

    return openat2


def _openat2(dir_fd: int, path: str, flags: int) -> int:
    """``openat2(dir_fd, path, {flags, 0, BENEATH|NO_SYMLINKS})``, raising OSError."""
    call = _syscall()
    if call is None:
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))
    fd = call(dir_fd, path, flags)
    if fd < 0:
        raise OSError(-fd, os.strerror(-fd), path)
    return fd


@cache
def openat2_available() -> bool:
    """Whether ``openat2`` answers here (Linux 5.6+, not refused by a seccomp filter)."""
    top = os.open("/", _DIR_FLAGS)
    try:
        fd = _openat2(top, ".", _DIR_FLAGS)
    except OSError:
        return False
    finally:
        os.close(top)
    os.close(fd)
    return True


def open_dir(path: str | os.PathLike[str]) -> int:
    """A trusted folder (a root, given by the host) as an ``O_PATH`` descriptor.

    The root's own path is trusted (it is the host's argument, resolved once
    when the roots are made); its last component must still be a real folder,
    not a symlink planted since.
    """
    return os.open(path, _DIR_FLAGS)


def _is_plain(name: str) -> bool:
    return name not in ("", ".", "..")


class Spot:
    """Where a walk ended: ``dir_fd`` (owned; closed by ``close``) and ``rest``.

    ``rest`` holds the names below ``dir_fd`` up to the target: ``()`` when the
    target is the folder ``dir_fd`` itself, ``(name,)`` for an entry of it
    (``st`` is then its lstat, or None when it does not exist), longer when
    a folder on the way is missing (``st`` None) or is a file (``st`` its
    lstat): ``missing()`` says which. ``parts`` are the names from
    the root to ``dir_fd``: a path with no symlink and no ``..`` in it.
    """

    __slots__ = ("dir_fd", "parts", "rest", "st")

    def __init__(
        self,
        dir_fd: int,
        parts: list[str],
        rest: tuple[str, ...],
        st: os.stat_result | None,
    ) -> None:
        self.dir_fd = dir_fd
        self.parts = parts
        self.rest = rest
        self.st = st

    def __enter__(self) -> Spot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.dir_fd >= 0:
            fd, self.dir_fd = self.dir_fd, -1
            os.close(fd)

    @property
    def name(self) -> str:
        """The target's name in its folder ('' when the target is the folder itself)."""
        return self.rest[-1] if self.rest else ""

    @property
    def proc_path(self) -> str:
        """``/proc/self/fd/N`` of the folder: a child's cwd (pass ``N`` in ``pass_fds``)."""
        return f"/proc/self/fd/{self.dir_fd}"

    def missing(self) -> OSError | None:
        """Why the target cannot be reached, if a folder on its way is missing (ENOENT)
        or is a file (ENOTDIR); None when its folder is reached."""
        if len(self.rest) <= 1:
            return None
        if self.st is not None:
            return NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), self.rest[0])
        return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), self.rest[0])

    def open(self, flags: int, mode: int = 0o666) -> int:
        """Open the target entry at its folder's descriptor, never following a symlink."""
        if len(self.rest) != 1:
            raise self.missing() or IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), ".")
        return os.open(self.rest[0], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=self.dir_fd)

    def lstat(self) -> os.stat_result:
        """The target entry's stat now (not following a symlink), or the folder's."""
        if not self.rest:
            return os.fstat(self.dir_fd)
        return os.stat(self.rest[-1], dir_fd=self.dir_fd, follow_symlinks=False)

    def make_parents(self, mode: int = 0o777) -> None:
        """Create the missing folders on the way (``mkdirat``), descending into each;
        afterwards ``rest`` is just the target's name."""
        while len(self.rest) > 1:
            name = self.rest[0]
            # One made meanwhile by someone else is opened below, never followed.
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, mode, dir_fd=self.dir_fd)
            fd = os.open(name, _DIR_FLAGS, dir_fd=self.dir_fd)
            os.close(self.dir_fd)
            self.dir_fd = fd
            self.parts.append(name)
            self.rest = self.rest[1:]

    def listing_fd(self) -> int:
        """A readable descriptor of the folder (for ``scandir`` and ``fsync``); caller closes."""
        return os.open(".", _LIST_FLAGS, dir_fd=self.dir_fd)


def _changed(name: str) -> OSError:
    return OSError(errno.EAGAIN, "it changed while it was being opened", name)


def walk(
    root: str | os.PathLike[str],
    names: Sequence[str],
    *,
    follow_last: bool = True,
    strict: bool = False,
) -> Spot:
    """Walk ``names`` down from the folder ``root``; the Spot it reaches.

    Symlinks are followed while they stay in ``root`` (the last name's only
    when ``follow_last``); :class:`Outside` when a step leaves it. ``strict``
    follows none (names a walk resolved before: a symlink on them now was
    swapped in since, EAGAIN). OSError for a symlink loop (ELOOP), a folder
    that cannot be searched (EACCES), or a name that kept changing (EAGAIN).
    A missing name, or a file where a folder should be, ends the walk: the
    Spot's ``rest`` names what was not reached (see ``Spot.missing``).
    """
    root_fd = open_dir(root)
    try:
        fast = _walk_fast(root_fd, names)
    except BaseException:
        os.close(root_fd)
        raise
    if fast is not None:
        return fast
    return _walk(root_fd, str(root), names, follow_last=follow_last, strict=strict)


def _walk_fast(root_fd: int, names: Sequence[str]) -> Spot | None:
    """One ``openat2`` for the folders of a plain path; None when the walk must do it."""
    if len(names) < 2 or not openat2_available() or not all(map(_is_plain, names)):
        return None
    try:
        fd = _openat2(root_fd, "/".join(names[:-1]), _DIR_FLAGS)
    except OSError:
        return None  # a symlink, a missing folder, a file: the walk says which
    try:
        st = os.stat(names[-1], dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    except BaseException:
        os.close(fd)
        raise
    if st is None or stat.S_ISREG(st.st_mode):
        os.close(root_fd)
        return Spot(fd, list(names[:-1]), (names[-1],), st)
    if stat.S_ISDIR(st.st_mode):
        try:
            below = os.open(names[-1], _DIR_FLAGS, dir_fd=fd)
        except OSError:
            below = -1  # swapped since the stat: the walk looks again
        if below >= 0:
            os.close(fd)
            os.close(root_fd)
            return Spot(below, list(names), (), None)
    os.close(fd)
    return None


def _walk(
    root_fd: int, root: str, names: Iterable[str], *, follow_last: bool, strict: bool
) -> Spot:
    """The component walk (see the module docstring); takes ``root_fd`` over."""
    fds = [root_fd]
    parts: list[str] = []
    pending = deque(names)
    links = 0
    retries = 0
    try:
        while pending:
            name = pending.popleft()
            if name in ("", "."):
                continue
            if name == "..":
                if not parts:
                    raise Outside(os.path.join(os.path.dirname(root), *pending))
                os.close(fds.pop())
                parts.pop()
                continue
            last = not any(map(_is_plain, pending)) and ".." not in pending
            top = fds[-1]
            try:
                st = os.stat(name, dir_fd=top, follow_symlinks=False)
            except FileNotFoundError:
                return _end(fds, parts, (name, *pending), None)
            if stat.S_ISLNK(st.st_mode) and (follow_last or not last):
                if strict:
                    raise _changed(name)
                try:
                    target = os.readlink(name, dir_fd=top)
                except OSError as err:
                    if err.errno not in (errno.EINVAL, errno.ENOENT):
                        raise
                    retries = _retry(retries, name)
                    pending.appendleft(name)
                    continue
                links += 1
                if links > MAX_SYMLINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name)
                if target.startswith("/"):
                    raise Outside(os.path.join(target, *pending))
                pending.extendleft(reversed(target.split("/")))
                continue
            if not stat.S_ISDIR(st.st_mode):
                # The target, or a file where a folder should be (``Spot.missing`` says so).
                return _end(fds, parts, (name, *pending), st)
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=top)
            except OSError as err:
                if err.errno not in (errno.ENOTDIR, errno.ELOOP, errno.ENOENT):
                    raise
                retries = _retry(retries, name)  # swapped since the stat: look again
                pending.appendleft(name)
                continue
            fds.append(fd)
            parts.append(name)
        return _end(fds, parts, (), None)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def _retry(retries: int, name: str) -> int:
    if retries >= CHANGED_RETRIES:
        raise _changed(name)
    return retries + 1


def _end(
    fds: list[int], parts: list[str], rest: tuple[str, ...], st: os.stat_result | None
) -> Spot:
    """The Spot at the deepest descriptor; the others are closed."""
    top = fds.pop()
    for fd in fds:
        os.close(fd)
    fds.clear()
    return Spot(top, parts, tuple(n for n in rest if n not in ("", ".")), st)


def private_dir(parent_fd: int, name: str, *, mode: int = 0o700) -> int:
    """The folder ``name`` in ``parent_fd``, made by this process's user, 0700, opened.

    Made with ``mkdirat`` when missing. An entry that is not a real folder of
    this user (a symlink, a file, a folder someone else made or opened to
    others) is never written through: a symlink or file planted there is
    removed and the folder made again once; if that does not hold, OSError
    (EEXIST). Returns an ``O_PATH`` descriptor (the caller closes it).
    """
    for _ in range(2):
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, mode, dir_fd=parent_fd)
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
        except OSError as err:
            if err.errno not in (errno.ENOTDIR, errno.ELOOP):
                raise
            _remove_planted(parent_fd, name)
            continue
        st = os.fstat(fd)
        if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o077 == 0:
            return fd
        os.close(fd)
        break
    raise FileExistsError(errno.EEXIST, "not a private folder made by toolbound; remove it", name)


def _remove_planted(parent_fd: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=parent_fd)


def reach(dir_fd: int, relative: bytes) -> os.stat_result | None:
    """The lstat of ``relative`` below the folder ``dir_fd``, reached through real
    folders only (no symlink, no ``..``); None when it cannot be reached so.

    For checking what another program listed by name (rg's walk): a name that
    led through a symlink swapped in meanwhile is not reached.
    """
    fd = reach_fd(dir_fd, relative)
    if fd < 0:
        return None
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def reach_fd(dir_fd: int, relative: bytes) -> int:
    """``reach`` as an ``O_PATH`` descriptor of the entry (the caller closes it), or -1.
    A child given ``/proc/self/fd/N`` of it opens that very file."""
    names = [n for n in relative.split(b"/") if n not in (b"", b".")]
    if not names or b".." in names:
        return -1
    try:
        if openat2_available():
            return _openat2(dir_fd, os.fsdecode(b"/".join(names)), _DIR_FLAGS & ~os.O_DIRECTORY)
        fd = dir_fd
        try:
            for name in names[:-1]:
                below = os.open(name, _DIR_FLAGS, dir_fd=fd)
                if fd != dir_fd:
                    os.close(fd)
                fd = below
            return os.open(names[-1], _DIR_FLAGS & ~os.O_DIRECTORY, dir_fd=fd)
        finally:
            if fd != dir_fd:
                os.close(fd)
    except OSError:
        return -1
