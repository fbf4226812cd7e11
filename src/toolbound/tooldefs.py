"""``builtin_tool_defs()``: the four tool definitions, generated from ``Limits``.

Descriptions carry the numbers and the scoping parameters verbatim (seed
section 2): a tool that looks incapable of the scoped thing gets routed around
through Bash. Change a limit and the text changes with it.

Pieces:
    ToolDef            name, description, input schema, read-only flag
    builtin_tool_defs  limits + format -> list of definitions
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from toolbound.limits import DEFAULT_LIMITS, Limits, format_size

Format = Literal["anthropic", "openai", "mcp"]

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolDef:
    name: str
    description: str
    input_schema: JSON
    read_only: bool

    def render(self, fmt: Format) -> JSON:
        if fmt == "anthropic":
            return {
                "name": self.name,
                "description": self.description,
                "input_schema": self.input_schema,
            }
        if fmt == "openai":
            return {
                "type": "function",
                "function": {
                    "name": self.name,
                    "description": self.description,
                    "parameters": self.input_schema,
                },
            }
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": {
                "readOnlyHint": self.read_only,
                "destructiveHint": not self.read_only,
                "openWorldHint": False,
            },
        }


def _schema(properties: JSON, required: list[str]) -> JSON:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _search_budget(limits: Limits) -> str:
    return f"{format_size(limits.search.max_bytes)} / {limits.search.max_lines} lines"


def _read(limits: Limits) -> ToolDef:
    w = limits.read_window_lines
    return ToolDef(
        name="Read",
        description=(
            "Read a text file from the workspace (relative paths are workspace-relative), "
            "this session's scratch dir (spill files named in Bash markers), or an approved "
            f"external folder. Returns a window of `limit` lines (1-{w}, default {w}) after "
            f"skipping `offset` lines (default 0), within {_search_budget(limits)}; lines "
            f"longer than {limits.max_line_chars} characters are clipped. Files of any size "
            "are paged, never refused: when `truncated` is true, call again with the "
            "`offset` the notice names. `content` is the file's exact text (no line numbers), "
            "`totalLines` appears once the window reaches the end of the file. Binary files "
            "are refused with TOOL_BINARY_CONTENT."
        ),
        input_schema=_schema(
            {
                "path": {"type": "string", "description": "File to read."},
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 0,
                    "description": "Lines to skip before the window starts.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": w,
                    "default": w,
                    "description": f"Lines in the window, 1-{w}.",
                },
            },
            ["path"],
        ),
        read_only=True,
    )


def _glob(limits: Limits) -> ToolDef:
    d, m = limits.glob_limit_default, limits.glob_limit_max
    return ToolDef(
        name="Glob",
        description=(
            "Find files whose path matches a glob `pattern` (`**` matches any depth, e.g. "
            "`src/**/*.py`; a pattern without `/` matches file names at any depth, e.g. "
            "`*.md`) under `path` (default: the workspace), honouring .gitignore and "
            ".ignore; an explicit `path` inside an ignored folder (node_modules, a spill dir) "
            f"is searched. Returns at most `limit` paths (default {d}, max {m}), newest "
            "modification time first; `truncated` is true when more matched: narrow "
            "`pattern` or `path`."
        ),
        input_schema=_schema(
            {
                "pattern": {"type": "string", "description": "Glob, e.g. **/*.ts"},
                "path": {"type": "string", "description": "Folder to search in."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": m,
                    "default": d,
                    "description": f"Most paths to return, 1-{m}.",
                },
            },
            ["pattern"],
        ),
        read_only=True,
    )


def _grep(limits: Limits) -> ToolDef:
    h = limits.grep_head_limit
    return ToolDef(
        name="Grep",
        description=(
            "Search file contents for a regex `pattern` (ripgrep syntax) under `path` "
            "(default: the workspace; a file or folder), filtered by `glob` (e.g. `*.py`) or "
            "`type` (e.g. `py`), honouring .gitignore and .ignore; an explicit `path` inside "
            "an ignored folder (node_modules, a spill file) is searched. `outputMode`: "
            "`content` (default: path, line number and text; `before`/`after` context "
            "lines come as entries of their own), `filesWithMatches`, or `count`. "
            "`caseInsensitive` and `multiline` are "
            f"available. Returns at most `headLimit` entries (default {h}) within "
            f"{_search_budget(limits)}, lines clipped at {limits.max_line_chars} characters, "
            "newest-modified files first; when `truncated` is true, call again with the "
            "`offset` the notice names, or narrow `path`, `glob` or `pattern`. Binary files "
            "are skipped."
        ),
        input_schema=_schema(
            {
                "pattern": {"type": "string", "description": "Regex (ripgrep syntax)."},
                "path": {"type": "string", "description": "File or folder to search."},
                "glob": {"type": "string", "description": "Only files matching this glob."},
                "type": {"type": "string", "description": "Only files of this rg type."},
                "outputMode": {
                    "type": "string",
                    "enum": ["content", "filesWithMatches", "count"],
                    "default": "content",
                },
                "headLimit": {
                    "type": "integer",
                    "minimum": 1,
                    "default": h,
                    "description": "Most entries to return.",
                },
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 0,
                    "description": "Entries to skip (paging).",
                },
                "caseInsensitive": {"type": "boolean", "default": False},
                "multiline": {"type": "boolean", "default": False},
                "before": {"type": "integer", "minimum": 0, "description": "Context lines."},
                "after": {"type": "integer", "minimum": 0, "description": "Context lines."},
            },
            ["pattern"],
        ),
        read_only=True,
    )


def _bash(limits: Limits) -> ToolDef:
    out, err = limits.shell_stdout, limits.shell_stderr
    lo, hi = limits.bash_timeout_min_s, limits.bash_timeout_max_s
    dflt = limits.bash_timeout_default_s
    return ToolDef(
        name="Bash",
        description=(
            "Run a command with `bash -c` in the workspace; stdin is empty. `timeout` in "
            f"seconds: default {dflt:g}, {lo:g}-{hi:g}; on expiry the whole process tree is "
            f"stopped. stdout keeps its first {format_size(out.max_bytes)} / {out.max_lines} "
            f"lines and stderr its last {format_size(err.max_bytes)} / {err.max_lines} lines; "
            "a cut stream carries a [truncated: …] marker naming a spill file with up to "
            f"{format_size(limits.spill_max_bytes)} of it, to Grep or Read with offset/limit. "
            "Prefer Read, Grep and Glob for files: they page and bound their results."
        ),
        input_schema=_schema(
            {
                "command": {"type": "string", "description": "The shell command."},
                "timeout": {
                    "type": "number",
                    "minimum": lo,
                    "maximum": hi,
                    "default": dflt,
                    "description": f"Seconds, {lo:g}-{hi:g}.",
                },
                "description": {
                    "type": "string",
                    "description": "What the command does, in a few words.",
                },
            },
            ["command"],
        ),
        read_only=False,
    )


def tool_defs(limits: Limits = DEFAULT_LIMITS) -> list[ToolDef]:
    """The four definitions as values, in a stable order."""
    return [_read(limits), _glob(limits), _grep(limits), _bash(limits)]


def builtin_tool_defs(limits: Limits = DEFAULT_LIMITS, fmt: Format = "anthropic") -> list[JSON]:
    """The four tool definitions rendered for a provider format."""
    return [d.render(fmt) for d in tool_defs(limits)]
