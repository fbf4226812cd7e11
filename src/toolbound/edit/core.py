"""Edit and Write on one resolved file: the blocking bodies the tool modules call.

An Edit is a chain of stages: open the file (not following a late symlink) and
refuse what is not a regular text file -> read its bytes -> check the read
record (``TOOL_NOT_READ`` / ``TOOL_FILE_CHANGED``) -> plan the replacement ->
write the new content atomically, hashing it as it goes, after checking that
nobody changed the file while it was read -> record what was written -> the
diff. A Write is the same chain with the whole content given.

Memory: the file is read once into one ``bytes`` value; the new content is
written from views of it (no second copy), and the diff looks only at the
lines around the changes. A mapping (mmap) would spare that copy, but a file
truncated by another process while mapped kills the reading process with
SIGBUS, and the host must survive whatever another process does.

Where: the target is reached again from the workspace's folder descriptor
(``Resolved.walk``, following no symlink), and the file is opened, checked,
replaced and its folders created through the descriptor of its folder
(``toolbound.fsroot``): a folder on the path swapped for a symlink by another
process cannot move the write outside the workspace; it fails with a TOOL_
error instead.

What another process may do meanwhile: a change after the read and before the
rename is seen by comparing the file's identity, size and mtime with those it
had when it was opened (``TOOL_FILE_CHANGED``, nothing written); a change in
the instant between that comparison and the rename is lost to the rename, as
with every editor that saves by renaming.

Pieces:
    ChangeResult  Edit's and Write's result (CONTRACT section 10), to_wire()
    edit_file     Edit: exact replacement in an existing file
    write_file    Write: create or overwrite with the given content
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from toolbound.bounds.binary import sniff_binary
from toolbound.edit.atomic import atomic_write, write_all
from toolbound.edit.diff import Hunk, edit_hunks, render_diff, write_hunks
from toolbound.edit.record import Hasher, ReadRecord, content_digest
from toolbound.edit.replace import EditSpec, apply_edits, encode_text, plan_edit
from toolbound.edit.text import BOM, has_bare_lf, line_endings, to_crlf
from toolbound.fsroot import Spot
from toolbound.limits import DEFAULT_LIMITS, Limits
from toolbound.paths import OsErrorKind, Resolved, os_error
from toolbound.results import ErrorCode, ToolError

_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class ChangeResult:
    """``{"path", "replacements" | "bytes", "created", "diff", "truncated", "notice"?}``."""

    path: str
    created: bool
    diff: str
    truncated: bool
    notice: str | None = None
    replacements: int | None = None
    bytes: int | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"path": self.path}
        if self.replacements is not None:
            wire["replacements"] = self.replacements
        if self.bytes is not None:
            wire["bytes"] = self.bytes
        wire |= {"created": self.created, "diff": self.diff, "truncated": self.truncated}
        if self.notice is not None:
            wire["notice"] = self.notice
        return wire


def _write_error(err: OSError, target: Resolved) -> ToolError:
    """An OSError while writing, through ``os_error`` in a writer's words."""

    def words(kind: OsErrorKind) -> str | None:
        if kind == "permission":
            return (
                f"{target.shown} cannot be written: {err.strerror or err} (toolbound's user "
                "may not write it or its folder). Change a file you may write, or its "
                "permissions."
            )
        if kind == "no_space":
            return (
                f"{target.shown} was not changed: {err.strerror} (no space for the new "
                "content). Free some space, then call again; the file is as it was."
            )
        if kind == "loop":
            return _replaced_meanwhile(target).message
        return None

    return os_error(err, target.shown, words=words)


def _replaced_meanwhile(target: Resolved) -> ToolError:
    return ToolError(
        ErrorCode.NOT_FOUND,
        f"{target.shown} was replaced by a symlink while it was being opened; Read it again.",
    )


def _open_existing(spot: Spot, target: Resolved, tool: str) -> tuple[int, os.stat_result] | None:
    """An open descriptor of the regular file, or None when there is no file."""
    if not spot.rest:
        raise ToolError(
            ErrorCode.IS_DIRECTORY,
            f"{target.shown} is a directory; {tool} changes a file. Give a file's path.",
        )
    if (missing := spot.missing()) is not None:
        if isinstance(missing, FileNotFoundError):
            return None
        raise missing
    try:
        fd = spot.open(_OPEN_FLAGS)
    except FileNotFoundError:
        return None
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode):
        return fd, st
    os.close(fd)
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(
            ErrorCode.IS_DIRECTORY,
            f"{target.shown} is a directory; {tool} changes a file. Give a file's path.",
        )
    raise ToolError(
        ErrorCode.NOT_REGULAR_FILE,
        f"{target.shown} is not a regular file (a FIFO, socket or device); {tool} changes "
        "regular files only.",
    )


def _read_text(fd: int, st: os.stat_result, target: Resolved, limits: Limits) -> bytes:
    """The whole file, once it is known to be text."""
    head = os.pread(fd, limits.binary_sniff_bytes, 0)
    verdict = sniff_binary(target.real.name, head, limits=limits)
    if verdict is not None:
        raise ToolError(
            ErrorCode.BINARY_CONTENT,
            f"{target.shown} is binary (likely {verdict.likely_type}), not text; Edit and "
            "Write change text files only. Change it with a program made for its format "
            "through Bash.",
        )
    data = os.pread(fd, st.st_size, 0)
    if len(data) < st.st_size:
        # A read may return less (over 2 GB at once, or the file shrank): read on to the end.
        rest = [data]
        while chunk := os.pread(fd, st.st_size, sum(map(len, rest))):
            rest.append(chunk)
        data = b"".join(rest)
    return data


def _read_checked(
    opened: tuple[int, os.stat_result],
    target: Resolved,
    record: ReadRecord,
    tool: str,
    limits: Limits,
) -> bytes:
    """The open file's bytes (the descriptor is closed), once the record allows the change."""
    fd, st = opened
    try:
        data = _read_text(fd, st, target, limits)
    finally:
        os.close(fd)
    record.check(target.real, data, size=len(data), shown=target.shown, tool=tool)
    return data


def _unchanged_since(
    spot: Spot, target: Resolved, opened: os.stat_result | None, tool: str
) -> Callable[[], None]:
    """A before-rename check: the file is still the one read (or still absent)."""

    def check() -> None:
        try:
            now: os.stat_result | None = spot.lstat()
        except FileNotFoundError:
            now = None
        if opened is None and now is None:
            return
        same = (
            opened is not None
            and now is not None
            and (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns)
            == (opened.st_dev, opened.st_ino, opened.st_size, opened.st_mtime_ns)
        )
        if not same:
            raise ToolError(
                ErrorCode.FILE_CHANGED,
                f"{target.shown} changed while the {tool} was being written: another process "
                f"wrote it. Nothing was written; Read it again, then repeat the {tool}.",
            )

    return check


def _result(
    hunks: Iterable[Hunk],
    target: Resolved,
    *,
    created: bool,
    limits: Limits,
    replacements: int | None = None,
    written: int | None = None,
) -> ChangeResult:
    """The result, with the diff of ``hunks`` bounded by the search budget."""
    diff = render_diff(
        hunks,
        old_label="/dev/null" if created else f"a/{target.shown}",
        new_label=f"b/{target.shown}",
        budget=limits.search,
        max_line_chars=limits.max_line_chars,
        shown=target.shown,
    )
    return ChangeResult(
        target.shown,
        created=created,
        diff=diff.text,
        truncated=diff.truncated,
        notice=diff.notice,
        replacements=replacements,
        bytes=written,
    )


def edit_file(
    target: Resolved,
    *,
    old_string: str = "",
    new_string: str = "",
    replace_all: bool = False,
    edits: Sequence[EditSpec] | None = None,
    record: ReadRecord,
    call_id: str,
    limits: Limits = DEFAULT_LIMITS,
) -> ChangeResult:
    """Edit (CONTRACT sections 10, 15) of a resolved workspace file; raises ToolError.

    One replacement (``old_string``, ``new_string``, ``replace_all``), or
    several ``edits`` applied in order, all or none.
    """
    try:
        with target.walk() as spot:
            return _edit_at(
                spot,
                target,
                old_string=old_string,
                new_string=new_string,
                replace_all=replace_all,
                edits=edits,
                record=record,
                call_id=call_id,
                limits=limits,
            )
    except OSError as err:
        raise _write_error(err, target) from None


def _edit_at(
    spot: Spot,
    target: Resolved,
    *,
    old_string: str,
    new_string: str,
    replace_all: bool,
    edits: Sequence[EditSpec] | None,
    record: ReadRecord,
    call_id: str,
    limits: Limits,
) -> ChangeResult:
    try:
        opened = _open_existing(spot, target, "Edit")
        if opened is None:
            raise ToolError(
                ErrorCode.NOT_FOUND,
                f"{target.shown} does not exist; Edit changes an existing file. Create it with "
                "Write, or find the right path with Glob.",
            )
        st = opened[1]
        data = _read_checked(opened, target, record, "Edit", limits)
        if edits is not None:
            return _edit_several(spot, target, st, data, edits, record, call_id, limits)
        plan = plan_edit(data, old_string, new_string, replace_all=replace_all, shown=target.shown)
        hasher = Hasher()

        def fill(out: int) -> None:
            for piece in plan.pieces(data):
                hasher.update(piece)
                write_all(out, piece)

        atomic_write(
            target.real,
            fill,
            like=st,
            before_rename=_unchanged_since(spot, target, st, "Edit"),
            dir_fd=spot.dir_fd,
        )
    except OSError as err:
        raise _write_error(err, target) from None
    record.wrote(
        target.real,
        call_id=call_id,
        by="Edit",
        size=plan.new_size(len(data)),
        digest=hasher.hexdigest(),
    )
    return _result(
        edit_hunks(data, plan),
        target,
        created=False,
        limits=limits,
        replacements=plan.replacements,
    )


def _edit_several(
    spot: Spot,
    target: Resolved,
    st: os.stat_result,
    data: bytes,
    edits: Sequence[EditSpec],
    record: ReadRecord,
    call_id: str,
    limits: Limits,
) -> ChangeResult:
    """The multi-edit form: the new content whole, then written as a Write writes it."""
    applied = apply_edits(data, edits, shown=target.shown)
    new = applied.text
    atomic_write(
        target.real,
        lambda out: write_all(out, new),
        like=st,
        before_rename=_unchanged_since(spot, target, st, "Edit"),
        dir_fd=spot.dir_fd,
    )
    record.wrote(target.real, call_id=call_id, by="Edit", size=len(new), digest=content_digest(new))
    return _result(
        write_hunks(data, new),
        target,
        created=False,
        limits=limits,
        replacements=applied.replacements,
    )


def _keep_file_style(old: bytes, content: bytes) -> bytes:
    """A CRLF file stays CRLF and a BOM stays (see toolbound.edit.replace)."""
    if has_bare_lf(content) and line_endings(old) == "crlf":
        content = to_crlf(content)
    if old.startswith(BOM) and not content.startswith(BOM):
        content = BOM + content
    return content


def write_file(
    target: Resolved,
    *,
    content: str,
    record: ReadRecord,
    call_id: str,
    limits: Limits = DEFAULT_LIMITS,
) -> ChangeResult:
    """Write (CONTRACT section 10): create the file, or overwrite one Read in this session."""
    new = encode_text(content, "content")
    try:
        with target.walk() as spot:
            opened = _open_existing(spot, target, "Write")
            st: os.stat_result | None = None
            old = b""
            if opened is None:
                spot.make_parents()
            else:
                st = opened[1]
                old = _read_checked(opened, target, record, "Write", limits)
                new = _keep_file_style(old, new)
            atomic_write(
                target.real,
                lambda out: write_all(out, new),
                like=st,
                before_rename=_unchanged_since(spot, target, st, "Write"),
                dir_fd=spot.dir_fd,
            )
    except OSError as err:
        raise _write_error(err, target) from None
    created = st is None
    record.wrote(
        target.real, call_id=call_id, by="Write", size=len(new), digest=content_digest(new)
    )
    return _result(write_hunks(old, new), target, created=created, limits=limits, written=len(new))
