"""The core of Edit and Write (CONTRACT section 10), for the tool modules to call.

Pure where it can be: ``replace`` plans a replacement on bytes, ``diff``
renders a bounded unified diff, ``text`` holds the byte helpers. ``record``
is the session's record of what was seen (read-before-write, and the economy
profile's re-read detection), ``atomic`` replaces a file atomically, ``target``
keeps writes inside the workspace, and ``core`` chains them into one Edit or
Write of a file.

Pieces:
    resolve_target        a tool's path -> the workspace file to change
    edit_file, write_file the blocking bodies of Edit and Write
    ChangeResult          their result
    ReadRecord, Seen      what the session has seen of each file
    content_digest        the record's content hash
    atomic_write          the atomic file replacement
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING

# Eager: the record is every host's (what a session Read); the rest loads on
# first use (PEP 562), so a Read does not import the Edit and Write machinery.
from toolbound.edit.record import ReadRecord, Seen, content_digest
from toolbound.lazy import loader as _loader

if _TYPE_CHECKING:
    from toolbound.edit.atomic import atomic_write
    from toolbound.edit.core import ChangeResult, edit_file, write_file
    from toolbound.edit.target import resolve_target

__all__ = [
    "ChangeResult",
    "ReadRecord",
    "Seen",
    "atomic_write",
    "content_digest",
    "edit_file",
    "resolve_target",
    "write_file",
]

# Where each name loaded on first use lives.
_HOMES = {
    "atomic_write": "toolbound.edit.atomic",
    "ChangeResult": "toolbound.edit.core",
    "edit_file": "toolbound.edit.core",
    "write_file": "toolbound.edit.core",
    "resolve_target": "toolbound.edit.target",
}


__getattr__ = _loader(__name__, _HOMES, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
