"""What this session has seen of each file: read-before-write and re-read detection.

One record serves two readers (issue 15 and issue 13, one mechanism):

- Edit and Write ask :meth:`ReadRecord.check` whether the file was Read in this
  session and is unchanged since (``TOOL_NOT_READ`` / ``TOOL_FILE_CHANGED``).
- The economy profile asks :meth:`ReadRecord.earlier_read` whether a Read of
  the same window returned the same bytes before, and which call that was.

Which results are still in the model's context. Every entry carries the
*epoch* (model-context generation) it was seen in; :meth:`new_context` starts
a new one, and only entries of the current epoch answer :meth:`earlier_read`.
The session's checkpoints are what end a context: the record keeps the count of
checkpoints it last knew, and :meth:`follow_checkpoints` (Read calls it with the
store's count before each economy re-read check) starts a new epoch when the
count moved, whichever process wrote the checkpoint. A new host of the same
session keeps the epoch (``toolbound call`` is one host per call, and the
agent's context goes on across them).

What "was Read" means. A Read returns one window (at most 2000 lines / 48 KB),
so for a file larger than a window an agent sees only parts of it. Asking it
to page through a 100 MB log before changing one line would push it back to
``sed``; so *any* Read window makes the file "Read". "Unchanged since" is
then judged on what the agent saw: every byte range a Read returned (since the
file was last written by this session) must hold the same bytes now (sha256),
and a window that reached end of file must still end there (a file that grew
after its last line was read has changed). Text outside every window the agent
read may change without a refusal: the agent made no claim about it, and Edit
applies its exact replacement to the file as it is now. A Read of the whole
file (offset 0 to end of file) is the strict case: any change refuses.

After a successful Edit or Write the session has seen the whole new file (it
wrote it), so :meth:`ReadRecord.wrote` replaces the file's entries with one
covering all of it: a second Edit works without a Read in between, and any
change by another process refuses it. That entry is not a Read: the model saw
only the diff, so it never answers :meth:`earlier_read`.

Files are keyed by their real path (symlinks resolved by the caller). Every
method is thread-safe (tools run in worker threads).

Pieces:
    content_digest  sha256 hex of a buffer, in blocks (sha256 runs with the CPU's
                  SHA instructions: 0.18 s per 100 MB here, blake2b 0.44 s)
    Hasher        an incremental digest, fed while a file is written
    Seen          one entry: what a call saw (byte range, hash, call id, window)
    ReadRecord    the record: saw_window, wrote, check, earlier_read, new_context,
                  follow_checkpoints; to_json / from_json, so a later process of the
                  session knows it
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import mmap
import operator
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from toolbound.results import ErrorCode, ToolError

# Hashing feeds this much at a time, so a memoryview of a mapped file is never copied.
HASH_BLOCK_BYTES = 4 * 1024 * 1024
# Read windows kept per file; the oldest are forgotten first (the check then knows less).
MAX_WINDOWS_PER_FILE = 64

Buffer = bytes | bytearray | memoryview | mmap.mmap
SeenBy = Literal["Read", "Edit", "Write", "ApplyPatch"]


class Hasher:
    """An incremental content digest (the one algorithm of the record)."""

    def __init__(self) -> None:
        self._h = hashlib.sha256()

    def update(self, data: Buffer) -> None:
        view = memoryview(data)
        with view:
            for at in range(0, len(view), HASH_BLOCK_BYTES):
                self._h.update(view[at : at + HASH_BLOCK_BYTES])

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def content_digest(data: Buffer, start: int = 0, end: int | None = None) -> str:
    """The content digest of ``data[start:end]`` (no copy of the bytes)."""
    hasher = Hasher()
    with memoryview(data) as view:
        hasher.update(view[start:end])
    return hasher.hexdigest()


@dataclass(frozen=True, slots=True)
class Seen:
    """What one call saw of a file: bytes ``start_byte .. end_byte`` hashing to ``digest``.

    For a Read, ``offset`` and ``limit`` are its arguments (lines) and
    ``line_count`` the lines it returned. ``at_eof``: the range ran to end of
    file. ``epoch`` is the model-context generation it was seen in.
    ``text_digest`` is the digest of the text the Read returned (its content and
    notice; "" for an entry that is not a Read, or saved before it was kept):
    a re-read is unchanged only when this and ``digest`` both still hold.
    """

    call_id: str
    by: SeenBy
    start_byte: int
    end_byte: int
    at_eof: bool
    digest: str
    offset: int = 0
    limit: int | None = None
    line_count: int | None = None
    epoch: int = 0
    text_digest: str = ""

    def describe(self) -> str:
        """The call, as a refusal names it."""
        if self.by != "Read":
            return f"your {self.by} (call {self.call_id})"
        if self.line_count is None or self.line_count == 0:
            lines = f"from line {self.offset + 1}"
        else:
            lines = f"lines {self.offset + 1}-{self.offset + self.line_count}"
        return f"your Read of {lines} (call {self.call_id})"

    def still_holds(self, data: Buffer, size: int) -> bool:
        """Whether the file's current bytes (``data``, ``size`` long) are what was seen."""
        if self.at_eof and size != self.end_byte:
            return False
        if size < self.end_byte:
            return False
        return content_digest(data, self.start_byte, self.end_byte) == self.digest


# Seen's fields, and a getter of all of them at once: an entry as saved in to_json
# (dataclasses.asdict, which copies deeply, took 0.15 ms of a 40-line Read's record, cProfile).
_SEEN_FIELDS = tuple(f.name for f in dataclasses.fields(Seen))
_seen_values = operator.attrgetter(*_SEEN_FIELDS)


@dataclass(slots=True)
class _FileSeen:
    entries: list[Seen] = field(default_factory=list)


class ReadRecord:
    """What this session has seen of each file (see the module docstring)."""

    def __init__(self, *, max_windows_per_file: int = MAX_WINDOWS_PER_FILE) -> None:
        self._files: dict[Path, _FileSeen] = {}
        self._lock = threading.Lock()
        self._epoch = 0
        # The session's checkpoints as the record last knew them (follow_checkpoints).
        self._checkpoints = 0
        self._max_windows = max_windows_per_file
        # Bumped by every change, so a holder saves the record only when it changed.
        self.version = 0
        # Set by a host whose store holds the session: how many checkpoints the
        # session has now, None when the store cannot tell (not saved with the record).
        self.checkpoint_count: Callable[[], int | None] | None = None
        # Whether checkpoint_count answers on the event loop without waiting (SQLite).
        self.counts_on_loop = False

    def to_json(self) -> str:
        """The record as JSON (paths as strings; a non-UTF-8 name escaped, never lost)."""
        with self._lock:
            files = {
                str(path): [
                    dict(zip(_SEEN_FIELDS, _seen_values(seen), strict=True))
                    for seen in entry.entries
                ]
                for path, entry in self._files.items()
            }
            return json.dumps(
                {"epoch": self._epoch, "checkpoints": self._checkpoints, "files": files}
            )

    @classmethod
    def from_json(cls, text: str) -> ReadRecord:
        """A record saved by :meth:`to_json`; ValueError when it is not one."""
        record = cls()
        try:
            data = json.loads(text)
            record._epoch = int(data["epoch"])
            record._checkpoints = int(data.get("checkpoints", 0))
            for path, entries in data["files"].items():
                record._files[Path(path)] = _FileSeen([Seen(**e) for e in entries])
        except (KeyError, TypeError, AttributeError) as err:
            raise ValueError(f"not a saved read record: {err}") from err
        return record

    def saw_window(
        self,
        real: Path,
        *,
        call_id: str,
        offset: int,
        limit: int | None,
        line_count: int,
        start_byte: int,
        end_byte: int,
        at_eof: bool,
        digest: str,
        text_digest: str = "",
    ) -> Seen:
        """Record a Read window: its raw file bytes ``start_byte .. end_byte`` hash to ``digest``,
        the text it returned to ``text_digest``.

        A window from offset 0 to end of file covers the whole file and replaces
        every earlier entry; a window with the same ``offset``/``limit`` as an
        earlier one replaces that one. A Read also replaces the entry of this
        session's last Edit or Write: it is newer knowledge, and a refusal that
        named the write could otherwise only be lifted by reading the whole file.
        """
        seen = Seen(
            call_id,
            "Read",
            start_byte,
            end_byte,
            at_eof,
            digest,
            offset=offset,
            limit=limit,
            line_count=line_count,
            epoch=self._epoch,
            text_digest=text_digest,
        )
        with self._lock:
            entry = self._files.setdefault(real, _FileSeen())
            if start_byte == 0 and at_eof:
                entry.entries = []
            entry.entries = [
                e
                for e in entry.entries
                if e.by == "Read" and (e.offset, e.limit) != (offset, limit)
            ]
            entry.entries.append(seen)
            del entry.entries[: -self._max_windows]
            self.version += 1
        return seen

    def wrote(self, real: Path, *, call_id: str, by: SeenBy, size: int, digest: str) -> Seen:
        """Record that this session wrote the whole file: ``size`` bytes hashing to ``digest``."""
        seen = Seen(call_id, by, 0, size, True, digest, epoch=self._epoch)
        with self._lock:
            self._files[real] = _FileSeen([seen])
            self.version += 1
        return seen

    def forget(self, real: Path) -> None:
        """Drop what was seen of a file (it was removed, or the session lost track of it)."""
        with self._lock:
            if self._files.pop(real, None) is not None:
                self.version += 1

    def seen(self, real: Path) -> tuple[Seen, ...]:
        """The entries held for a file, oldest first."""
        with self._lock:
            entry = self._files.get(real)
            return tuple(entry.entries) if entry else ()

    def check(self, real: Path, data: Buffer, *, size: int, shown: str, tool: str) -> None:
        """Refuse a change to a file not Read in this session, or changed since.

        ``data`` is the file's current content (a mapping of it), ``size`` long.
        Raises ``ToolError`` with ``TOOL_NOT_READ`` or ``TOOL_FILE_CHANGED``.
        """
        entries = self.seen(real)
        if not entries:
            raise ToolError(
                ErrorCode.NOT_READ,
                f"{shown} has not been Read in this session. Read it first (any window will "
                f"do; {tool} changes only files you have seen), then call {tool} again. If "
                "you did Read it, your client may have opened a new session for this call "
                "(one MCP session per call): keep one session for the whole conversation.",
            )
        for seen in entries:
            if not seen.still_holds(data, size):
                raise ToolError(
                    ErrorCode.FILE_CHANGED,
                    f"{shown} changed since {seen.describe()}: another process or tool wrote "
                    f"it meanwhile. Read it again, then repeat the {tool} with text taken from "
                    "the new Read.",
                )

    def earlier_read(
        self,
        real: Path,
        *,
        offset: int,
        limit: int | None,
        digest: str,
        text_digest: str | None = None,
    ) -> Seen | None:
        """The Read of the same window that returned the same bytes in the current
        model context (since the last :meth:`new_context`), if there was one.

        ``text_digest``, when given, is the digest of the text the new Read would
        return: the earlier Read must have returned that same text too.
        """
        for seen in reversed(self.seen(real)):
            if (
                seen.by == "Read"
                and seen.epoch == self._epoch
                and (seen.offset, seen.limit) == (offset, limit)
                and seen.digest == digest
                and (text_digest is None or seen.text_digest == text_digest)
            ):
                return seen
        return None

    def new_context(self) -> None:
        """A checkpoint: earlier results left the model's context. Reads seen before still
        count for Edit and Write, but :meth:`earlier_read` no longer returns them."""
        with self._lock:
            self._epoch += 1
            self.version += 1

    def follow_checkpoints(self, count: int) -> None:
        """The session has ``count`` checkpoints now: when that is not the count the
        record knew, a checkpoint was written since (by any process), and earlier
        results left the model's context (:meth:`new_context`)."""
        with self._lock:
            if count == self._checkpoints:
                return
            self._checkpoints = count
        self.new_context()
