"""ApplyPatch: a patch in Codex CLI's apply_patch grammar, to workspace files, all or none.

CONTRACT section 15. The stages:

1. Parse the patch (``toolbound.edit.patch``): a patch that does not parse,
   or holds no file operation, is ``TOOL_INVALID_ARGUMENT`` naming its line.
2. Plan every operation in order on the files as they are, in memory: each
   path kept inside the workspace (``resolve_target``, the symlink rules of
   Edit and Write), each file read once, its chunks applied
   (``apply_chunks``). Later operations on the same file see what earlier ones
   left. No Read is needed (the chunks' lines are the proof), but a file this
   session has seen must hold what it saw (``TOOL_FILE_CHANGED``), and an
   existing file replaced whole (Add File over it, or Move to onto it) must
   have been seen, as with Write (``TOOL_NOT_READ``). Any refusal here leaves
   every file as it was.
3. Commit (``_commit``, the only function that writes): every file is
   reached again from the workspace's descriptor (``Resolved.walk``, no
   symlink followed: ``toolbound.fsroot``), its missing folders made at that
   descriptor, its new content written to a temporary file opened in the
   file's folder descriptor and flushed; then every file is checked to be as
   it was read (else ``TOOL_FILE_CHANGED`` and the temporaries go); then the
   temporaries are renamed over their targets (``renameat``) and deleted files
   removed (``unlinkat``), each at its folder's descriptor, so a folder swapped
   for a symlink meanwhile cannot lead a write outside. A failure before the
   renames changes nothing: the temporaries and the folders made go.
4. Record what was written (a later Edit needs no Read), forget what was
   deleted, and build the result: each file's action and how its chunks
   matched, and one unified diff within the search budget.

Pieces:
    run  the tool: ApplyPatchArgs -> ApplyPatchResult (or a ToolError)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from toolbound import notices
from toolbound.bounds.binary import sniff_binary
from toolbound.context import ToolContext
from toolbound.edit.atomic import sweep_temp_files, temp_name, write_all
from toolbound.edit.core import _open_existing, _unchanged_since, _write_error
from toolbound.edit.diff import Hunk, render_diff, write_hunks
from toolbound.edit.patch import AddFile, DeleteFile, UpdateFile, apply_chunks, parse_patch
from toolbound.edit.record import content_digest
from toolbound.edit.target import resolve_target
from toolbound.fsroot import Spot, reach_fd
from toolbound.limits import Budget
from toolbound.models.apply_patch import ApplyPatchArgs, ApplyPatchResult, PatchFile, PatchHunk
from toolbound.paths import Resolved
from toolbound.results import ErrorCode, ToolError

TOOL: Final = "ApplyPatch"
Action = Literal["add", "update", "delete", "move"]

_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_MODE = 0o666


@dataclass(slots=True)
class _File:
    """One file as the patch leaves it so far: ``old`` on disk, ``new`` after (None: absent)."""

    target: Resolved
    st: os.stat_result | None
    old: bytes | None
    new: bytes | None

    @property
    def changed(self) -> bool:
        return self.new != self.old


@dataclass(frozen=True, slots=True)
class _Shown:
    """One file's part of the diff."""

    old_label: str
    new_label: str
    hunks: tuple[Hunk, ...]
    shown: str


@dataclass(slots=True)
class _Plan:
    """The patch applied in memory: the files it touches and what the result says of each."""

    ctx: ToolContext
    files: dict[Path, _File] = field(default_factory=dict)
    entries: list[PatchFile] = field(default_factory=list)
    diffs: list[_Shown] = field(default_factory=list)

    def file(self, target: Resolved) -> _File:
        """The file's state, read from disk the first time (and checked against the record)."""
        known = self.files.get(target.real)
        if known is not None:
            return known
        data: bytes | None = None
        st: os.stat_result | None = None
        try:
            with target.walk() as spot:
                opened = _open_existing(spot, target, TOOL)
            if opened is not None:
                fd, st = opened
                try:
                    data = _read_all(fd, st.st_size)
                finally:
                    os.close(fd)
        except OSError as err:
            raise _write_error(err, target) from None
        if data is not None and self.ctx.record.seen(target.real):
            self.ctx.record.check(target.real, data, size=len(data), shown=target.shown, tool=TOOL)
        state = _File(target, st, data, data)
        self.files[target.real] = state
        return state

    def replace_whole(self, state: _File, content: bytes) -> None:
        """An existing file replaced whole must have been seen, as Write requires."""
        if state.old is not None and state.new != content and state.new == state.old:
            record = self.ctx.record
            record.check(
                state.target.real,
                state.old,
                size=len(state.old),
                shown=state.target.shown,
                tool=TOOL,
            )
        state.new = content

    def add(self, op: AddFile) -> None:
        target = resolve_target(self.ctx.roots, op.path, tool=TOOL)
        state = self.file(target)
        content = _encode(op.content)
        already = state.new == content
        before = state.new or b""
        self.replace_whole(state, content)
        self.entries.append(
            PatchFile(
                path=target.shown, action="add", hunks=[], already_applied=True if already else None
            )
        )
        label = f"a/{target.shown}" if state.old is not None else "/dev/null"
        self.diffs.append(
            _Shown(label, f"b/{target.shown}", tuple(write_hunks(before, content)), target.shown)
        )

    def unlinkable(self, path: str, target: Resolved, line: int) -> None:
        """Refuse removing a file named through a symlink: the link's target would go."""
        expanded = os.path.expanduser(path) if path.startswith("~") else path
        named = os.path.join(self.ctx.roots.workspace, expanded)
        if os.path.islink(named):
            raise ToolError(
                ErrorCode.NOT_REGULAR_FILE,
                f"{path} (patch line {line}) is a symlink (to {target.shown}); ApplyPatch "
                "deletes and moves files, not links. Nothing was changed; name the file "
                "itself, or remove the link with Bash.",
            )

    def delete(self, op: DeleteFile) -> None:
        target = resolve_target(self.ctx.roots, op.path, tool=TOOL)
        self.unlinkable(op.path, target, op.line)
        state = self.file(target)
        if state.new is None:
            raise ToolError(
                ErrorCode.NOT_FOUND,
                f"{target.shown} does not exist, so '*** Delete File: {op.path}' (patch line "
                f"{op.line}) cannot delete it. Nothing was changed; check the path with Glob.",
            )
        before = state.new
        state.new = None
        self.entries.append(PatchFile(path=target.shown, action="delete", hunks=[]))
        self.diffs.append(
            _Shown(f"a/{target.shown}", "/dev/null", tuple(write_hunks(before, b"")), target.shown)
        )

    def update(self, op: UpdateFile) -> None:
        target = resolve_target(self.ctx.roots, op.path, tool=TOOL)
        state = self.file(target)
        if state.new is None:
            raise ToolError(
                ErrorCode.NOT_FOUND,
                f"{target.shown} does not exist, so '*** Update File: {op.path}' (patch line "
                f"{op.line}) cannot change it. Nothing was changed; create a file with "
                "'*** Add File:', or check the path with Glob.",
            )
        _refuse_binary(target, state.new, self.ctx)
        patched = apply_chunks(state.new, op.chunks, shown=target.shown)
        hunks = [
            PatchHunk(
                matched=h.matched,
                line=h.line,
                already_applied=True if h.already_applied else None,
            )
            for h in patched.hunks
        ]
        already = True if op.chunks and patched.already_applied else None
        if op.move_to is None:
            state.new = patched.text
            self.entries.append(
                PatchFile(path=target.shown, action="update", hunks=hunks, already_applied=already)
            )
            self.diffs.append(
                _Shown(f"a/{target.shown}", f"b/{target.shown}", patched.diff, target.shown)
            )
            return
        dest = resolve_target(self.ctx.roots, op.move_to, tool=TOOL)
        if dest.real != target.real:
            self.unlinkable(op.path, target, op.line)
        if dest.real == target.real:
            state.new = patched.text
        else:
            moved = self.file(dest)
            self.replace_whole(moved, patched.text)
            state.new = None
        self.entries.append(
            PatchFile(path=dest.shown, action="move", hunks=hunks, moved_from=target.shown)
        )
        self.diffs.append(_Shown(f"a/{target.shown}", f"b/{dest.shown}", patched.diff, dest.shown))


def _encode(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"The patch is not valid Unicode text (a lone surrogate at character {err.start}).",
        ) from None


def _read_all(fd: int, size: int) -> bytes:
    """The open file's bytes (a read may return less than asked: read on to the end)."""
    parts = [os.pread(fd, size, 0)]
    at = len(parts[0])
    while chunk := os.pread(fd, max(size - at, 1 << 16), at):
        parts.append(chunk)
        at += len(chunk)
    return b"".join(parts)


def _refuse_binary(target: Resolved, data: bytes, ctx: ToolContext) -> None:
    limits = ctx.limits
    verdict = sniff_binary(target.real.name, data[: limits.binary_sniff_bytes], limits=limits)
    if verdict is not None:
        raise ToolError(
            ErrorCode.BINARY_CONTENT,
            f"{target.shown} is binary (likely {verdict.likely_type}), not text; ApplyPatch "
            "changes text files only. Nothing was changed.",
        )


def _stage(spot: Spot, data: bytes, like: os.stat_result | None) -> str:
    """``data`` in a flushed temporary file in the spot's folder, with the mode of
    ``like``; the temporary's name in that folder."""
    sweep_temp_files(Path(*spot.parts), spot.name, dir_fd=spot.dir_fd)
    tmp = temp_name(spot.name)
    mode = 0o600 if like is not None else _NEW_FILE_MODE
    fd = os.open(tmp, _TEMP_FLAGS, mode, dir_fd=spot.dir_fd)
    try:
        write_all(fd, data)
        if like is not None:
            if (like.st_uid, like.st_gid) != (os.getuid(), os.getgid()):
                with contextlib.suppress(PermissionError):
                    os.fchown(fd, like.st_uid, like.st_gid)
            os.fchmod(fd, stat.S_IMODE(like.st_mode))
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=spot.dir_fd)
        raise
    os.close(fd)
    return tmp


def _fsync_folder(spot: Spot) -> None:
    fd = spot.listing_fd()
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(slots=True)
class _Made:
    """Folders a commit made: ``names`` below the folder ``base_fd`` (owned), outermost first."""

    base_fd: int
    names: tuple[str, ...]

    def remove(self) -> None:
        """Remove them again (if still empty), innermost first, each at its parent's
        descriptor reached through no symlink; then close ``base_fd``."""
        try:
            for depth in range(len(self.names) - 1, -1, -1):
                parent = self.base_fd
                if depth:
                    parent = reach_fd(self.base_fd, os.fsencode("/".join(self.names[:depth])))
                    if parent < 0:
                        continue
                try:
                    with contextlib.suppress(OSError):
                        os.rmdir(self.names[depth], dir_fd=parent)
                finally:
                    if parent != self.base_fd:
                        os.close(parent)
        finally:
            os.close(self.base_fd)


def _make_parents(spot: Spot) -> _Made | None:
    """The spot's missing folders made (``Spot.make_parents``); what to remove on failure."""
    if len(spot.rest) <= 1:
        return None
    made = _Made(os.dup(spot.dir_fd), spot.rest[:-1])
    try:
        spot.make_parents()
    except BaseException:
        made.remove()
        raise
    return made


def _gone(target: Resolved) -> ToolError:
    return ToolError(
        ErrorCode.FILE_CHANGED,
        f"{target.shown} or its folder was removed or replaced while the {TOOL} was being "
        f"written: another process changed it. Nothing was written; Read it again, then "
        f"repeat the {TOOL}.",
    )


def _commit(files: Sequence[_File]) -> None:
    """Write the planned files: stage all, check none changed meanwhile, rename all, delete.

    The one place ApplyPatch writes, every step at the descriptor of the
    file's folder. Until the first rename nothing is changed: any failure
    removes the temporaries and the folders made for them.
    """
    spots: list[Spot] = []
    staged: list[tuple[Spot, str]] = []
    made: list[_Made] = []
    renamed = False
    try:
        reached: list[tuple[_File, Spot]] = []
        for state in files:
            spot = state.target.walk()
            spots.append(spot)
            reached.append((state, spot))
            if state.new is None:
                continue
            if state.st is None and (folders := _make_parents(spot)) is not None:
                made.append(folders)
            staged.append((spot, _stage(spot, state.new, state.st)))
        for state, spot in reached:
            if len(spot.rest) != 1:
                raise _gone(state.target)
            _unchanged_since(spot, state.target, state.st, TOOL)()
        renamed = True
        while staged:
            spot, tmp = staged[0]
            os.replace(tmp, spot.name, src_dir_fd=spot.dir_fd, dst_dir_fd=spot.dir_fd)
            staged.pop(0)
        for state, spot in reached:
            if state.new is None and state.old is not None:
                os.unlink(spot.name, dir_fd=spot.dir_fd)
        for spot in spots:
            _fsync_folder(spot)
    finally:
        for spot, tmp in staged:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=spot.dir_fd)
        for folders in reversed(made):
            if renamed:
                os.close(folders.base_fd)
            else:
                folders.remove()
        for spot in spots:
            spot.close()


def _bounded(
    parts: Iterable[_Shown], budget: Budget, max_line_chars: int
) -> tuple[str, bool, str | None]:
    """The files' diffs joined, whole lines within ``budget``; whether cut, and the notice."""
    lines: list[str] = []
    clipped = False
    for part in parts:
        rendered = render_diff(
            part.hunks,
            old_label=part.old_label,
            new_label=part.new_label,
            budget=budget,
            max_line_chars=max_line_chars,
            shown=part.shown,
        )
        clipped = clipped or rendered.truncated
        lines += rendered.text.splitlines()
    kept: list[str] = []
    size = 0
    for line in lines:
        size += len(line.encode("utf-8")) + 1
        if len(kept) >= budget.max_lines or size > budget.max_bytes:
            break
        kept.append(line)
    text = "".join(f"{line}\n" for line in kept)
    if len(kept) < len(lines):
        cut = notices.diff_cut(
            kept=len(kept),
            total=len(lines),
            budget=budget,
            made="the patch itself was applied",
            read="the files",
        )
        return text, True, cut
    if clipped:
        return text, True, notices.diff_clipped(max_line_chars)
    return text, False, None


def _already_notice(entries: Sequence[PatchFile]) -> str | None:
    hunks = [h for e in entries for h in e.hunks]
    return notices.patch_already_applied(
        every_file=bool(entries) and all(e.already_applied for e in entries),
        chunks=sum(1 for h in hunks if h.already_applied),
    )


def _apply(args: ApplyPatchArgs, ctx: ToolContext) -> ApplyPatchResult:
    operations = parse_patch(args.patch)
    if not operations:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            "The patch has no file operation; nothing was changed. Give at least one "
            "'*** Add File:', '*** Delete File:' or '*** Update File:' section between "
            "'*** Begin Patch' and '*** End Patch'.",
        )
    plan = _Plan(ctx)
    for op in operations:
        if isinstance(op, AddFile):
            plan.add(op)
        elif isinstance(op, DeleteFile):
            plan.delete(op)
        else:
            plan.update(op)
    changed = [state for state in plan.files.values() if state.changed]
    try:
        _commit(changed)
    except OSError as err:
        raise _write_error(err, changed[0].target) from None
    for state in changed:
        if state.new is None:
            ctx.record.forget(state.target.real)
        else:
            ctx.record.wrote(
                state.target.real,
                call_id=ctx.tool_call_id,
                by=TOOL,
                size=len(state.new),
                digest=content_digest(state.new),
            )
    diff, truncated, notice = _bounded(plan.diffs, ctx.limits.search, ctx.limits.max_line_chars)
    said = [n for n in (_already_notice(plan.entries), notice) if n]
    return ApplyPatchResult(
        files=plan.entries, diff=diff, truncated=truncated, notice=notices.join(said)
    )


async def run(args: ApplyPatchArgs, ctx: ToolContext) -> ApplyPatchResult:
    """Apply ``patch`` to the workspace: every file or none."""
    return await asyncio.to_thread(_apply, args, ctx)
