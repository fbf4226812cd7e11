"""The tool registry: one spec per tool, everything else derived from it.

A spec names the tool, its argument model, its result models, the module whose
``run`` executes it, its description (generated from ``Limits``: the numbers
and the scoping parameters verbatim, seed section 2), its read-only flag, and
the arguments whose range and default follow the limits. The host's dispatch,
argument parsing, the tool definitions (``toolbound.tooldefs``) and the MCP
server's input and output schemas all read these specs. Adding a tool is its
module plus one entry in ``SPECS``, and its view (``toolbound.views``: what its
results mean, asked by the model text, the protocols' error flag, the ledger
and the web view) with one line in ``views.VIEWS``.

The runner module and the models (named "module:Name", in
``toolbound.models``) are imported on a tool's first call, so ``toolbound call
Read`` pays for nothing else; a host that serves many calls imports them all
as it starts (``import_runners``), so its first call pays no import (7-9 ms
for Read or Bash here).

Pieces:
    Runner      the signature of a tool's ``run``
    ToolSpec    one tool: name, models, runner, description, limits-driven arguments
    SPECS       the tools, in a stable order
    TOOL_NAMES  their names
    spec_for    name -> spec, or TOOL_UNKNOWN
    import_runners  import every tool's module and build its models now (once a process)
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType, ModuleType
from typing import Any, Protocol, cast

from toolbound.arguments import Args, Limited, parse_args
from toolbound.context import ToolContext
from toolbound.limits import EXACT, Limits, Profile, format_size
from toolbound.results import ErrorCode, ToolError, WireModel
from toolbound.views import View, view_for


class Runner(Protocol):
    def __call__(self, args: Any, ctx: ToolContext, /) -> Awaitable[WireModel]: ...


def _no_arguments(_limits: Limits) -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool. ``limited(limits)``: the arguments that follow the limits, by wire name."""

    name: str
    # The models, as "module:Name" (imported on first use: a call builds its tool's only).
    args_model: str
    result_models: tuple[str, ...]
    module: str
    describe: Callable[[Limits], str]
    read_only: bool
    limited: Callable[[Limits], Mapping[str, Limited]] = field(default=_no_arguments)
    # What a profile with the economy budgets changes of the description, a sentence
    # appended to it.
    economy: Callable[[Limits], str] | None = None
    # When a range depends on another argument (Bash's timeout with `background`):
    # the arguments' own limits; ``limited`` then only shapes the input schema.
    limited_for: Callable[[Args, Limits], Mapping[str, Limited]] | None = None

    @property
    def args(self) -> type[Args]:
        """The argument model."""
        return cast(type[Args], _model(self.args_model))

    @property
    def results(self) -> tuple[type[WireModel], ...]:
        """The result models, the one a call returns most often first."""
        return tuple(cast(type[WireModel], _model(ref)) for ref in self.result_models)

    def parse(self, raw: object, limits: Limits) -> Args:
        """``raw`` checked against the limits, host defaults filled; TOOL_INVALID_ARGUMENT."""
        limited_for = self.limited_for
        if limited_for is None:
            return parse_args(self.name, self.args, raw, limited=self.limited(limits))
        return parse_args(self.name, self.args, raw, limited=lambda args: limited_for(args, limits))

    def description(self, limits: Limits, profile: Profile = EXACT) -> str:
        """The tool's description for the limits and the result profile in force."""
        text = self.describe(limits)
        if profile.economy_budgets and self.economy is not None:
            text = f"{text} {self.economy(limits)}"
        return text

    @property
    def view(self) -> View:
        """What the tool's results mean (``toolbound.views``): their model text, status,
        outputs, elided bytes, and a call's arguments on one line."""
        return view_for(self.name)

    def runner(self) -> Runner:
        """The tool's ``run``, its module imported on first use."""
        return cast(Runner, _module(self.module).run)


@functools.cache
def _module(name: str) -> ModuleType:
    """A tool's module, imported on first use (once: every call asks, and
    ``import_module`` of a loaded module still costs about 1 us a time)."""
    return importlib.import_module(name)


@functools.cache
def _model(ref: str) -> type:
    """The class a "module:Name" reference names, its module imported if need be."""
    module, _, name = ref.partition(":")
    return cast(type, getattr(_module(module), name))


def _search_budget(limits: Limits) -> str:
    return f"{format_size(limits.search.max_bytes)} / {limits.search.max_lines} lines"


def _describe_read(limits: Limits) -> str:
    from toolbound.tools.read_media import IMAGE_MAX_EDGE, IMAGE_MAX_PIXELS

    w = limits.read_window_lines
    return (
        "Read a text file from the workspace (relative paths are workspace-relative), "
        "this session's scratch dir (spill files named in Bash markers), or an approved "
        f"external folder. Returns a window of `limit` lines (1-{w}, default {w}) after "
        f"skipping `offset` lines (default 0), within {_search_budget(limits)}; lines "
        f"longer than {limits.max_line_chars} characters are clipped. Files of any size "
        "are paged, never refused: when `truncated` is true, call again with the "
        "`offset` the notice names. `content` is the file's exact text (no line numbers), "
        "`totalLines` appears once the window reaches the end of the file. An image (png, "
        f"jpeg, gif, webp) is returned as the image, scaled down to fit {IMAGE_MAX_EDGE} px "
        f"on its longest side and {IMAGE_MAX_PIXELS / 1e6:g} megapixels. A PDF returns its "
        f'pages\' text, `--- Page N ---` between them: `pages` ("N" or "N-M", at most '
        f"{limits.pdf_pages_max} pages; default the first {limits.pdf_pages_default}) within "
        "the same byte budget; the notice names the next pages and `totalPages` how many there "
        "are. Other binary files are refused with TOOL_BINARY_CONTENT."
    )


_SHRINKS = "Budgets shrink as the model's context fills; a notice names a shrunken budget."


def _economy_read(limits: Limits) -> str:
    window = limits.economy.read_window
    return (
        f"This host's economy profile: `limit` defaults to {window.max_lines} lines within "
        f"{format_size(window.max_bytes)}, and a window that stops before a source file's end "
        "lists the file's top-level definitions further on with their lines; "
        "a re-read of a window whose bytes are unchanged "
        "while its earlier result is still in your context returns `unchanged: true`, no "
        f"content, and a notice naming that earlier call. {_SHRINKS}"
    )


def _economy_search(limits: Limits) -> str:
    page = limits.economy.search
    return (
        f"This host's economy profile: a page holds at most {page.max_lines} entries "
        f"within {format_size(page.max_bytes)}; a cut page names how to see the rest. "
        f"{_SHRINKS}"
    )


def _economy_bash(limits: Limits) -> str:
    out, err = limits.economy.shell_stdout, limits.economy.shell_stderr
    return (
        "This host's economy profile, instead: stdout keeps its first and last lines "
        f"within {out.label} and stderr within {err.label}, a marker between naming the "
        "spill file that holds both ends; progress-bar rewrites are collapsed to what a "
        f"terminal shows and styling removed. {_SHRINKS}"
    )


def _describe_glob(limits: Limits) -> str:
    d, m = limits.glob_limit_default, limits.glob_limit_max
    return (
        "Find files whose path matches a glob `pattern` (`**` matches any depth, e.g. "
        "`src/**/*.py`; a pattern without `/` matches file names at any depth, e.g. "
        "`*.md`) under `path` (default: the workspace), honouring .gitignore and "
        ".ignore; an explicit `path` inside an ignored folder (node_modules, a spill dir) "
        "is searched; hidden files and folders are listed when a pattern component names "
        "them with a literal `.` (e.g. `.github/workflows/*.yml`, `.eslintrc.json`). "
        f"Returns at most `limit` paths (default {d}, max {m}), newest "
        "modification time first; `truncated` is true when more matched: narrow "
        "`pattern` or `path`."
    )


def _describe_list(limits: Limits) -> str:
    return (
        "List a folder's entries (`path`, default: the workspace) and its subfolders' to "
        f"`depth` levels (1-{limits.list_depth_max}, default {limits.list_depth_default}) as "
        "a tree: under each folder its subfolders first, then its files and symlinks, by "
        "name. Each entry has `path`, `type` (dir, file, link), `size` in bytes for a file "
        "and `entries` (how many it lists) for a folder. Hidden entries and those ignored by "
        ".gitignore and .ignore are left out as in Glob (a folder holding no listed file is "
        "not shown); an explicit `path` inside an ignored or hidden folder is listed. Returns "
        f"at most `limit` entries (default {limits.list_limit_default}, max "
        f"{limits.list_limit_max}) within {_search_budget(limits)}; `truncated` is true when "
        "there are more: raise `limit`, lower `depth`, or List a subfolder. Use Glob to find "
        "files by name."
    )


def _describe_grep(limits: Limits) -> str:
    h = limits.grep_head_limit
    return (
        "Search file contents for a regex `pattern` (ripgrep syntax) under `path` "
        "(default: the workspace; a file or folder), filtered by `glob` (e.g. `*.py`) or "
        "`type` (e.g. `py`), honouring .gitignore and .ignore; an explicit `path` inside "
        "an ignored folder (node_modules, a spill file) is searched. `outputMode`: "
        "`content` (default: path, line number and text; `before`/`after` context "
        "lines come as entries of their own), `filesWithMatches`, or `count`. "
        "`caseInsensitive` and `multiline` are "
        f"available. Returns at most `headLimit` matches (default {h}; their context lines "
        f"come with them) within "
        f"{_search_budget(limits)}, lines clipped at {limits.max_line_chars} characters, "
        "newest-modified files first; when `truncated` is true, call again with the "
        "`offset` the notice names, or narrow `path`, `glob` or `pattern`. Binary files "
        "are skipped."
    )


def _describe_bash(limits: Limits) -> str:
    out, err = limits.shell_stdout, limits.shell_stderr
    lo, hi = limits.bash_timeout_min_s, limits.bash_timeout_max_s
    return (
        "Run a command with `bash -c` in the workspace; stdin is empty. `timeout` in "
        f"seconds: default {limits.bash_timeout_default_s:g}, {lo:g}-{hi:g}; on expiry the "
        f"whole process tree is stopped. stdout keeps its first {format_size(out.max_bytes)} "
        f"/ {out.max_lines} lines and stderr its last {format_size(err.max_bytes)} / "
        f"{err.max_lines} lines; a cut stream carries a [truncated: …] marker naming a spill "
        f"file with up to {format_size(limits.spill_max_bytes)} of it, to Grep or Read with "
        "offset/limit. Prefer Read, Grep and Glob for files: they page and bound their results. "
        "`background: true` starts the command as a job and returns its `jobId` at once "
        f"(a dev server, a watcher, a build past {hi:g} s): its `timeout` is then "
        f"{lo:g}-{limits.job_timeout_max_s:g} s with no default, it runs until it ends, "
        f"JobStop, or the session ends; at most {limits.job_max_running} run at once. Read "
        "its output with JobOutput." + _describe_bash_0_3(limits)
    )


def _describe_bash_0_3(limits: Limits) -> str:
    """Bash's working folder, a job's buffering, terminal and input (CONTRACT section 15)."""
    return (
        " `workdir`: the workspace folder the command starts in (default the workspace "
        "root; a folder outside it, or a symlink leading out, is TOOL_PATH_NOT_ALLOWED): "
        "use it instead of `cd dir &&`. A job's stdout and stderr are line-buffered for "
        "Python and C stdio programs, so a server's first lines arrive as it prints them. "
        f"`tty: true` (jobs only) runs the job on a {limits.job_tty_columns}x"
        f"{limits.job_tty_rows} pseudo-terminal (one stream, stdout; terminal rewrites "
        "shown collapsed) for programs that need one: REPLs, prompts, full-screen tools. "
        "Answer a job's prompts with JobInput; wait for a job to finish with JobOutput "
        '`waitFor: "exit"`.'
    )


def _log_bound(limits: Limits) -> str:
    return (
        f"its first {format_size(limits.job_log_head_bytes)} and its last "
        f"{format_size(limits.job_log_tail_bytes)} or more (at most "
        f"{format_size(limits.job_log_head_bytes + 2 * limits.job_log_tail_bytes)})"
    )


def _describe_job_output(limits: Limits) -> str:
    out, err = limits.shell_stdout, limits.shell_stderr
    return (
        "Read a background job's output (started by Bash with `background: true`), or list "
        "this session's jobs when `jobId` is left out. Each stream is paged by byte "
        "position: `since` ({stdout, stderr}, a `next` an earlier result returned; default: "
        "where the previous JobOutput of the job stopped; {stdout: 0, stderr: 0} from the "
        "start); the same `since` gives the same bytes while the log holds them. stdout "
        f"shows its first {format_size(out.max_bytes)} / {out.max_lines} lines from `since` "
        f"(call again to go on) and stderr its last {format_size(err.max_bytes)} / "
        f"{err.max_lines} lines; a cut stream carries a [truncated: …] marker naming the "
        "job's log file, to Read or Grep. `waitS` (0-"
        f"{limits.job_wait_max_s:g}, default 0) waits for new output, the job's end, or, "
        "with `until` (an RE2 regex: Python `re` syntax without backreferences or look-around, "
        "matched in linear time; `^`/`$` at each line), for a line that matches "
        'it (returned in `matched`): e.g. `until: "listening on"` to wait for a server. '
        "Returns `state` (running, exited, killed, timedOut), `exitCode`, `signal`, `next`, "
        f"`totals` and `omitted`. Each log keeps {_log_bound(limits)} of its stream and "
        "counts the bytes and lines it drops between. "
        '`waitFor: "exit"` instead gathers the output until the job ends or `waitS` passes '
        "(a build or a test run in the background: one call, not one per line); the "
        "default `output` returns at the first new output. An invalid regex is "
        "TOOL_INVALID_PATTERN, an unknown job TOOL_JOB_NOT_FOUND."
    )


def _describe_job_input(limits: Limits) -> str:
    return (
        "Write `input` to a running background job's stdin (its pseudo-terminal when it was "
        "started with `tty: true`): answer a REPL, a prompt (`read -p`, a confirmation), "
        "an interactive tool. The text is sent as is: end a line with \\n (a terminal's "
        "Ctrl-C is \\u0003). At most "
        f"{format_size(limits.job_input_max_bytes)} a call; `close: true` closes stdin "
        "after it (end of file). Then waits up to "
        f"{limits.job_input_wait_s:g} s for what the job prints (returning once it pauses "
        f"for {limits.job_input_quiet_s:g} s, or the job ends) and returns it as JobOutput "
        "does, from where the previous JobOutput stopped. A job that has ended is "
        "TOOL_INVALID_ARGUMENT with its state, an unknown one TOOL_JOB_NOT_FOUND. A "
        "foreground Bash command's stdin is empty: start a command that reads input with "
        "`background: true`."
    )


def _describe_job_stop(limits: Limits) -> str:
    return (
        "Stop a background job and its whole process tree (SIGTERM, "
        f"{limits.kill_grace_s:g} s grace, SIGKILL; children that called setsid or "
        "double-forked included) and return its final output as JobOutput does, from where "
        "the previous JobOutput stopped. A job that already ended just returns its output. "
        "An unknown job is TOOL_JOB_NOT_FOUND."
    )


def _bash_timeout(limits: Limits, *, background: bool = False) -> Limited:
    """Bash's timeout: 1-300 s, default 60; a background job's 1-86400 s, no default."""
    if background:
        return Limited(
            None, limits.bash_timeout_min_s, limits.job_timeout_max_s, unit=" seconds for a job"
        )
    return Limited(
        limits.bash_timeout_default_s,
        limits.bash_timeout_min_s,
        limits.bash_timeout_max_s,
        unit=" seconds",
        name_default=True,
    )


_CHANGE_RULES = (
    "in the workspace only (not the scratch dir or external folders; `../` or a symlink "
    "leading out is refused with TOOL_PATH_NOT_ALLOWED)"
)


def _describe_change_result(limits: Limits, what: str) -> str:
    return (
        "The change is atomic (temporary file, fsync, rename): the file's mode, line endings "
        "and BOM are kept and a partial file is never left. A file must have been Read in "
        "this session first (TOOL_NOT_READ) and be unchanged since (TOOL_FILE_CHANGED: Read "
        "it again); after an Edit or Write, the file may be changed again without a new "
        f"Read. Binary files are refused with TOOL_BINARY_CONTENT. Returns {what}, `created` "
        f"and a unified `diff` of the change within {_search_budget(limits)} (`truncated` "
        "when cut)."
    )


def _describe_edit(limits: Limits) -> str:
    return (
        f"Replace exact text in a file {_CHANGE_RULES}. `oldString` must match the file's "
        "text exactly (copy it from Read's `content`) and occur exactly once, unless "
        "`replaceAll` is true (default false): no occurrence is TOOL_NO_MATCH, more than "
        "one is TOOL_AMBIGUOUS_MATCH naming the count and the first line numbers (add "
        "surrounding lines to `oldString` to make it unique). `newString` replaces it. "
        "Several changes to one file: `edits`, a list of {oldString, newString, replaceAll?} "
        "instead of the three, applied in order (each to the text the earlier ones left), "
        "all or none; a failing edit is named by its index. "
        + _describe_change_result(limits, "`replacements`")
    )


def _describe_write(limits: Limits) -> str:
    return (
        f"Create a file, or overwrite one with the whole `content`, {_CHANGE_RULES}; missing "
        "parent folders are created. Prefer Edit to change part of an existing file. "
        + _describe_change_result(limits, "`bytes` written")
    )


def _describe_apply_patch(limits: Limits) -> str:
    return (
        f"Apply a patch in Codex CLI's apply_patch format to files {_CHANGE_RULES}: "
        "`*** Begin Patch`, then per file `*** Add File: path` (its lines, each prefixed "
        "with +), `*** Delete File: path`, or `*** Update File: path` (optionally `*** Move "
        "to: new/path`) and its chunks: `@@` (optionally naming the class or function line "
        "the chunk is in; several `@@` lines narrow it), then ` ` context, `-` removed and "
        "`+` added lines, `*** End of File` when the chunk ends the file; then `*** End "
        "Patch`. Every file changes or none, atomically, keeping each file's mode, line "
        "endings and BOM. No Read is needed first, but a file changed since this session "
        "last read or wrote it is TOOL_FILE_CHANGED, and replacing an existing file whole "
        "(Add File, Move to onto it) needs a Read first, as Write (TOOL_NOT_READ). Each "
        "chunk matches exactly, else ignoring trailing whitespace, else ignoring leading and "
        "trailing whitespace: the result names how (`exact`, `trailing-space`, "
        "`whitespace`) and the line. A chunk found nowhere is TOOL_NO_MATCH showing the "
        "nearest lines with their numbers; one matching several places without an `@@` line "
        "is TOOL_AMBIGUOUS_MATCH (add an `@@` line or more context); a chunk already applied "
        "is reported (`alreadyApplied`), not refused. Returns `files` ({path, action: add | "
        "update | delete | move, hunks: [{matched, line}]}) and one unified `diff` within "
        f"{_search_budget(limits)} (`truncated` when cut)."
    )


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="Read",
        args_model="toolbound.models.read:ReadArgs",
        result_models=(
            "toolbound.models.read:ReadResult",
            "toolbound.models.read:ReadImageResult",
            "toolbound.models.read:ReadPdfResult",
        ),
        module="toolbound.tools.read",
        describe=_describe_read,
        economy=_economy_read,
        read_only=True,
        limited=lambda limits: {
            "limit": Limited(limits.read_window_lines, 1, limits.read_window_lines, unit=" lines")
        },
    ),
    ToolSpec(
        name="Glob",
        args_model="toolbound.models.glob:GlobArgs",
        result_models=("toolbound.models.glob:GlobResult",),
        module="toolbound.tools.glob",
        describe=_describe_glob,
        economy=_economy_search,
        read_only=True,
        limited=lambda limits: {
            "limit": Limited(limits.glob_limit_default, 1, limits.glob_limit_max)
        },
    ),
    ToolSpec(
        name="Grep",
        args_model="toolbound.models.grep:GrepArgs",
        result_models=(
            "toolbound.models.grep:GrepContentResult",
            "toolbound.models.grep:GrepFilesResult",
            "toolbound.models.grep:GrepCountResult",
        ),
        module="toolbound.tools.grep",
        describe=_describe_grep,
        economy=_economy_search,
        read_only=True,
        limited=lambda limits: {"headLimit": Limited(limits.grep_head_limit)},
    ),
    ToolSpec(
        name="Bash",
        args_model="toolbound.models.bash:BashArgs",
        result_models=("toolbound.models.bash:BashResult", "toolbound.jobs.models:JobStartResult"),
        module="toolbound.tools.bash",
        describe=_describe_bash,
        economy=_economy_bash,
        read_only=False,
        limited=lambda limits: {"timeout": _bash_timeout(limits)},
        limited_for=lambda args, limits: {
            "timeout": _bash_timeout(limits, background=getattr(args, "background", False) is True)
        },
    ),
    ToolSpec(
        name="Edit",
        args_model="toolbound.models.change:EditArgs",
        result_models=("toolbound.models.change:EditResult",),
        module="toolbound.tools.edit",
        describe=_describe_edit,
        read_only=False,
    ),
    ToolSpec(
        name="Write",
        args_model="toolbound.models.change:WriteArgs",
        result_models=("toolbound.models.change:WriteResult",),
        module="toolbound.tools.write",
        describe=_describe_write,
        read_only=False,
    ),
    ToolSpec(
        name="JobOutput",
        args_model="toolbound.models.jobs:JobOutputArgs",
        result_models=(
            "toolbound.jobs.models:JobOutputResult",
            "toolbound.jobs.models:JobListResult",
        ),
        module="toolbound.tools.job_output",
        describe=_describe_job_output,
        read_only=True,
        limited=lambda limits: {"waitS": Limited(0, 0, limits.job_wait_max_s, unit=" seconds")},
    ),
    ToolSpec(
        name="JobStop",
        args_model="toolbound.models.jobs:JobStopArgs",
        result_models=("toolbound.jobs.models:JobOutputResult",),
        module="toolbound.tools.job_stop",
        describe=_describe_job_stop,
        read_only=False,
    ),
    ToolSpec(
        name="ApplyPatch",
        args_model="toolbound.models.apply_patch:ApplyPatchArgs",
        result_models=("toolbound.models.apply_patch:ApplyPatchResult",),
        module="toolbound.tools.apply_patch",
        describe=_describe_apply_patch,
        read_only=False,
    ),
    ToolSpec(
        name="List",
        args_model="toolbound.models.listing:ListArgs",
        result_models=("toolbound.models.listing:ListResult",),
        module="toolbound.tools.listing",
        describe=_describe_list,
        read_only=True,
        limited=lambda limits: {
            "depth": Limited(limits.list_depth_default, 1, limits.list_depth_max),
            "limit": Limited(limits.list_limit_default, 1, limits.list_limit_max),
        },
    ),
    ToolSpec(
        name="JobInput",
        args_model="toolbound.models.jobs:JobInputArgs",
        result_models=("toolbound.jobs.models:JobOutputResult",),
        module="toolbound.tools.job_input",
        describe=_describe_job_input,
        read_only=False,
    ),
)

TOOL_NAMES: tuple[str, ...] = tuple(spec.name for spec in SPECS)

_BY_NAME: Mapping[str, ToolSpec] = MappingProxyType({spec.name: spec for spec in SPECS})


def spec_for(name: str) -> ToolSpec:
    """The spec of the tool called ``name``; TOOL_UNKNOWN naming the tools otherwise."""
    spec = _BY_NAME.get(name)
    if spec is None:
        raise ToolError(
            ErrorCode.UNKNOWN,
            f"There is no tool named {name!r}; the tools are {', '.join(TOOL_NAMES)}.",
        )
    return spec


def import_runners() -> None:
    """Import every tool's module and view now rather than on its first call, and build its
    models (pydantic builds a model's validator on its first use: ``defer_build``)."""
    for spec in SPECS:
        importlib.import_module(spec.module)
        _ = spec.view
        spec.args.model_rebuild()
        for result in spec.results:
            result.model_rebuild()
    # Then every other model (the ones within results, the events) on its own.
    models: list[type[Args] | type[WireModel]] = [Args, WireModel]
    while models:
        model = models.pop()
        model.model_rebuild()
        models.extend(model.__subclasses__())
