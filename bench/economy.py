"""Benchmark: what a bug-fixing trace costs the model's context, per result policy (issue 13).

The trace (bench/economy_trace.py: 48 calls, each with the needle it was made
for) is replayed through the CLI, one ``toolbound call TOOL JSON --events``
per call, in one ``--session`` and ``--data-dir``, and the model text of each
result is what is measured (``toolbound.model_text``, the text of the result
event). In the same run the
anchors' published result policies are simulated on the same raw outputs
(the file's lines, ``rg``'s whole output, the command's whole output):

    Codex CLI    every result 10,000 bytes, half head, half tail
    Claude Code  Read 2000 lines, 2000 chars a line, numbered; Bash 30,000 chars,
                 middle cut; Grep 250 entries, 500 columns; Glob 100
    Gemini CLI   Read 2000 lines / 2000 chars a line; Bash 40,000 chars, 20% head
                 80% tail; Grep 100 matches (lines clipped at 2000 chars, as its
                 Read clips them); Glob uncapped (no published cap)
    opencode     Read 2000 lines / 50 KB, numbered; Bash head kept (2000 lines /
                 50 KB); Grep (lines clipped at 2000 chars) and Glob 100

Printed per policy: the trace's share of a 200k-token context (model bytes /
4), the read/search calls' share of it, needles visible in the model text
(colour codes between a needle's words do not hide it: ``holds``), and
needles visible or reachable through the result's own continuation: a Read
window naming its next offset with the needle on a later line (or naming
Grep for a clipped line that holds it), a cut Grep or
Glob (its notice names the next offset or asks for a narrower pattern) whose
whole output holds the needle, a Bash spill file holding it. Codex names no
continuation; the anchors' Bash results name none either (their published
policies); a line clipped inside a Read window is not reachable by paging.

The economy row is the same replay with ``--profile economy``. A Read it
answers ``unchanged`` counts as visible (reachable) when the earlier call its
notice names (still in the context) showed (or reached) the needle. Then the
model bytes per tool and policy, and the goals (issues 13 and 30): economy at
most 0.2x exact and 0.5x Codex, every needle visible or reachable, and no
more needles hidden (not visible) than Codex hides.

``--trace shell`` replays bench/economy_shell_trace.py instead: 30 calls, 25
of them Bash (make, a test run, find, ls -R, git log, JSON dumps).

``--windows`` prints instead what the trace's Read calls cost per window size,
paged on to their needles: the figure the economy's Read window was chosen by
(tools/read.py ``window_for``).

    .venv/bin/python bench/economy.py
    .venv/bin/python bench/economy.py --trace shell
    .venv/bin/python bench/economy.py --windows
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolbound import model_text
from toolbound.bounds.terminal import strip_styling
from toolbound.limits import DEFAULT_LIMITS, Budget
from toolbound.search.rg import rg_binary

# The script's folder holds bench/mcp.py, which must not shadow the mcp SDK:
# take it off the path and load the trace module from its file.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, _HERE / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# ``--trace shell``: the shell-heavy trace (bench/economy_shell_trace.py) instead.
SHELL_TRACE = sys.argv[1:3] == ["--trace", "shell"]
economy_trace = _load("economy_trace")
_trace = _load("economy_shell_trace") if SHELL_TRACE else economy_trace
TRACE = _trace.TRACE
Call = economy_trace.Call
build_workspace = _trace.build_workspace

CONTEXT_TOKENS = 200_000
BYTES_PER_TOKEN = 4
TOOLBOUND = str(Path(sys.executable).with_name("toolbound"))
RG = str(rg_binary())


def model_text_of(tool: str, result: dict[str, Any]) -> str:
    """The model text of a result (what the result event's ``text`` holds)."""
    return model_text(tool, result)


@dataclass
class Outcome:
    """One call's model text under one policy, and whether its needle survived."""

    call: Call
    text: str
    visible: bool
    reachable: bool


@dataclass
class Raw:
    """What a call's tool saw in full, for the anchors and for reachability."""

    text: str  # the whole output (Read: the lines from the offset on)
    lines_before: int = 0  # Read: the offset
    streams: tuple[bytes, bytes] = (b"", b"")  # Bash: stdout, stderr


def holds(text: str, needle: str) -> bool:
    """Whether ``text`` shows ``needle`` to a reader: colour codes between its
    words do not hide it (``\x1b[31mFAILED\x1b[0m tests/...`` shows ``FAILED tests/...``)."""
    return needle in text or needle in strip_styling(text).text


# What an economy Read window with a clipped line names as the way to its rest.
GREP_FOR_CLIPPED = 'Grep it (path "{path}")'
# The call an economy re-read names, in its notice (notices.read_unchanged).
UNCHANGED_SINCE = re.compile(r"^Unchanged since (\S+) \(")


def replay(profile: str, workspace: Path, data_dir: Path, raws: list[Raw]) -> list[Outcome]:
    """The trace through ``toolbound call --events`` under ``profile``, one session.

    A Read answered ``unchanged`` shows no content: its needle is reachable when
    the earlier call its notice names (still in the context) showed or reached it.
    """
    session = f"economy-{profile}"
    outcomes: list[Outcome] = []
    by_id: dict[str, tuple[str, dict[str, Any]]] = {}  # toolCallId -> text, result
    for call, raw in zip(TRACE, raws, strict=True):
        argv = [TOOLBOUND, "call", call.tool, json.dumps(call.args), "--events"]
        argv += ["--workspace", str(workspace), "--data-dir", str(data_dir)]
        argv += ["--session", session]
        if profile != "exact":
            argv += ["--profile", profile]
        run = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        event = json.loads(run.stdout.strip().splitlines()[-1])
        result = event["result"]
        text = event.get("text") or model_text_of(call.tool, result)
        visible = holds(text, call.needle)
        reachable = visible or _ours_reach(call, result, raw)
        if result.get("unchanged"):
            named = UNCHANGED_SINCE.match(result["notice"])
            earlier = by_id.get(named.group(1)) if named else None
            # The earlier result is in the context: what it shows, this call shows.
            visible = earlier is not None and holds(earlier[0], call.needle)
            reachable = earlier is not None and (visible or _ours_reach(call, earlier[1], raw))
        outcomes.append(Outcome(call, text, visible, reachable))
        by_id[event["toolCallId"]] = (text, result)
    return outcomes


def _ours_reach(call: Call, result: dict[str, Any], raw: Raw) -> bool:
    """Whether the result's own continuation leads to the needle."""
    if "error" in result:
        return False
    if call.tool == "Bash":
        spills = result.get("spill") or {}
        return any(holds(Path(p).read_text(errors="replace"), call.needle) for p in spills.values())
    if not result.get("truncated"):
        return False
    if call.tool == "Read":
        later = call.args.get("offset", 0) + result["lineCount"]
        return _in_later_lines(raw, later, call.needle) or _grep_reaches(call, result, raw)
    return holds(raw.text, call.needle)


def _grep_reaches(call: Call, result: dict[str, Any], raw: Raw) -> bool:
    """A window whose notice names Grep for its clipped lines (the economy's) reaches a
    needle inside one: Grep shows a match with the part of its line around it."""
    named = GREP_FOR_CLIPPED.format(path=result["path"]) in (result.get("notice") or "")
    shown = raw.text.splitlines()[: result["lineCount"]]
    clipped = [line for line in shown if len(line) > DEFAULT_LIMITS.max_line_chars]
    return named and any(call.needle in line for line in clipped)


def _in_later_lines(raw: Raw, next_offset: int, needle: str) -> bool:
    later = raw.text.splitlines(keepends=True)[next_offset - raw.lines_before :]
    return holds("".join(later), needle)


# --- the raw outputs -------------------------------------------------------------------


def raw_output(call: Call, workspace: Path) -> Raw:
    args = call.args
    if call.tool == "Read":
        offset = args.get("offset", 0)
        with open(workspace / args["path"], encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
        return Raw("".join(lines[offset:]), offset)
    if call.tool == "Bash":
        run = subprocess.run(
            ["bash", "-c", args["command"]], cwd=workspace, capture_output=True, timeout=300
        )
        return Raw(
            (run.stdout + run.stderr).decode("utf-8", "replace"), 0, (run.stdout, run.stderr)
        )
    # Sorted by path, so the anchors' first entries are the same in every run.
    if call.tool == "Glob":
        argv = [RG, "--no-config", "--sort", "path", "--files", "-g", args["pattern"]]
        argv.append(args.get("path", "."))
    else:
        mode = args.get("outputMode", "content")
        argv = [RG, "--no-config", "--sort", "path", "--color", "never", "--no-heading"]
        argv += {"content": ["-n"], "count": ["-c"], "filesWithMatches": ["-l"]}[mode]
        if "after" in args:
            argv += ["-A", str(args["after"])]
        argv += ["-e", args["pattern"], args.get("path", ".")]
    run = subprocess.run(argv, cwd=workspace, capture_output=True, timeout=300)
    out = run.stdout.decode("utf-8", "replace")
    return Raw("".join(line.removeprefix("./") + "\n" for line in out.splitlines()))


# --- the anchors' published policies ---------------------------------------------------

Policy = Callable[[Call, Raw], tuple[str, bool]]  # -> model text, names a continuation


def _bytes_head_tail(text: str, limit: int, head_share: float) -> tuple[str, bool]:
    data = text.encode()
    if len(data) <= limit:
        return text, False
    head, tail = int(limit * head_share), limit - int(limit * head_share)
    cut = len(data) - head - tail
    kept = data[:head].decode(errors="ignore"), data[-tail:].decode(errors="ignore")
    return f"{kept[0]}\n…{cut} bytes truncated…\n{kept[1]}", True


def _chars_head_tail(text: str, limit: int, head_share: float) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    head = int(limit * head_share)
    tail = limit - head
    cut = len(text) - limit
    return f"{text[:head]}\n... [{cut} characters truncated] ...\n{text[-tail:]}", True


def _entries(raw: Raw, limit: int, columns: int | None = None) -> tuple[str, bool]:
    entries = raw.text.splitlines()
    kept = [e[:columns] if columns else e for e in entries[:limit]]
    more = len(entries) > limit
    note = f"\n(Results are truncated: showing {limit} of {len(entries)}.)" if more else ""
    return "\n".join(kept) + note, more


def _read_window(
    raw: Raw, call: Call, *, numbered: bool, max_bytes: int | None = None
) -> tuple[str, bool, int]:
    """The lines a Read returns: 2000 (or the call's limit), 2000 chars each."""
    lines = raw.text.splitlines(keepends=True)
    limit = min(call.args.get("limit", 2000), 2000)
    kept, size = [], 0
    for n, line in enumerate(lines[:limit], start=raw.lines_before + 1):
        shown = line[:2000] + ("\n" if len(line) > 2000 else "")
        shown = f"{n:>6}\t{shown}" if numbered else shown
        if max_bytes is not None and size + len(shown.encode()) > max_bytes:
            break
        kept.append(shown)
        size += len(shown.encode())
    more = len(kept) < len(lines)
    note = f"\n(File has more lines. Use offset {raw.lines_before + len(kept)}.)" if more else ""
    return "".join(kept) + note, more, raw.lines_before + len(kept)


def codex(call: Call, raw: Raw) -> tuple[str, bool]:
    text, _ = _bytes_head_tail(
        raw.text if call.tool != "Read" else _numberless(raw, call), 10_000, 0.5
    )
    return text, False


def _numberless(raw: Raw, call: Call) -> str:
    # Codex reads with the shell (sed -n a,bp): the requested lines, unnumbered.
    lines = raw.text.splitlines(keepends=True)
    return "".join(lines[: call.args.get("limit", len(lines))])


def _head_lines(text: str, max_lines: int, max_bytes: int) -> str:
    kept, size = [], 0
    for line in text.splitlines(keepends=True)[:max_lines]:
        if size + len(line.encode()) > max_bytes:
            break
        kept.append(line)
        size += len(line.encode())
    head = "".join(kept)
    return head + "\n(output truncated)" if len(head) < len(text) else head


@dataclass(frozen=True)
class AnchorPolicy:
    """A peer's published result limits, per tool (None: uncapped)."""

    bash: Callable[[str], str]
    read_numbered: bool
    read_max_bytes: int | None
    grep_entries: int
    grep_columns: int | None
    glob_entries: int | None

    def __call__(self, call: Call, raw: Raw) -> tuple[str, bool]:
        if call.tool == "Read":
            text, more, _ = _read_window(
                raw, call, numbered=self.read_numbered, max_bytes=self.read_max_bytes
            )
            return text, more
        if call.tool == "Bash":
            return self.bash(raw.text), False
        if call.tool == "Grep":
            return _entries(raw, self.grep_entries, self.grep_columns)
        if self.glob_entries is None:
            return raw.text, False
        return _entries(raw, self.glob_entries)


claude_code = AnchorPolicy(
    bash=lambda text: _chars_head_tail(text, 30_000, 0.5)[0],
    read_numbered=True,
    read_max_bytes=None,
    grep_entries=250,
    grep_columns=500,
    glob_entries=100,
)
gemini = AnchorPolicy(
    bash=lambda text: _chars_head_tail(text, 40_000, 0.2)[0],
    read_numbered=False,
    read_max_bytes=None,
    grep_entries=100,
    grep_columns=2000,
    glob_entries=None,
)
opencode = AnchorPolicy(
    bash=lambda text: _head_lines(text, 2000, 50 * 1024),
    read_numbered=True,
    read_max_bytes=50 * 1024,
    grep_entries=100,
    grep_columns=2000,
    glob_entries=100,
)


ANCHORS: dict[str, Policy] = {
    "Codex CLI": codex,
    "Claude Code": claude_code,
    "Gemini CLI": gemini,
    "opencode": opencode,
}


def simulate(policy: Policy, raws: list[Raw]) -> list[Outcome]:
    outcomes = []
    for call, raw in zip(TRACE, raws, strict=True):
        text, continues = policy(call, raw)
        visible = holds(text, call.needle)
        reachable = visible
        if not visible and continues:
            if call.tool == "Read":
                numbered = getattr(policy, "read_numbered", False)
                max_bytes = getattr(policy, "read_max_bytes", None)
                _, _, next_offset = _read_window(raw, call, numbered=numbered, max_bytes=max_bytes)
                reachable = _in_later_lines(raw, next_offset, call.needle)
            else:
                reachable = holds(raw.text, call.needle)
        outcomes.append(Outcome(call, text, visible, reachable))
    return outcomes


# --- sizing the economy's Read window (--windows) --------------------------------------

WINDOW_LINES = (100, 200, 300, 500, 1000, 2000)
WINDOW_KB = (8, 16, 24, 48)
# A needle this many lines past the call's offset is out of every window's first
# page: an agent Greps for it rather than paging (the lock file's left-pad).
FAR_LINES = 2000


@dataclass
class WindowCost:
    """The trace's Read calls under one window: what the first pages cost and show, and,
    for the needles within FAR_LINES of their offset, what paging on to them costs."""

    first_bytes: int = 0
    visible: int = 0
    pages: int = 0
    bytes_to_needles: int = 0
    far: int = 0


def _needle_distance(workspace: Path, call: Call) -> int | None:
    """Lines from the call's offset to the first line holding its needle (None: no line)."""
    offset = call.args.get("offset", 0)
    with open(workspace / call.args["path"], encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f):
            if n >= offset and call.needle in line:
                return n - offset
    return None


def window_cost(workspace: Path, lines: int, max_bytes: int) -> WindowCost:
    """Each Read of the trace through the real Read (``read_window``) with this window,
    paged on (the next offset, as its notice names it) until its needle shows."""
    from toolbound.paths import Roots
    from toolbound.tools.read import read_window

    roots = Roots.create(workspace, workspace)
    budget = Budget(max_bytes=max_bytes, max_lines=DEFAULT_LIMITS.search.max_lines)
    cost = WindowCost()
    for call in TRACE:
        if call.tool != "Read":
            continue
        distance = _needle_distance(workspace, call)
        far = distance is None or distance >= FAR_LINES
        cost.far += far
        offset = call.args.get("offset", 0)
        limit = call.args.get("limit", lines)
        for page in itertools.count():
            result = read_window(
                roots,
                call.args["path"],
                offset=offset,
                limit=limit,
                limits=DEFAULT_LIMITS,
                budget=budget,
            ).to_wire()
            size = len(model_text("Read", result).encode())
            shown = holds(result["content"], call.needle)
            if page == 0:
                cost.first_bytes += size
                cost.visible += shown
            if far:
                break
            cost.pages += 1
            cost.bytes_to_needles += size
            if shown or not result["truncated"] or result["lineCount"] == 0:
                break
            offset += result["lineCount"]
    return cost


def measure_windows() -> None:
    """Print what the trace's Read calls cost per window (lines x KB), side by side."""
    with tempfile.TemporaryDirectory(prefix="toolbound-windows-") as tmp:
        workspace = build_workspace(Path(tmp) / "ws")
        reads = sum(c.tool == "Read" for c in TRACE)
        print(f"the trace's {reads} Read calls through the real Read; load {_load()}")
        print(f"paged on to needles within {FAR_LINES} lines of the offset (pages, bytes)")
        print(
            f"{'window':<16} {'1st pages':>10} {'visible':>8} {'pages':>6} "
            f"{'bytes to needles':>17} {'far':>4}"
        )
        for kb in WINDOW_KB:
            for lines in WINDOW_LINES:
                cost = window_cost(workspace, lines, kb * 1024)
                print(
                    f"{lines:>5} lines/{kb:>2}KB {cost.first_bytes:>10,} "
                    f"{cost.visible:>4}/{reads:<3} {cost.pages:>6} "
                    f"{cost.bytes_to_needles:>17,} {cost.far:>4}"
                )


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} {five:.2f}"


# --- the table -------------------------------------------------------------------------


def row(name: str, outcomes: list[Outcome], exact_bytes: int | None) -> str:
    total = sum(len(o.text.encode()) for o in outcomes)
    reads = sum(len(o.text.encode()) for o in outcomes if o.call.kind == "read/search")
    share = total / BYTES_PER_TOKEN / CONTEXT_TOKENS
    read_share = reads / BYTES_PER_TOKEN / CONTEXT_TOKENS
    visible = sum(o.visible for o in outcomes)
    reachable = sum(o.reachable for o in outcomes)
    ratio = f"{total / exact_bytes:.2f}x" if exact_bytes else "1.00x"
    return (
        f"{name:<12} {total:>10,} {ratio:>7} {share:>8.1%} {read_share:>11.1%} "
        f"{visible:>4}/{len(outcomes)} {reachable:>4}/{len(outcomes)}"
    )


TOOLS = ("Read", "Grep", "Glob", "Bash")


def describe_trace(workspace: Path, raws: list[Raw]) -> str:
    """What the trace holds, against the issue's list (>= 40 calls, a real tree, a big
    log, a minified bundle, a lock file, a noisy failing test run, repeated reads)."""
    tools = ", ".join(f"{t} {sum(c.tool == t for c in TRACE)}" for t in TOOLS)
    windows = [json.dumps(c.args, sort_keys=True) for c in TRACE if c.tool == "Read"]
    rereads = len(windows) - len(set(windows))
    tree = sum(1 for _ in (workspace / "lib").rglob("*.py"))
    log = (workspace / "logs/server.log").stat().st_size
    bundle = (workspace / "web/dist/bundle.min.js").read_bytes()
    lock = (workspace / "web/package-lock.json").read_bytes().count(b"\n")
    bundle_lines = bundle.count(b"\n")
    noisy = max(len(r.streams[0]) for c, r in zip(TRACE, raws, strict=True) if c.tool == "Bash")
    return (
        f"trace: {len(TRACE)} calls ({tools}), {rereads} re-reads of a window read before, "
        f"each call naming its needle\n"
        f"tree: {tree} stdlib .py files; server.log {log / 2**20:.1f} MB; bundle.min.js "
        f"{bundle_lines} line(s) of {len(bundle) / 2**20:.1f} MB; package-lock.json "
        f"{lock:,} lines; the noisiest stdout {noisy / 2**20:.1f} MB (progress bars, colour)"
    )


def _bytes(outcomes: list[Outcome], tool: str | None = None) -> int:
    return sum(len(o.text.encode()) for o in outcomes if tool in (None, o.call.tool))


def print_per_tool(rows: dict[str, list[Outcome]]) -> None:
    """Model bytes per tool and policy (re-reads answered unchanged: how many, per row)."""
    print("\nmodel bytes per tool:")
    print(f"{'policy':<12} " + " ".join(f"{t:>9}" for t in TOOLS) + f" {'unchanged':>9}")
    for name, outcomes in rows.items():
        unchanged = sum(o.text.startswith("[Unchanged since ") for o in outcomes)
        cells = " ".join(f"{_bytes(outcomes, t):>9,}" for t in TOOLS)
        print(f"{name:<12} {cells} {unchanged:>9}")


def print_goal(economy: list[Outcome], exact_bytes: int, codex: list[Outcome]) -> None:
    """The goals (issues 13 and 30): economy at most 0.2x exact and 0.5x Codex, no
    needle lost, no more needles hidden (not visible) than Codex hides."""
    total, codex_bytes = _bytes(economy), _bytes(codex)
    lost = sum(not o.reachable for o in economy)
    hidden, codex_hidden = sum(not o.visible for o in economy), sum(not o.visible for o in codex)
    ratio = total / codex_bytes
    print(
        f"\ngoal: economy {total / exact_bytes:.2f}x exact (at most 0.20x: "
        f"{'met' if total <= 0.2 * exact_bytes else 'not met'}); {total:,} bytes vs Codex "
        f"{codex_bytes:,}: {ratio:.2f}x (at most 0.50x: {'met' if ratio <= 0.5 else 'not met'}); "
        f"{lost} needle(s) neither visible nor reachable; {hidden} hidden vs Codex's "
        f"{codex_hidden} ({'met' if hidden <= codex_hidden else 'not met'})"
    )


def main() -> None:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="toolbound-economy-") as tmp:
        workspace = build_workspace(Path(tmp) / "ws")
        data_dir = Path(tmp) / "data"
        raws = [raw_output(call, workspace) for call in TRACE]
        replays = {p: replay(p, workspace, data_dir, raws) for p in ("exact", "economy")}
        anchors = {name: simulate(policy, raws) for name, policy in ANCHORS.items()}

        exact_bytes = _bytes(replays["exact"])
        print(describe_trace(workspace, raws))
        print(f"context {CONTEXT_TOKENS:,} tokens at bytes / 4")
        print(f"load average: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
        print(
            f"{'policy':<12} {'bytes':>10} {'vs exact':>7} {'context':>8} {'read/search':>11} "
            f"{'visible':>9} {'reachable':>9}"
        )
        for name, outcomes in {**replays, **anchors}.items():
            print(row(name, outcomes, exact_bytes))
        print_per_tool({**replays, **anchors})
        print_goal(replays["economy"], exact_bytes, anchors["Codex CLI"])
        print("\nneedles lost (neither visible nor reachable):")
        for name, outcomes in {**replays, **anchors}.items():
            lost = [
                f"#{i + 1} {o.call.tool} {o.call.needle[:40]!r}"
                for i, o in enumerate(outcomes)
                if not o.reachable
            ]
            print(f"  {name}: {', '.join(lost) or 'none'}")
        print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    if "--windows" in sys.argv[1:]:
        measure_windows()
    else:
        main()
