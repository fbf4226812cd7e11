"""Read: one window of a text file, byte-faithful, bounded, never blocking.

A call is a chain of stages, in a worker thread (or, for a small file on a
local file system, on the event loop: ``runs_inline``):
walk to the path from its root's folder descriptor (``Roots.locate``; the
file is then opened at its folder's descriptor, so no symlink swapped in on
the way can lead the open outside the roots) -> stat it and refuse what is
not a regular file (before anything is opened, so a FIFO with no writer
cannot block) -> open it non-blocking and check it is still that file -> an
image or a PDF goes to ``read_media`` (CONTRACT 15) -> refuse other binary content
-> locate the window's first line with the file's line index -> build the
page from the lines that follow -> the result and its notice.

Read never refuses on size and never holds the file: the index scans in
blocks, the page holds O(window) bytes. A call aborted while a long first
scan counts lines stops between blocks and returns an empty window whose
notice says so; what was counted is kept for the next call.

The economy profile (CONTRACT section 8) changes two things, both here:

- the window: ``window_for`` sizes every window, the one place it is decided
  (the economy's default is ``limits.economy.read_window``'s lines within its bytes,
  measured by bench/economy.py; a call's own ``limit`` is kept);
- a re-read: a window whose bytes and text are what an earlier Read of the same
  window (same ``offset`` and ``limit``) returned while that result is still in
  the model's context (no checkpoint of the session since: the read record
  follows the store's checkpoint count before it answers) comes back
  ``unchanged: true`` with no content and a notice naming the earlier call. It
  is judged by content hash (the window's bytes and the text made of them),
  never by mtime. The fact stays recoverable: Read with another offset or
  limit returns the text in full, and after a checkpoint so does the same Read.
  A re-read is answered this way only when the notice is shorter than the text;
- a window with a clipped line names Grep on the file as the way to the rest
  of it (Grep shows each match with the part of its line around it).

Pieces:
    run            the tool: ReadArgs -> ReadResult (or a ToolError)
    runs_inline    whether a call runs on the event loop; local_mounts, all_local
    Window         how much one Read returns; window_for sizes it for a call
    read_window    the blocking body of run
    window_limits  the limits with a window's budget as their search budget (kept)
    describe_kind  what a non-regular file is, for refusals
"""

from __future__ import annotations

import asyncio
import collections
import difflib
import errno
import functools
import itertools
import os
import shlex
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from toolbound import busy, notices
from toolbound.bounds import sniff_binary
from toolbound.bounds.binary import BinaryVerdict
from toolbound.bounds.outline import outline
from toolbound.bounds.paging import (
    Page,
    build_page,
    head_bytes_for,
    iter_raw_lines,
    quick_page,
)
from toolbound.edit.record import ReadRecord, Seen, content_digest
from toolbound.fsroot import Spot
from toolbound.limits import Budget, Limits, human_size
from toolbound.models.read import ReadArgs, ReadResult
from toolbound.paths import OsErrorKind, Resolved, Roots, os_error
from toolbound.results import ErrorCode, ToolError
from toolbound.tools import ToolContext, read_media
from toolbound.tools.lineindex import INDEXES, FileKey, ScanStopped
from toolbound.tools.read_media import MediaResult

# The page reads this much at a time; a window is at most 48 KB of text, so one
# or two reads cover it unless lines are clipped.
PAGE_READ_BYTES = 64 * 1024
# A Read of a regular file at most this big runs on the event loop (runs_inline).
INLINE_MAX_BYTES = 64 * 1024
# A folder listing for "did you mean" suggestions stops after this many names.
SUGGEST_SCAN_NAMES = 5000
SUGGEST_NAMES = 3

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


async def run(args: ReadArgs, ctx: ToolContext) -> ReadResult | MediaResult:
    """Read the window ``args.offset .. +limit`` of ``args.path`` (CONTRACT section 4)."""
    window = window_for(args, ctx)
    read = functools.partial(
        read_window,
        ctx.roots,
        args.path,
        offset=args.offset,
        limit=window.lines,
        pages=args.pages,
        limits=ctx.limits,
        stop=ctx.abort.is_set,
        record=ctx.record,
        call_id=ctx.tool_call_id,
        budget=window.budget,
        hints=ctx.budgets.profile.read_hints,
    )
    result = read() if runs_inline(args, ctx) else await asyncio.to_thread(read)
    if window.notice is None or not isinstance(result, ReadResult) or not result.truncated:
        return result  # a budget that cut nothing needs no word
    said = notices.join([s for s in (result.notice, window.notice) if s])
    return result.model_copy(update={"notice": said})


def runs_inline(args: ReadArgs, ctx: ToolContext) -> bool:
    """Whether this Read runs on the event loop rather than in a worker thread.

    A thread hop costs a small Read more than its work (bench/mcp.py: 0.47 ms of a
    3.2 ms round trip over MCP), so a Read that cannot block runs inline: a
    regular file of at most ``INLINE_MAX_BYTES`` (the path as given, stat'ed only to
    decide; the read itself still walks from the root), not a PDF, while every
    file system mounted is a local one (``local_mounts``), without a
    checkpoint count that would wait on the store (PostgreSQL), and while no
    other call or recorder works in this process (``busy.alone``: beside a busy
    thread each system call waits for the GIL). Anything else, or anything
    unsure, takes the thread.
    """
    record = ctx.record
    if record.checkpoint_count is not None and not record.counts_on_loop:
        return False
    if not busy.alone():
        return False
    if args.pages is not None or not local_mounts():
        return False
    path = Path(args.path)
    try:
        st = os.stat(path if path.is_absolute() else ctx.roots.workspace / path)
    except (OSError, ValueError):
        return False
    return (
        stat.S_ISREG(st.st_mode)
        and st.st_size <= INLINE_MAX_BYTES
        and path.suffix.lower() != ".pdf"
    )


# File systems that answer from this machine: a read on them never waits on a network
# or a user-space server (pseudo file systems included, as they are always mounted).
LOCAL_FS_TYPES = frozenset(
    {
        "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "zfs", "vfat", "exfat",
        "squashfs", "iso9660", "overlay", "tmpfs", "ramfs", "devtmpfs", "devpts",
        "proc", "sysfs", "cgroup", "cgroup2", "mqueue", "hugetlbfs", "debugfs",
        "tracefs", "securityfs", "pstore", "bpf", "configfs", "fusectl",
        "binfmt_misc", "efivarfs", "nsfs", "rpc_pipefs", "selinuxfs",
    }
)  # fmt: skip
# How long the mount table's verdict is kept before it is read again.
MOUNTS_RECHECK_S = 5.0
_mounts_verdict: tuple[float, bool] = (-MOUNTS_RECHECK_S, False)


def local_mounts() -> bool:
    """Whether every file system mounted here is local (``LOCAL_FS_TYPES``): no NFS,
    SMB, FUSE or automount point whose reads could block. Read again every
    ``MOUNTS_RECHECK_S`` seconds."""
    global _mounts_verdict
    checked, verdict = _mounts_verdict
    now = time.monotonic()
    if now - checked < MOUNTS_RECHECK_S:
        return verdict
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            verdict = all_local(f.read())
    except OSError:
        verdict = False
    _mounts_verdict = (now, verdict)
    return verdict


def all_local(mountinfo: str) -> bool:
    """Whether every mount of a ``/proc/self/mountinfo`` text has a local type."""
    for line in mountinfo.splitlines():
        _, sep, after = line.partition(" - ")
        if not sep or after.split(" ", 1)[0] not in LOCAL_FS_TYPES:
            return False
    return True


@dataclass(frozen=True, slots=True)
class Window:
    """How much one Read returns: ``lines`` lines at most, within ``budget`` (whose
    ``max_lines`` caps a call's own limit). ``notice``, when set, is a sentence the
    result's notice ends with (a budget shrunken as the context fills names itself)."""

    lines: int
    budget: Budget
    notice: str | None = None


def window_for(args: ReadArgs, ctx: ToolContext) -> Window:
    """The window of a Read call: the one place its size is decided.

    Exact: the seed's table (the call's limit, default 2000 lines, within 48 KB).
    Economy: ``limits.economy.read_window`` (150 lines within 12 KB, never more
    than exact's), or the call's own limit within those bytes. The arguments
    arrive with a limit left out filled with the host default
    (``limits.read_window_lines``), so a limit of exactly that reads as left out.

    Why 200 lines / 16 KB: ``bench/economy.py --windows`` reads the trace's 19
    Read calls through this Read per window and pages each on to its needle.
    Against exact's 2000 lines / 48 KB, 200 / 16 KB shows the first pages in
    87,509 bytes instead of 356,882 (13 of 19 needles on the first page instead
    of 16) and reaches every needle within 2000 lines in 165,584 bytes instead
    of 339,413, for 31 pages instead of 20; 100 lines saves 12% more bytes for
    15 more pages (SWE-agent's ablation found a 100-line viewer solves more
    tasks than a whole file; 200 keeps most of the byte gain in fewer calls).
    Since a window that stops short names the file's top-level definitions
    further on (``_with_outline``), 150 lines / 12 KB hides no more of the
    trace's needles than 200 / 16 KB did, for 0.46x Codex CLI's bytes instead
    of 0.54x (issue 30).

    The call's budgets (``ctx.budgets``: the profile's window, shrunk as the
    model's context fills, within the client's per-result cap) apply here, on
    ``budget``, with their sentence on ``Window.notice``.
    """
    limits, budgets = ctx.limits, ctx.budgets
    asked = args.limit if args.limit is not None else limits.read_window_lines
    base = budgets.profile.read_window(limits)
    if base is None:  # the seed's window: the call's limit within the search budget
        if not budgets.fit.capped:
            return Window(asked, limits.search)
        budget, notice = budgets.budget("Read", limits.search)
        return Window(min(asked, budget.max_lines), budget, notice)
    # As the context fills the window shrinks (a call's own limit with it).
    budget, notice = budgets.budget("Read", base)
    lines = budget.max_lines if asked == limits.read_window_lines else asked
    if notice is not None:
        lines = min(lines, budget.max_lines)
    return Window(lines, Budget(budget.max_bytes, limits.search.max_lines), notice)


def read_window(
    roots: Roots,
    path: str,
    *,
    offset: int,
    limit: int,
    limits: Limits,
    stop: Callable[[], bool] = lambda: False,
    record: ReadRecord | None = None,
    call_id: str = "",
    budget: Budget | None = None,
    hints: bool = False,
    pages: str | None = None,
) -> ReadResult | MediaResult:
    """The blocking body of Read: resolve, stat, open, sniff, locate, page.

    An image or a PDF is read by ``read_media`` (``pages`` picks a PDF's pages);
    every other file gives a ReadResult.

    ``stop`` is polled while a long scan counts lines (the call's abort).
    ``record``, when given, learns the window returned (call ``call_id``);
    with ``hints`` (``Profile.read_hints``) it also answers whether the window is
    a re-read of one still in the model's context, and a cut window names what
    lies beyond it (see the module docstring).
    ``budget`` bounds the window (``limits.search`` when None).
    """
    # The window's budget stands in for the search budget it defaults to.
    window = limits if budget in (None, limits.search) else window_limits(limits, budget)
    with roots.locate(path) as located:
        target = located.target
        before = _stat(located.spot, target)
        _refuse_non_file(target, before)
        fd = _open(located.spot, target, before)
    try:
        st = os.fstat(fd)
        media = _media(fd, target, st, pages, window, stop)
        if media is not None:
            return media
        _refuse_binary(fd, target, st, limits)
        result, seen = _page(
            fd, target, FileKey.of(st), offset=offset, limit=limit, limits=window, stop=stop
        )
        if hints and seen is not None and not seen.at_eof:
            result = _with_outline(fd, result, seen.end, st.st_size, limits)
    except OSError as err:
        raise _os_error(err, target) from None
    finally:
        os.close(fd)
    if seen is None:
        return result
    if hints and seen.clipped_lines:
        said = [*filter(None, [result.notice]), notices.read_clipped_grep(target.shown)]
        result = result.model_copy(update={"notice": notices.join(said)})
    if record is None:
        return result
    text_digest = ""
    if hints:
        text_digest = _text_digest(result)
        earlier = _earlier_in_context(
            record, target.real, offset=offset, limit=limit, digest=seen.digest, text=text_digest
        )
        if earlier is not None:
            unchanged = _unchanged(result, earlier)
            if _text_size(unchanged) < _text_size(result):
                return unchanged
    record.saw_window(
        target.real,
        call_id=call_id,
        offset=offset,
        limit=limit,
        line_count=result.line_count,
        start_byte=seen.start,
        end_byte=seen.end,
        at_eof=seen.at_eof,
        digest=seen.digest,
        text_digest=text_digest,
    )
    return result


# The limits of recent windows, by their limits' id and budget: a copy of the
# limits is checked again as it is made (about 15 us a Read, bench/mcp.py).
_WINDOW_LIMITS: dict[tuple[int, Budget], tuple[Limits, Limits]] = {}
_WINDOW_LIMITS_KEPT = 64


def window_limits(limits: Limits, budget: Budget) -> Limits:
    """``limits`` with ``budget`` as the search budget, made once per pair."""
    key = (id(limits), budget)
    kept = _WINDOW_LIMITS.get(key)
    if kept is not None and kept[0] is limits:
        return kept[1]
    made = limits.replace(search=budget)
    if len(_WINDOW_LIMITS) >= _WINDOW_LIMITS_KEPT:
        _WINDOW_LIMITS.clear()
    _WINDOW_LIMITS[key] = (limits, made)
    return made


def _text_digest(result: ReadResult) -> str:
    """The digest of the text a Read result shows: its content, then its notice."""
    notice = (result.notice or "").encode()
    return content_digest(result.content.encode() + b"\0" + notice)


def _text_size(result: ReadResult) -> int:
    return len(result.content) + len(result.notice or "")


def _earlier_in_context(
    record: ReadRecord, real: Path, *, offset: int, limit: int, digest: str, text: str
) -> Seen | None:
    """The earlier Read of this window, with these bytes and this text, still in the
    model's context: after the record followed the session's checkpoints (None when
    their count cannot be learned: then nobody can say the result is still there).
    Asked before every economy window is recorded, so a window read after a
    checkpoint is recorded in the context it was read in."""
    if record.checkpoint_count is not None:
        count = record.checkpoint_count()
        if count is None:
            return None
        record.follow_checkpoints(count)
    return record.earlier_read(real, offset=offset, limit=limit, digest=digest, text_digest=text)


def _unchanged(result: ReadResult, earlier: Seen) -> ReadResult:
    """``result`` answered as a re-read of ``earlier``: no content, the notice naming it."""
    continues = None if result.total_lines is not None else result.offset + result.line_count
    notice = notices.read_unchanged(
        call_id=earlier.call_id,
        offset=result.offset,
        line_count=result.line_count,
        next_offset=continues,
    )
    return result.model_copy(update={"content": "", "notice": notice, "unchanged": True})


def _stat(spot: Spot, target: Resolved) -> os.stat_result:
    """What the walk found at the target (a folder: the one it reached)."""
    try:
        if (missing := spot.missing()) is not None:
            raise missing
        if not spot.rest:
            return os.fstat(spot.dir_fd)
        if spot.st is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), spot.name)
        return spot.st
    except OSError as err:
        raise _os_error(err, target, spot) from None


def _refuse_non_file(target: Resolved, st: os.stat_result) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(
            ErrorCode.IS_DIRECTORY,
            f"{target.shown} is a directory; Read reads files. List what it holds with Glob "
            f'(path "{target.shown}", pattern "*"), then Read one of the files.',
        )
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(
            ErrorCode.NOT_REGULAR_FILE,
            f"{target.shown} is a {describe_kind(st.st_mode)}, not a regular file. Read does "
            "not open it (reading could block or never end); read a regular file instead.",
        )


def describe_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISFIFO(mode):
        return "FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    return "special file"


def _open(spot: Spot, target: Resolved, before: os.stat_result) -> int:
    """Open at its folder's descriptor without blocking or following a late symlink;
    check it is the file stat saw."""
    try:
        fd = spot.open(_OPEN_FLAGS)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise _changed(target) from None
        raise _os_error(err, target, spot) from None
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
            raise _changed(target)
        _refuse_non_file(target, st)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _changed(target: Resolved) -> ToolError:
    return ToolError(
        ErrorCode.NOT_FOUND,
        f"{target.shown} was replaced while it was being opened; call Read again.",
    )


def _media(
    fd: int,
    target: Resolved,
    st: os.stat_result,
    pages: str | None,
    limits: Limits,
    stop: Callable[[], bool],
) -> MediaResult | None:
    """An image or a PDF, read by ``read_media``; None for any other file (``pages``
    given for one is refused)."""
    kind = read_media.media_kind(os.pread(fd, 16, 0))
    if kind == read_media.PDF:
        return read_media.read_pdf(
            fd, target, st, pages=pages, limits=limits, budget=limits.search, stop=stop
        )
    if pages is not None:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"'pages' is for a PDF and {target.shown} is not one; leave `pages` out "
            "(`offset` and `limit` page a text file).",
        )
    if kind is not None:
        return read_media.read_image(fd, target, st, kind)
    return None


# Files judged text, by their key (as the line index keys them: a file that changed is
# judged again), name and the sniff's limits: a re-read skips the sniff's read and scan
# (its pread and scan of a 4 KB head: about 18 us, timeit).
_JUDGED_TEXT: collections.OrderedDict[tuple[FileKey, str, int, float], None] = (
    collections.OrderedDict()
)
_JUDGED_TEXT_KEPT = 64
_judged_lock = threading.Lock()


def _refuse_binary(fd: int, target: Resolved, st: os.stat_result, limits: Limits) -> None:
    judged = (
        FileKey.of(st),
        target.real.name,
        limits.binary_sniff_bytes,
        limits.binary_nonprintable_ratio,
    )
    if judged in _JUDGED_TEXT:  # a lookup is safe from any thread; changes take the lock
        return
    head = os.pread(fd, limits.binary_sniff_bytes, 0)
    verdict = sniff_binary(target.real.name, head, limits=limits)
    if verdict is None:
        with _judged_lock:
            _JUDGED_TEXT[judged] = None
            if len(_JUDGED_TEXT) > _JUDGED_TEXT_KEPT:
                _JUDGED_TEXT.popitem(last=False)
        return
    quoted = shlex.quote(target.shown)
    raise ToolError(
        ErrorCode.BINARY_CONTENT,
        f"{target.shown} is binary, not text: likely {verdict.likely_type}, "
        f"{human_size(st.st_size)} ({_why(verdict, limits)}). Read shows text only. "
        f"Inspect it with Bash instead: `file {quoted}` or `xxd {quoted} | head -n 20`.",
    )


def _why(verdict: BinaryVerdict, limits: Limits) -> str:
    sniffed = f"its first {human_size(limits.binary_sniff_bytes, exact=False)}"
    if verdict.reason == "extension":
        return "judged by its extension"
    if verdict.reason == "nul":
        return f"{sniffed} hold NUL bytes"
    share = round(limits.binary_nonprintable_ratio * 100)
    return f"over {share}% of {sniffed} is not printable text"


def _with_outline(fd: int, result: ReadResult, end: int, size: int, limits: Limits) -> ReadResult:
    """Economy: a window that stopped before the file's end names the top-level
    definitions after it (bounds/outline.py), searched in the bytes that follow."""
    economy = limits.economy
    if economy.outline_entries == 0 or economy.outline_scan_bytes == 0:
        return result
    data = os.pread(fd, min(economy.outline_scan_bytes, size - end), end)
    found = outline(
        data,
        first_line=result.offset + result.line_count + 1,
        max_entries=economy.outline_entries,
        max_line_chars=economy.outline_line_chars,
    )
    if not found.entries:
        return result
    listed = [(d.line, d.text) for d in found.entries]
    said = [*filter(None, [result.notice]), notices.read_outline(listed, more=found.more)]
    return result.model_copy(update={"notice": notices.join(said)})


def _page(
    fd: int,
    target: Resolved,
    key: FileKey,
    *,
    offset: int,
    limit: int,
    limits: Limits,
    stop: Callable[[], bool],
) -> tuple[ReadResult, _Seen | None]:
    """Locate line ``offset`` with the index, then take the window that starts there;
    with it, the file bytes the window shows (None when it shows none)."""

    def read_into(buf: memoryview, pos: int) -> int:
        return os.preadv(fd, [buf], pos)

    def read_at(pos: int, size: int) -> bytes:
        return os.pread(fd, size, pos)

    max_lines = min(limit, limits.search.max_lines)
    try:
        located = INDEXES.get(key).locate(offset, read_into, stop=stop)
    except ScanStopped as stopped:
        return _stopped(target, key, offset=offset, counted=stopped.lines), None
    seen: _Seen | None = None
    if located.start is None:
        page = Page("", 0, 0, 0, 0, "eof")
        # An empty window still showed where the file ends (an empty file: all of it).
        seen = _Seen(key.size, key.size, True, content_digest(b""))
        total: int | None = located.total_lines
        reached_eof = True
    else:
        page, seen = _take_window(
            read_at, located.start, key.size, max_lines=max_lines, limits=limits
        )
        reached_eof = located.start + page.raw_bytes >= key.size
        total = offset + page.line_count if reached_eof else None
    notice = notices.read_window(
        offset=offset,
        page=page,
        reached_eof=reached_eof,
        total_lines=total,
        limit_lines=max_lines,
        max_bytes=limits.search.max_bytes,
        max_line_chars=limits.max_line_chars,
    )
    result = ReadResult(
        path=target.shown,
        root=target.root,
        content=page.text,
        offset=offset,
        line_count=page.line_count,
        total_lines=total,
        file_bytes=key.size,
        truncated=not reached_eof or page.clipped_lines > 0,
        notice=notice,
    )
    return result, seen


def _stopped(target: Resolved, key: FileKey, *, offset: int, counted: int) -> ReadResult:
    """The result of a call aborted while counting its way to ``offset``: no window."""
    return ReadResult(
        path=target.shown,
        root=target.root,
        content="",
        offset=offset,
        line_count=0,
        file_bytes=key.size,
        truncated=True,
        notice=notices.read_aborted(offset=offset, counted=counted),
    )


@dataclass(frozen=True, slots=True)
class _Seen:
    """File bytes ``start .. end`` of a window, hashing to ``digest`` (for the read record);
    ``clipped_lines``: how many of its lines were clipped (the economy names Grep for them)."""

    start: int
    end: int
    at_eof: bool
    digest: str
    clipped_lines: int = 0


def _take_window(
    read_at: Callable[[int, int], bytes], start: int, size: int, *, max_lines: int, limits: Limits
) -> tuple[Page, _Seen]:
    """The page from ``start``: from one read when no line needs repair, else line by line.

    With it, what the window showed for the read record, hashed from the first
    read's bytes (already in hand, at most the budget plus one line head): the
    window's raw bytes, or, when clipped lines make them longer than that read,
    the part of them it holds (the heads the model saw start there).
    """
    head_bytes = head_bytes_for(limits.max_line_chars)
    budget = limits.search.max_bytes
    buf = read_at(start, min(budget + head_bytes, size - start))
    page = quick_page(
        buf,
        at_eof=start + len(buf) >= size,
        max_lines=max_lines,
        max_bytes=budget,
        max_line_chars=limits.max_line_chars,
    )
    if page is None:
        lines = iter_raw_lines(
            read_at, start, size, head_bytes=head_bytes, chunk_bytes=PAGE_READ_BYTES
        )
        page = build_page(
            lines, max_lines=max_lines, max_bytes=budget, max_line_chars=limits.max_line_chars
        )
    held = min(page.raw_bytes, len(buf))
    seen = _Seen(
        start,
        start + held,
        start + held >= size,
        content_digest(buf, 0, held),
        page.clipped_lines,
    )
    return page, seen


def _os_error(err: OSError, target: Resolved, spot: Spot | None = None) -> ToolError:
    """An OSError from stat/open/read, through ``os_error`` in Read's words (``spot``,
    where the walk ended, lets a missing file's message name its neighbours)."""

    def words(kind: OsErrorKind) -> str | None:
        if kind == "permission":
            return (
                f"Permission denied reading {target.shown}: toolbound's user may not read it "
                "(or search its folder). Read a file you have access to, or change its "
                "permissions."
            )
        if kind == "not_found":
            return _not_found_message(target, spot)
        if kind == "loop":
            return (
                f"{target.shown} is a symlink loop and leads to no file; Read the file it was "
                "meant to point to."
            )
        if kind == "other":
            return (
                f"{target.shown} could not be read: {err.strerror or err}. Check the file and "
                "call Read again."
            )
        return None

    return os_error(err, target.shown, words=words)


def _not_found_message(target: Resolved, spot: Spot | None) -> str:
    shown_folder = os.path.dirname(target.shown)
    glob_hint = f'find it with Glob (pattern "**/{target.real.name}")'
    if spot is not None and len(spot.rest) == 2 and spot.st is not None:
        return f"{target.shown} does not exist: {shown_folder} is a file, not a folder."
    if spot is None or len(spot.rest) > 1:
        return f"{target.shown} does not exist, nor does its folder {shown_folder}; {glob_hint}."
    near = _nearest_names(spot, target.real.name)
    if not near:
        return f"{target.shown} does not exist; {glob_hint}."
    shown = ", ".join(os.path.join(shown_folder, name) for name in near)
    return f"{target.shown} does not exist. Did you mean: {shown}? Otherwise {glob_hint}."


def _nearest_names(spot: Spot, name: str) -> list[str]:
    """Up to SUGGEST_NAMES names in the walk's folder that look like ``name``."""
    try:
        fd = spot.listing_fd()
    except OSError:
        return []
    try:
        with os.scandir(fd) as entries:
            names = [e.name for e in itertools.islice(entries, SUGGEST_SCAN_NAMES)]
    except OSError:
        return []
    finally:
        os.close(fd)
    return difflib.get_close_matches(name, names, n=SUGGEST_NAMES, cutoff=0.6)
