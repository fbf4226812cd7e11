"""The Bash tool: run a command, stream it, bound it, and leave nothing behind.

A call runs its command (in ``workdir``, a workspace folder held by a
descriptor, when given) through ``exec.run`` (spawn, watch the deadline and
the call's abort, stop or reap what lingers, drain: the run a background job
shares), its two readers feeding this call's captures (stdout's head,
stderr's tail) and emitting live chunks. Then each stream's capture is shaped
through ``bounds.cut`` (stdout head, stderr tail), spilling the fuller
captured copy of a cut stream; invalid UTF-8 is counted for the notice.

Each stream keeps the end(s) the call's budgets say (``ctx.budgets.streams``).
Under the economy profile (CONTRACT section 8) that is both ends: captured
at both ends (``exec.capture.capture_for``: half the capture ceiling each),
shown as a terminal would show them (``\r`` and erase-line rewrites
collapsed, styling removed: ``bounds.headtail.shown_ends``), then cut to
the economy budget, head and tail with the marker between (``cut`` with
``keep="both"``); the spill holds both shown ends. The budgets shrink as
the context fills (``toolbound.shrink``). The chunks keep the raw bytes;
``totals`` and ``omitted`` count the raw stream, so what the model did not
see is ``totals`` minus what it did.

Pieces:
    run            the tool's entry point
    Shaped         one stream as the result reports it
    shape_stream   a capture -> the model's text (pure but for the spill)
    shape_ends     economy: both ends of a capture -> the model's text
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from toolbound import notices
from toolbound.bounds import Cut, cut
from toolbound.bounds.headtail import HeadTailBudget, Retained, shown_ends
from toolbound.exec import sandbox
from toolbound.exec.capture import (
    BothEndsCapture,
    Captured,
    HeadCapture,
    TailCapture,
    capture_for,
    invalid_utf8_bytes,
    is_utf8,
)
from toolbound.exec.run import Ending, KillPolicy, read_streams, run_tree, spawn, workdir_of
from toolbound.exec.stopping import signal_name
from toolbound.exec.tree import Tree
from toolbound.jobs.models import JobStartResult
from toolbound.jobs.table import require
from toolbound.limits import Budget, Limits
from toolbound.models.bash import BashArgs, BashResult, SpillPaths, StreamCounts, StreamPair
from toolbound.results import Stream
from toolbound.scratch import Scratch
from toolbound.tools import ToolContext

# Economy: ends up to this size are collapsed on the loop, larger ones in a
# worker thread. Collapsing a progress bar, the worst case, measured 0.29 ms
# for 1KB and 4.0 ms for 16KB against 0.10 ms for a thread hop (load 11.8 on
# 2 cores); plain text costs a small part of that.
_SHOW_ON_LOOP_BYTES = 1024


@dataclass(frozen=True, slots=True)
class _Captures:
    """What a call's readers feed: stdout's and stderr's captures; the economy
    profile's both-ends captures again as ``ends`` (None under the exact profile)."""

    stdout: HeadCapture | TailCapture
    stderr: HeadCapture | TailCapture
    ends: tuple[BothEndsCapture, BothEndsCapture] | None = None


async def run(args: BashArgs, ctx: ToolContext) -> BashResult | JobStartResult:
    """Run ``args.command`` and return its bounded result (CONTRACT section 4); with
    ``background``, start it as a job and return at once (``toolbound.jobs``)."""
    if args.background:
        return await require(ctx.jobs).start(
            args, args.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True)
        )
    limits = ctx.limits
    timeout_s = args.timeout if args.timeout is not None else limits.bash_timeout_default_s
    started = time.monotonic()
    with workdir_of(ctx.roots, args.workdir) as workdir:
        shell = await spawn(
            args.command,
            cwd=ctx.roots.workspace,
            policy=ctx.sandbox,
            scratch=ctx.scratch,
            workdir=workdir,
        )
    captures = _captures(ctx)
    streams = read_streams(
        shell,
        (captures.stdout, captures.stderr),
        emit=ctx.emit,
        live_bytes=limits.capture_max_bytes,
        live_lines=limits.capture_max_lines,
        interval_s=limits.chunk_interval_s,
        chunk_max_bytes=limits.chunk_max_bytes,
    )
    outcome = await run_tree(
        shell, streams, timeout_s=timeout_s, stop=ctx.abort, policy=KillPolicy.of(limits)
    )
    ending = outcome.ending
    if captures.ends is None:
        out, err, invalid = await _shape_exact(captures, ctx)
        said: list[str] = []
    else:
        out, err, invalid, said = await _shape_economy(captures.ends, ctx)
    run_notice = notices.bash_run(
        timed_out=ending is Ending.TIMED_OUT,
        aborted=ending is Ending.ABORTED,
        timeout_s=timeout_s,
        timeout_max_s=limits.bash_timeout_max_s,
        lingering=outcome.lingering,
        invalid=invalid.items(),
    )
    bound = sandbox.bound_notice(shell, ctx.sandbox, err.payload)
    said += [bound] if bound else []
    return _result(
        shell,
        ending,
        out,
        err,
        notice=notices.join(([run_notice] if run_notice else []) + said),
        duration_ms=int((time.monotonic() - started) * 1000),
        workdir=None if workdir is None else workdir.shown,
    )


async def _shape_exact(
    captures: _Captures, ctx: ToolContext
) -> tuple[Shaped, Shaped, dict[Stream, int]]:
    """The seed's shaping: stdout's head and stderr's tail, each to its budget."""
    limits = ctx.limits
    out_held, err_held = captures.stdout.finish(), captures.stderr.finish()
    out_budget, err_budget = (stream.budget for stream in ctx.budgets.streams(limits))
    out = await _shaped(out_held, out_budget, "stdout", ctx.scratch, limits=limits)
    err = await _shaped(err_held, err_budget, "stderr", ctx.scratch, limits=limits)
    invalid = await _invalid_bytes(out_held, err_held)
    return out, err, invalid


async def _shaped(
    held: Captured, budget: Budget, label: Stream, scratch: Scratch, *, limits: Limits
) -> Shaped:
    """One stream shaped by ``shape_stream``; a stream that printed nothing is
    ``_SILENT`` at once (nothing to cut, count or spill: most short commands'
    stderr, and both of ``true``'s)."""
    if not held.total_bytes:
        return _SILENT
    return Shaped.of_cut(held, await shape_stream(held, budget, label, scratch, limits=limits))


async def _shape_economy(
    ends: tuple[BothEndsCapture, BothEndsCapture], ctx: ToolContext
) -> tuple[Shaped, Shaped, dict[Stream, int], list[str]]:
    """The economy profile's shaping: both ends of each stream as a terminal shows
    them, cut to the (maybe shrunken) economy budgets; the notice sentences it adds."""
    said: list[str] = []
    shaped: list[Shaped] = []
    invalid: dict[Stream, int] = {}
    labels: tuple[Stream, Stream] = ("stdout", "stderr")
    streams = ctx.budgets.streams(ctx.limits)
    for capture, label, stream in zip(ends, labels, streams, strict=True):
        raw = capture.retained()
        shaped_stream, collapsed = await shape_ends(
            raw,
            HeadTailBudget.split(stream.budget, head_share=stream.head_share),
            label,
            ctx.scratch,
            limits=ctx.limits,
        )
        shaped.append(shaped_stream)
        invalid[label] = _invalid_in_ends(raw)
        if collapsed:
            said.append(notices.collapsed(label, collapsed))
        if stream.sentence and shaped_stream.truncated:
            said.append(stream.sentence)
    return shaped[0], shaped[1], invalid, said


def _captures(ctx: ToolContext) -> _Captures:
    """The captures a call's readers feed: each stream's keeps the end(s) its
    result keeps (the profile's): stdout's head and stderr's tail, or both ends
    of each (half the ceiling each)."""
    limits = ctx.limits
    out, err = (
        capture_for(
            stream.keep, max_bytes=limits.capture_max_bytes, max_lines=limits.capture_max_lines
        )
        for stream in ctx.budgets.profile.streams(limits)
    )
    if isinstance(out, BothEndsCapture) and isinstance(err, BothEndsCapture):
        return _Captures(out, err, (out, err))
    return _Captures(out, err)


async def shape_stream(
    captured: Captured, budget: Budget, label: Stream, scratch: Scratch, *, limits: Limits
) -> Cut:
    """The model's text for one stream: its capture cut to ``budget``, keeping the
    capture's end; a cut stream's fuller copy is spilled and named in the marker
    (only when the spill file was really written)."""
    shown = cut(
        captured.data,
        budget,
        keep=captured.keep,
        total_bytes=captured.total_bytes,
        total_lines=captured.total_lines,
        edge_line_bytes=captured.edge_line_bytes,
    )
    if not shown.truncated:
        return shown
    n = limits.spill_max_bytes
    fuller = captured.data[:n] if captured.keep == "head" else captured.data[-n:]
    path = await asyncio.to_thread(scratch.spill, label, fuller)
    return shown if path is None else shown.with_spill(str(path))


async def shape_ends(
    raw: Retained, budget: HeadTailBudget, label: Stream, scratch: Scratch, *, limits: Limits
) -> tuple[Shaped, int]:
    """Economy: the model's text for one stream captured at both ends, and the bytes
    collapsing its terminal rewrites and styling removed. A cut stream's shown
    ends are spilled (both of them, the capture's gap marked between) and the
    spill named in the marker, only when the file was really written."""
    if len(raw.head) + len(raw.tail) < _SHOW_ON_LOOP_BYTES:
        shown, collapsed = shown_ends(raw)
    else:
        shown, collapsed = await asyncio.to_thread(shown_ends, raw)
    both = cut(shown, budget, keep="both")
    if both.truncated:
        half = min(limits.capture_max_bytes, limits.spill_max_bytes) // 2
        fuller = shown.spill_within(
            limits.spill_max_bytes, head_ceiling_bytes=half, tail_ceiling_bytes=half
        )
        path = await asyncio.to_thread(scratch.spill, label, fuller)
        both = both.with_spill(None if path is None else str(path))
    stream = Shaped(
        payload=both.payload,
        truncated=both.truncated,
        spill_path=both.spill_path,
        omitted=_counts(raw.dropped_bytes, raw.dropped_newlines),
        totals=_counts(raw.total_bytes, raw.total_lines),
    )
    return stream, collapsed


def _invalid_in_ends(raw: Retained) -> int:
    """Invalid UTF-8 in both ends, not counting a character either was cut through."""
    head, tail = raw.whole_char_ends()
    return invalid_utf8_bytes(head) + invalid_utf8_bytes(tail)


async def _invalid_bytes(stdout: Captured, stderr: Captured) -> dict[Stream, int]:
    """Invalid UTF-8 per stream. Valid text is checked in C on the loop; counting
    costs a Python call per bad byte (binary output), so that goes to a thread."""
    if is_utf8(stdout.data) and is_utf8(stderr.data):
        return {"stdout": 0, "stderr": 0}
    return await asyncio.to_thread(
        lambda: {"stdout": stdout.invalid_bytes, "stderr": stderr.invalid_bytes}
    )


@dataclass(frozen=True, slots=True)
class Shaped:
    """One stream as the result reports it: the model's text, whether it was cut
    and where its spill is, and the raw stream's counts."""

    payload: str
    truncated: bool
    spill_path: str | None
    omitted: StreamCounts
    totals: StreamCounts

    @classmethod
    def of_cut(cls, held: Captured, cut: Cut) -> Shaped:
        return cls(
            payload=cut.payload,
            truncated=cut.truncated,
            spill_path=cut.spill_path,
            omitted=_counts(held.omitted_bytes, held.omitted_lines),
            totals=_counts(held.total_bytes, held.total_lines),
        )


# Parts of the result most calls share, made once (the models are frozen):
# about 2 us each a call saved (timeit).
_NOTHING = StreamCounts(bytes=0, lines=0)
_NOTHING_PAIR = StreamPair(stdout=_NOTHING, stderr=_NOTHING)
_NO_SPILL = SpillPaths()
# A stream that printed nothing, as the result reports it.
_SILENT = Shaped(payload="", truncated=False, spill_path=None, omitted=_NOTHING, totals=_NOTHING)


def _counts(size: int, lines: int) -> StreamCounts:
    return _NOTHING if size == 0 and lines == 0 else StreamCounts(bytes=size, lines=lines)


def _pair(stdout: StreamCounts, stderr: StreamCounts) -> StreamPair:
    if stdout is _NOTHING and stderr is _NOTHING:
        return _NOTHING_PAIR
    return StreamPair(stdout=stdout, stderr=stderr)


def _result(
    shell: Tree,
    ending: Ending,
    out: Shaped,
    err: Shaped,
    *,
    notice: str | None,
    duration_ms: int,
    workdir: str | None,
) -> BashResult:
    returncode = shell.returncode
    exit_code = returncode if ending is Ending.EXITED and returncode is not None else None
    if exit_code is not None and exit_code < 0:
        exit_code = None
    return BashResult(
        stdout=out.payload,
        stderr=err.payload,
        exit_code=exit_code,
        signal=signal_name(returncode),
        timed_out=ending is Ending.TIMED_OUT,
        aborted=ending is Ending.ABORTED,
        truncated=out.truncated or err.truncated,
        spill=(
            _NO_SPILL
            if out.spill_path is None and err.spill_path is None
            else SpillPaths(stdout=out.spill_path, stderr=err.spill_path)
        ),
        omitted=_pair(out.omitted, err.omitted),
        totals=_pair(out.totals, err.totals),
        notice=notice,
        duration_ms=duration_ms,
        workdir=workdir,
    )
