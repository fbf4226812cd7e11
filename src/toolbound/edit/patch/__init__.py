"""ApplyPatch's core: Codex CLI's apply_patch grammar and the matching of its chunks.

Pure: text in, text out; the tool (``toolbound.tools.apply_patch``) reads and
writes the files.

Pieces:
    parse_patch         patch text -> file operations (``grammar``)
    AddFile, DeleteFile, UpdateFile, Chunk, Operation   what it returns
    PatchSyntaxError    a patch that does not parse, naming its line
    apply_chunks        a file's bytes + an update's chunks -> FilePatched (``apply``)
    FilePatched, HunkReport, Grade   the new text and how each chunk matched
"""

from toolbound.edit.patch.apply import FilePatched, Grade, HunkReport, apply_chunks
from toolbound.edit.patch.grammar import (
    AddFile,
    Chunk,
    DeleteFile,
    Operation,
    PatchSyntaxError,
    UpdateFile,
    parse_patch,
)

__all__ = [
    "AddFile",
    "Chunk",
    "DeleteFile",
    "FilePatched",
    "Grade",
    "HunkReport",
    "Operation",
    "PatchSyntaxError",
    "UpdateFile",
    "apply_chunks",
    "parse_patch",
]
