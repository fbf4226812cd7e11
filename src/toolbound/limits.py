"""The seed's limits table as one frozen value.

Every budget, ceiling and default that toolbound enforces lives here, with its
unit in its name (``_bytes``, ``_lines``, ``_chars``, ``_s``, ``_tokens``).
Nothing else in the code repeats these numbers: tools, markers and tool
descriptions all read them from a :class:`Limits`. A program embedding
toolbound overrides them with ``Limits(...)`` or ``DEFAULT_LIMITS.replace(...)``.

Pieces:
    KB              1024 bytes (the seed's KB)
    Budget          one byte + line ceiling
    format_size, budget_label  ``96KB``, ``4000 lines / 96KB``: sizes as markers state them
    Economy         the economy profile's budgets and how they shrink as the context fills
    Limits          the whole table
    DEFAULT_LIMITS  the seed's numbers
    format_size     a size as the markers state it: ``96KB``, else in bytes
    human_size      a size as a sentence states it: ``2.3 MB (2412345 bytes)``, ``512 MB``
    Keep, Ends      which end(s) of a text a cut keeps: head | tail (| both)
    StreamBudget    a Bash stream's budget and the end(s) it keeps
    Profile         a result profile: what differs between exact and economy, one value
    EXACT, ECONOMY, PROFILES  the profiles; profile_named parses a name
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

KB = 1024

# One end of a text (a seed cut), or both ends of it (an economy stream).
Keep = Literal["head", "tail"]
Ends = Literal["head", "tail", "both"]


@dataclass(frozen=True, slots=True)
class Budget:
    """A result budget: at most ``max_bytes`` UTF-8 bytes and ``max_lines`` lines."""

    max_bytes: int
    max_lines: int

    def __post_init__(self) -> None:
        if self.max_bytes < 1 or self.max_lines < 1:
            raise ValueError("a budget needs at least 1 byte and 1 line")

    @property
    def label(self) -> str:
        """The budget as the markers state it, e.g. ``4000 lines / 96KB``."""
        return budget_label(self.max_lines, self.max_bytes)


def format_size(n_bytes: int) -> str:
    """``98304`` -> ``96KB``; sizes that are not whole KB stay in bytes."""
    if n_bytes % KB == 0:
        return f"{n_bytes // KB}KB"
    return f"{n_bytes} bytes"


def human_size(n_bytes: int, *, exact: bool = True) -> str:
    """``2412345`` -> ``2.3 MB (2412345 bytes)`` (``exact``: the bytes too), KB = 1024
    bytes as everywhere; sizes under 1 KB in bytes only."""
    size = float(n_bytes)
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if size < KB or unit == "TB":
            break
        size /= KB
    if unit == "bytes":
        return f"{n_bytes} bytes"
    short = f"{size:.1f}".removesuffix(".0") + f" {unit}"
    return f"{short} ({n_bytes} bytes)" if exact else short


def budget_label(max_lines: int, max_bytes: int) -> str:
    """A budget as the markers and notices state it: ``4000 lines / 96KB``."""
    return f"{max_lines} lines / {format_size(max_bytes)}"


@dataclass(frozen=True, slots=True)
class Economy:
    """The economy profile's budgets (CONTRACT section 8), KB = 1024 bytes.

    Bash's model budgets are smaller than the seed's and keep both ends of each
    stream: ``*_head_share`` of a budget goes to the stream's first lines, the
    rest to its last (chosen by measurement on bench/economy.py's trace; the
    figures are in the commit that set them). The capture and the spill keep
    both ends too, half each of the seed's ceilings.

    Every budget shrinks as the model's context fills (toolbound/shrink.py):
    below ``shrink_steps``' first fill share it is whole; from each step's
    share on it is that step's factor of itself, never below ``shrink_floor``
    (nor above the budget it shrinks).
    """

    # bench/economy.py on its two traces (issue 30): 4KB / 200 lines (stderr
    # 2KB / 100) keeps every needle visible or in the spill, hides fewer than
    # Codex CLI's 10,000 bytes, for 0.44x Codex's bytes on the shell-heavy trace
    # (6KB: 0.53x; 12KB / 300, the earlier budget: 0.87x). 100 lines hid an
    # `ls -R | head -200` that 200 lines keep whole.
    shell_stdout: Budget = Budget(max_bytes=4 * KB, max_lines=200)
    stdout_head_share: float = 0.5
    # A failing command's message is its last words: three quarters to the tail.
    shell_stderr: Budget = Budget(max_bytes=2 * KB, max_lines=100)
    stderr_head_share: float = 0.25
    # Read's window (tools/read.py window_for), never more than the exact
    # profile's: bench/economy.py --windows chose 200 lines / 16 KB; with the
    # outline below naming the definitions past a window, 150 lines / 12 KB hides
    # no more needles (0.46x Codex's bytes on bench/economy.py, 16 KB: 0.54x).
    read_window: Budget = Budget(max_bytes=12 * KB, max_lines=150)
    # A window that stops before a source file's end names the file's top-level
    # definitions further on (bounds/outline.py): at most this many, each line
    # clipped at this many characters, found in at most this many bytes after it.
    outline_entries: int = 40
    outline_line_chars: int = 100
    outline_scan_bytes: int = 1024 * KB
    # Grep's and Glob's page (entries within bytes), never more than the exact
    # profile's: a cut page names its next offset, so nothing is out of reach.
    # (8 KB / 100: a 13 KB page of ERROR lines became 4.7 KB, every needle kept.)
    search: Budget = Budget(max_bytes=8 * KB, max_lines=100)
    # (fill share of the context window, factor of the budget from there on).
    shrink_steps: tuple[tuple[float, float], ...] = ((0.5, 0.5), (0.7, 0.25), (0.85, 0.125))
    shrink_floor: Budget = Budget(max_bytes=4 * KB, max_lines=100)

    def __post_init__(self) -> None:
        for share in (self.stdout_head_share, self.stderr_head_share):
            if not 0.0 < share < 1.0:
                raise ValueError("a head share must be between 0 and 1")
        fills = [fill for fill, _ in self.shrink_steps]
        factors = [factor for _, factor in self.shrink_steps]
        if fills != sorted(fills) or any(not 0.0 < f <= 1.0 for f in factors):
            raise ValueError("shrink steps need rising fill shares and factors in (0, 1]")
        if factors != sorted(factors, reverse=True):
            raise ValueError("a fuller context must not grow a budget back")
        if min(self.outline_entries, self.outline_line_chars, self.outline_scan_bytes) < 0:
            raise ValueError("outline limits must not be negative")


@dataclass(frozen=True, slots=True)
class Limits:
    """Every limit of seed section 2, one frozen value (KB = 1024 bytes)."""

    # Read / Glob / Grep result (BUDGET_SEARCH): re-fetchable, so the tighter one.
    search: Budget = Budget(max_bytes=48 * KB, max_lines=2000)
    # Bash stdout keeps its head, stderr its tail (BUDGET_SHELL / BUDGET_SHELL_ERR).
    shell_stdout: Budget = Budget(max_bytes=96 * KB, max_lines=4000)
    shell_stderr: Budget = Budget(max_bytes=96 * KB, max_lines=4000)
    # Any single line in Read and Grep results (MAX_LINE_CHARS).
    max_line_chars: int = 2000
    # Read window.
    read_window_lines: int = 2000
    # Grep matches (headLimit).
    grep_head_limit: int = 200
    # Glob entries (limit).
    glob_limit_default: int = 100
    glob_limit_max: int = 1000
    # List (CONTRACT 15): how deep below the folder, and how many entries.
    list_depth_default: int = 2
    list_depth_max: int = 5
    list_limit_default: int = 200
    list_limit_max: int = 1000
    # Read of a PDF (CONTRACT 15): pages shown without `pages`, and the most a call.
    pdf_pages_default: int = 10
    pdf_pages_max: int = 20
    # Bash capture retention per stream (CAPTURE_MAX_BYTES / CAPTURE_MAX_LINES):
    # deliberately looser than the result budget, so a spill can be fuller.
    capture_max_bytes: int = 512 * KB
    capture_max_lines: int = 200_000
    # Spilled full output (SPILL_MAX_BYTES).
    spill_max_bytes: int = 512 * KB
    # Bash timeout.
    bash_timeout_default_s: float = 60.0
    bash_timeout_min_s: float = 1.0
    bash_timeout_max_s: float = 300.0
    # Between SIGTERM and SIGKILL when a tree is stopped.
    kill_grace_s: float = 2.0
    # How long the pipes are drained after the shell exited while descendants linger.
    linger_drain_s: float = 0.25
    # Background jobs (CONTRACT section 9): how many run at once in a session, and
    # how many a session remembers (the oldest ended one's log goes first).
    job_max_running: int = 8
    job_max_kept: int = 32
    # A job's timeout: none by default, at most a day.
    job_timeout_max_s: float = 86400.0
    # How long one JobOutput call may wait for output, the end, or an `until` line.
    job_wait_max_s: float = 300.0
    # JobInput (CONTRACT section 15): the most it writes a call; how long it waits
    # for what the job prints after (it returns once that output has paused for
    # job_input_quiet_s, or the job ended).
    job_input_max_bytes: int = 64 * KB
    job_input_wait_s: float = 2.0
    job_input_quiet_s: float = 0.2
    # A `tty: true` job's pseudo-terminal: fixed columns and rows.
    job_tty_columns: int = 120
    job_tty_rows: int = 40
    # Each stream's log on disk: its first part, then a rolling last part of at
    # least job_log_tail_bytes and at most twice that (the middle is dropped and
    # counted), so a log never exceeds head + 2 * tail (+ one read) bytes.
    job_log_head_bytes: int = 1024 * KB
    job_log_tail_bytes: int = 4096 * KB
    # Live chunk coalescing.
    chunk_interval_s: float = 0.05
    chunk_max_bytes: int = 64 * KB
    # A Grep or Glob scan running past this is stopped and returns what it has.
    search_timeout_s: float = 30.0
    # After such a stop, Grep still reads the lines of the files it found for this long.
    search_page_grace_s: float = 5.0
    # Checkpoint retention (D203) and the head share kept of the crossing message.
    checkpoint_retained_tokens: int = 20_000
    checkpoint_head_share: float = 0.75
    # How long a store write waits for another process's write lock.
    store_busy_timeout_s: float = 5.0
    # Scratch dirs of sessions untouched for longer than this are swept at start.
    scratch_stale_s: float = 24 * 3600.0
    # How many bytes of a file the binary sniff reads, and its non-printable share.
    binary_sniff_bytes: int = 4 * KB
    binary_nonprintable_ratio: float = 0.30
    # The Bash sandbox's bounds (CONTRACT section 11), for each confined command:
    # its processes (ulimit -u, and a pids cgroup where the host may make one),
    # each process's address space (ulimit -v: generous, as runtimes such as V8
    # and the JVM reserve far more than they use), and its private /tmp's size.
    sandbox_max_processes: int = 512
    sandbox_memory_bytes: int = 8 * 1024 * 1024 * KB
    sandbox_tmp_bytes: int = 1024 * 1024 * KB
    # The economy profile's budgets (opt-in; the seed's table above is the exact profile).
    economy: Economy = Economy()

    def __post_init__(self) -> None:
        if self.capture_max_bytes < max(self.shell_stdout.max_bytes, self.shell_stderr.max_bytes):
            raise ValueError("the capture ceiling must sit above the shell result budget")
        # The economy capture keeps half the ceiling at each end.
        economy = self.economy
        if self.capture_max_bytes // 2 < max(
            economy.shell_stdout.max_bytes, economy.shell_stderr.max_bytes
        ):
            raise ValueError("half the capture ceiling must sit above the economy shell budget")
        if (
            not 0
            < self.bash_timeout_min_s
            <= self.bash_timeout_default_s
            <= self.bash_timeout_max_s
        ):
            raise ValueError("need 0 < timeout min <= default <= max")
        if not 1 <= self.glob_limit_default <= self.glob_limit_max:
            raise ValueError("need 1 <= glob default <= glob max")
        if not 0.0 < self.checkpoint_head_share < 1.0:
            raise ValueError("checkpoint_head_share must be between 0 and 1")
        if self.max_line_chars < 1 or self.read_window_lines < 1 or self.grep_head_limit < 1:
            raise ValueError("line, window and head limits must be positive")
        if self.job_max_running < 1 or self.job_max_kept < self.job_max_running:
            raise ValueError("need 1 <= job_max_running <= job_max_kept")
        if min(self.sandbox_max_processes, self.sandbox_memory_bytes, self.sandbox_tmp_bytes) < 1:
            raise ValueError("a sandbox bound must be positive")
        if self.job_log_head_bytes < 1 or self.job_log_tail_bytes < 1:
            raise ValueError("a job log keeps at least one byte of each part")

    def replace(self, **changes: Any) -> Limits:
        """A copy with some limits changed (validated again)."""
        return dataclasses.replace(self, **changes)


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class StreamBudget:
    """How a Bash stream is kept for the model: within ``budget``, its ``keep`` end(s);
    with both ends, ``head_share`` of the budget goes to the head."""

    budget: Budget
    keep: Ends
    head_share: float = 1.0


ProfileName = Literal["exact", "economy"]


@dataclass(frozen=True, slots=True)
class Profile:
    """A result profile (CONTRACT section 8): what differs between two ways of
    spending the model's context on the same facts, as one value.

    ``name`` is how the CLI, the greeting and the store's ``profile`` column
    call it. ``economy_budgets``: the tools start from ``Limits.economy``'s
    budgets (a Read window, a search page, both ends of each Bash stream) and
    their descriptions say so, instead of the seed's table. ``shrinks``: those
    budgets shrink as the model's context fills (toolbound/shrink.py).
    ``read_hints``: Read answers a re-read of a window still in the context
    with ``unchanged``, and a cut window names what lies beyond it (the
    definitions further on, Grep for a clipped line). ``summary`` is the line
    the MCP instructions give it.

    A tool never asks which profile is in force: it asks the value (and the
    per-call ``shrink.Budgets`` the host makes from it) for its budget.
    """

    name: ProfileName
    summary: str
    economy_budgets: bool = False
    shrinks: bool = False
    read_hints: bool = False

    def read_window(self, limits: Limits) -> Budget | None:
        """Read's default window (lines, within bytes), or None for the seed's: the
        call's ``limit`` within ``limits.search``."""
        if not self.economy_budgets:
            return None
        window = limits.economy.read_window
        return Budget(
            max_bytes=min(window.max_bytes, limits.search.max_bytes),
            max_lines=min(window.max_lines, limits.read_window_lines),
        )

    def search(self, limits: Limits) -> Budget:
        """Grep's and Glob's page (entries within bytes), never more than the seed's."""
        if not self.economy_budgets:
            return limits.search
        page = limits.economy.search
        return Budget(
            max_bytes=min(limits.search.max_bytes, page.max_bytes),
            max_lines=min(limits.search.max_lines, page.max_lines),
        )

    def streams(self, limits: Limits) -> tuple[StreamBudget, StreamBudget]:
        """Bash's stdout and stderr: the seed's head and tail, or the economy's both ends."""
        if not self.economy_budgets:
            return (
                StreamBudget(limits.shell_stdout, "head"),
                StreamBudget(limits.shell_stderr, "tail"),
            )
        economy = limits.economy
        return (
            StreamBudget(economy.shell_stdout, "both", economy.stdout_head_share),
            StreamBudget(economy.shell_stderr, "both", economy.stderr_head_share),
        )


# The seed's table, as it is.
EXACT = Profile(name="exact", summary="exact (the seed's budgets)")
# The same facts in less of the context (opt-in; ``toolbound serve``'s default).
ECONOMY = Profile(
    name="economy",
    summary="economy (the same facts in less of the context: smaller budgets that "
    "keep both ends of a command's output)",
    economy_budgets=True,
    shrinks=True,
    read_hints=True,
)

PROFILES: tuple[Profile, ...] = (EXACT, ECONOMY)
PROFILE_NAMES: tuple[ProfileName, ...] = tuple(p.name for p in PROFILES)


def profile_named(name: str | Profile) -> Profile:
    """The profile called ``name`` (a Profile is itself); ValueError naming the
    profiles otherwise."""
    if isinstance(name, Profile):
        return name
    for profile in PROFILES:
        if name == profile.name:
            return profile
    raise ValueError(f"unknown profile {name!r}; the profiles are {', '.join(PROFILE_NAMES)}")
