"""How much other work this process is doing, and who gives way to it.

A thread that runs Python code holds the GIL for up to the switch interval
(5 ms) at a time, and every system call the event loop's thread makes gives
the GIL up and then waits for it back. A Read on the loop makes about ten
(stat, the walk's opens, read, close), so beside a busy thread it waits far
longer than a worker thread would take (a burst of 100 in-process Reads went
from about 900 to 150 calls per second). The work counted here is every tool
call running in any host of the process and every recorder's writer thread
writing a batch; ``tools.read.runs_inline`` asks :func:`alone`.

Bulk streams give way (issue 30: no session's long call may delay another's
short one). A reader past its capture ceiling (``exec.reader``) is a bulk
stream: it only counts or logs bytes, as fast as its writer prints them, and
four of them with their writers keep both CPUs of a small machine and the
GIL busy, so another session's short Read waited 10-17x its idle time. Two
things make such a stream give way (:class:`BulkStream`, the policy a value:
:class:`YieldPolicy`):

- Between reads it asks whether a tool call is running (in any host of the
  process) that is not itself a bulk stream's and is young (begun less than
  ``young_s`` ago: a long quiet call, ``sleep 600``, would otherwise hold
  every stream back for its whole life). If so it pauses until that call
  ends or ``pause_s`` passed, whichever is first, in a wait that releases the
  GIL, then reads at least ``burst_bytes`` before it may pause again, so no
  stream ever stops (a call may be waiting for that very stream: JobOutput
  ``waitFor`` on a streaming job, a Bash ``cat`` of its log).
- From its first pause on, its thread's niceness is 19 until the stream
  ends: whatever else wants a CPU (the event loop parsing the next request,
  sending a result, the client reading it: the parts of a short call outside
  the host, 2/3 of its time under the streams) runs first; the reader falls
  behind and its writer blocks on the full pipe, which frees that CPU too.
- At that first pause its command's whole tree is lowered too, once and for
  the rest of its life (``command_nice``, through the ``give_way`` its reader
  is handed: ``exec.niceness``): the writers (``yes | head``, a build's
  compilers) are the user's processes, at normal priority, and took most of
  the CPUs the short call waited for. Lowering only the reader thread left
  the loop's and the client's median wait for a CPU at about 3 ms a Read.
- A stream that becomes bulk while this process serves other sessions' calls
  (one runs, or one ended less than ``recent_s`` ago: another agent at work;
  its own session's calls do not count, nor does the call it is) has
  its command lowered at once, not at its first pause: the next short call
  then finds the CPUs already given up, from its request's arrival on, which
  its first pause comes too late for (the slowest Reads in bench/load.py
  were often the first ones after the streams started). ``recent_s`` is a
  minute: an agent thinks for seconds to a minute between its calls. Three
  alternated pairs, at load 4-6: the short Read's p99 over its idle median
  2.86-3.91x against 2.95-4.80x on SQLite, 2.51-3.49x against 3.18-4.09x on
  PostgreSQL (5 pairs of 6 better); the streams alone ran as fast.
- A stream that never had to give way, with no other session's call about, keeps its
  priority (its reader's and its command's), so a lone stream, a build
  alone, keeps its speed however busy the rest of the machine is.

Pieces:
    Work         one piece of work running: its start, whether it is a bulk stream's call
    begin, end   a call or other work starts, ends (any thread; ``end`` in begin's context)
    alone        whether at most one (the caller's own) is running
    current      the work begun in this context (a tool call's, inside its task), if any
    owner        whose work this context runs (a session's id), if any
    YieldPolicy  how bulk streams give way; ``POLICY`` is the one in force
    BulkStream   a reader's part: mark its call, yield to young calls, lower its thread
                 and (``give_way``) its command's tree
    spent        whether this thread kept a bulk stream's low priority (it retires)
    stats        pauses taken and bulk streams running, for tests and benchmarks
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar, Token
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class YieldPolicy:
    """How bulk streams give way (one value, read as each stream becomes bulk).

    ``young_s``: work begun less than this long ago is a short call to yield to.
    ``pause_s``: the longest one pause lasts before the stream reads again.
    ``burst_bytes``: what a stream reads after a pause before it may pause again.
    ``nice``: the reader thread's niceness from its first pause on (None: unchanged).
    ``command_nice``: the niceness of the stream's command tree (its threads and its
    autogroup, ``exec.niceness``) from its first pause on, never raised back (None:
    unchanged).
    ``recent_s``: a stream that becomes bulk while another session's call runs, or
    less than this long after one ended, lowers its command tree at once (None:
    only at its first pause).

    Why 19 for the command too (bench/load.py ``--scenario stream``, SQLite, three
    alternated rounds each, 2 cores shared with other work): the short Read's p90
    under four 1 GiB streams was 28-31 ms with the command left alone, 23-25 ms at
    niceness 10, 19-20 ms at 19 (idle median about 7-8 ms): at 10 each stream's
    group still weighs 110 against the server's 1024 (four streams: 440), at 19
    only 15. Niceness only weighs while the CPUs are contended, which is exactly
    when a short call is waiting: on an idle machine a lowered stream keeps its speed.
    """

    young_s: float = 1.0
    pause_s: float = 0.02
    burst_bytes: int = 1024 * 1024
    nice: int | None = 19
    command_nice: int | None = 19
    recent_s: float | None = 60.0


POLICY = YieldPolicy()


@dataclass(eq=False, slots=True)
class Work:
    """One piece of work running: when it began, whether it is a tool call, and how
    many of its readers are bulk streams now (a Bash call whose output is past its
    capture ceiling)."""

    started: float
    call: bool
    # Whose work it is (a host's session id): another owner's calls are "others".
    owner: str | None = None
    bulk: int = 0
    # Whether any of its readers was ever a bulk stream.
    streamed: bool = False
    ended: bool = False
    token: Token[Work | None] | None = field(default=None, repr=False)


_changed = threading.Condition(threading.Lock())
# The tool calls running (what bulk streams yield to), and all work running.
_works: set[Work] = set()
_running = [0]
# Running works with a bulk reader: not waiting on anyone, and not waited for.
_bulk_works = [0]
_bulk_streams = [0]
_pauses = [0]
# When the last tool calls that were not a bulk stream's ended (time.monotonic()),
# newest first, for the two owners that ended one last: enough to tell whether
# an owner other than any given one ended one lately.
_last_ends: list[tuple[str | None, float]] = []
_current: ContextVar[Work | None] = ContextVar("toolbound_busy_work", default=None)


def begin(*, call: bool = False, owner: str | None = None) -> None:
    """One piece of work starts (it is this context's :func:`current` until it ends):
    a tool call (``call``: bulk streams yield to it while it is young) or other work
    (a recorder's batch: counted for :func:`alone` only); ``owner`` names whose
    (a session's id)."""
    work = Work(time.monotonic(), call, owner)
    with _changed:
        if call:
            _works.add(work)
        _running[0] += 1
    work.token = _current.set(work)


def end() -> None:
    """The work this context began ends (after its :func:`begin`)."""
    work = _current.get()
    if work is None:
        return
    if work.token is not None:
        _current.reset(work.token)
    with _changed:
        if work.call:
            _works.discard(work)
            if not work.streamed:
                ends = [(o, t) for o, t in _last_ends if o != work.owner]
                _last_ends[:] = [(work.owner, time.monotonic()), *ends[:1]]
        _running[0] -= 1
        work.ended = True
        if work.bulk:
            _bulk_works[0] -= 1
        _changed.notify_all()


def alone() -> bool:
    """Whether at most one piece of work, the caller's own, is running in this process,
    not counting calls whose output is a bulk stream: those give way to the caller
    (they pause while it is young), as a job's bulk streams, never counted, do."""
    return _running[0] - _bulk_works[0] <= 1


def owner() -> str | None:
    """Whose work this context runs (its tool call's owner), if any."""
    work = _current.get()
    return work.owner if work is not None else None


def current() -> Work | None:
    """The tool call begun in this context and not ended (inside its task), if any."""
    work = _current.get()
    return work if work is not None and work.call else None


@dataclass(frozen=True, slots=True)
class Stats:
    """Pauses bulk streams took since the process started, and bulk streams running."""

    pauses: int
    bulk_streams: int


def stats() -> Stats:
    return Stats(pauses=_pauses[0], bulk_streams=_bulk_streams[0])


def _others_about(now: float, owner: str | None, recent_s: float | None) -> bool:
    """Whether a call of an owner other than ``owner`` and not a bulk stream's runs, or
    one ended less than ``recent_s`` ago (under ``_changed``); False when ``recent_s``
    is None."""
    if recent_s is None:
        return False
    if any(o != owner and now - t < recent_s for o, t in _last_ends):
        return True
    return any(w.owner != owner and not w.bulk for w in _works)


def _young_other_work(now: float, young_s: float) -> bool:
    """Whether a young call runs that is not a bulk stream's (under ``_changed``)."""
    return any(not w.bulk and now - w.started < young_s for w in _works)


# Reader threads whose niceness could not be restored after a bulk stream (raising a
# thread's priority back takes CAP_SYS_NICE or RLIMIT_NICE): they retire (``spent``).
_spent = threading.local()


def spent() -> bool:
    """Whether this thread ran a bulk stream and kept its lowered priority."""
    return bool(getattr(_spent, "value", False))


class BulkStream:
    """One reader's part while it is a bulk stream (see the module docstring).

    Its call (``work``: None for a job, whose streams outlive the call that
    started them) counts as a bulk stream's, so other bulk streams do not yield
    to it. :meth:`should_yield` and :meth:`pause` let young other calls go
    first. All its methods run on the reader's thread, whose niceness the policy
    lowers from the first pause to the stream's end; at that first pause
    ``give_way`` (if given) is called with the policy's ``command_nice``: the
    reader's owner lowers the stream's command tree with it.
    """

    def __init__(
        self,
        work: Work | None,
        *,
        owner: str | None = None,
        give_way: Callable[[int], None] | None = None,
    ) -> None:
        self._work = work
        # Whose stream it is: its call's owner, else (a job's) the given one.
        self._owner = work.owner if work is not None else owner
        self._give_way = give_way
        self._policy = POLICY
        self._niceness: int | None = None
        self._lowered = False
        self.active = False

    def start(self) -> None:
        """The reader is now a bulk stream."""
        if self.active:
            return
        self.active = True
        self._policy = POLICY
        work = self._work
        with _changed:
            _bulk_streams[0] += 1
            others = _others_about(time.monotonic(), self._owner, self._policy.recent_s)
            if work is not None and not work.ended:
                work.streamed = True
                work.bulk += 1
                if work.bulk == 1:
                    _bulk_works[0] += 1
                    _changed.notify_all()  # one less call for the others to wait on
        if others and self._policy.command_nice is not None and self._give_way is not None:
            # Another agent at work: its next call finds the CPUs given up already.
            self._give_way(self._policy.command_nice)

    def stop(self) -> None:
        """The reader ended (idempotent)."""
        if not self.active:
            return
        self.active = False
        self._restore_priority()
        work = self._work
        with _changed:
            _bulk_streams[0] -= 1
            if work is not None and work.bulk:
                work.bulk -= 1
                if not work.bulk and not work.ended:
                    _bulk_works[0] -= 1

    def should_yield(self) -> bool:
        """Whether young work other than bulk streams' runs now (cheap when none does)."""
        if len(_works) <= _bulk_works[0]:
            return False
        with _changed:
            return _young_other_work(time.monotonic(), self._policy.young_s)

    def pause(self) -> None:
        """Wait, releasing the GIL, until no young other work runs or the policy's
        ``pause_s`` passed (woken as work ends)."""
        policy = self._policy
        if not self._lowered:
            self._lowered = True
            if policy.command_nice is not None and self._give_way is not None:
                self._give_way(policy.command_nice)
            if policy.nice is not None:
                self._lower_priority(policy.nice)
        deadline = time.monotonic() + policy.pause_s
        with _changed:
            _pauses[0] += 1
            while True:
                now = time.monotonic()
                if now >= deadline or not _young_other_work(now, policy.young_s):
                    return
                _changed.wait(deadline - now)

    def _lower_priority(self, nice: int) -> None:
        tid = threading.get_native_id()
        try:
            before = os.getpriority(os.PRIO_PROCESS, tid)
            if nice > before:
                os.setpriority(os.PRIO_PROCESS, tid, nice)
                self._niceness = before
        except OSError:
            pass

    def _restore_priority(self) -> None:
        if self._niceness is None:
            return
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self._niceness)
        except OSError:
            _spent.value = True
        self._niceness = None
