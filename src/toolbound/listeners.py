"""Call listeners: whatever must see a host's tool calls as they happen.

A ``CallListener`` is handed to ``ToolHost(listeners=...)`` (the session
store's recorder and the web view's hub are two). For each call it is told,
in this order:

1. ``call_started(call)`` when the call starts, on the event loop;
2. ``call_event(call, event)`` for each chunk event and then the result
   event, producer-side: where the event is emitted (a reader thread or the
   event loop), under the call's lock, so in ``seq`` order, whether or not
   anyone consumes the call's stream;
3. ``settle(call)``, awaited before the result is handed out (a recorder
   waits until the result is stored, so a finished call replays at once;
   inside a consumer's ``answer_first`` block it returns at once and stores
   the call soon after, within its chunk interval);
4. ``call_ended(call, failure)`` when the call ended: ``failure`` is the
   exception of a tool that crashed (no result event came), else None.

No event follows a call's result. Every method but ``settle`` must return at
once (queue the work, never wait); an exception in a listener is logged and
costs that listener only, never the call.

A background job (CONTRACT section 9) is a call of its own that outlives the
Bash call that started it. Its listeners (the host's, when it started) are told:

1. ``call_started`` with a ``CallStart`` whose ``tool_call_id`` is the job's
   ``jobId`` (``is_job_call`` tells it from a tool call's id), ``tool`` is
   ``"Bash"`` and ``args`` the starting call's arguments (``background: true``
   among them), when the job starts;
2. ``call_event`` for each chunk of its output, ``seq`` from 0 and rising by
   one across both streams (its own numbering, not the starting call's), live
   as the job prints, each stream's chunks up to the capture ceiling (the log
   keeps the rest);
3. ``call_event`` with one result event when the job ended: its ``result`` is
   the job's final output from the start (``JobOutput`` with ``since`` 0, 0:
   state, exit code, the head of stdout and the tail of stderr), then
   ``settle`` and ``call_ended`` as for any call.

Pieces:
    CallStart     who a call is: session, call id, tool, arguments, profile
    CallListener  the listener protocol, every method a no-op by default
    is_job_call   whether a call id is a background job's (JOB_ID_PREFIX)
    tell          one listener call, its failure logged, never raised
    settled       await a listener's settle, its failure logged, never raised
    all_settled   await every listener's settle (those that override it), each as settled
    answer_first  a consumer's block whose calls may settle after their answer (answers_first)
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from toolbound.fit import NO_FIT, Fit
from toolbound.limits import ProfileName

log = logging.getLogger(__name__)

# Every background job's id, and so the tool_call_id of its own call, starts so.
JOB_ID_PREFIX = "job_"


def is_job_call(tool_call_id: str) -> bool:
    """A background job's own call: its output, which the model reads only through JobOutput."""
    return tool_call_id.startswith(JOB_ID_PREFIX)


@dataclass(frozen=True, slots=True)
class CallStart:
    """One tool call as it started."""

    session_id: str
    tool_call_id: str
    tool: str
    args: object
    # The result profile the call ran under: its result event's text is rendered for it.
    profile: ProfileName = "exact"
    # The client's per-result cap the text is kept within (toolbound.fit), and whose.
    fit: Fit = NO_FIT


class CallListener:
    """Sees calls start, their events, and their end; override what you need."""

    def call_started(self, call: CallStart) -> None:
        """The call started (on the event loop, before any of its events)."""

    def call_event(self, call: CallStart, event: dict[str, Any]) -> None:
        """One chunk, input (a job's: what JobInput wrote) or result wire event, in
        ``seq`` order, from any thread."""

    async def settle(self, call: CallStart) -> None:
        """Awaited after the result event and before the result is handed out."""

    def call_ended(self, call: CallStart, failure: BaseException | None) -> None:
        """The call ended; ``failure`` is a crashed tool's exception, else None."""


# Set by a consumer that answers a call before its recording commits (the stdio
# wire, ``toolbound.stdio_calls``), for the calls started in its block: a
# listener whose ``settle`` would wait for a write may return at once and write
# soon after (the recorder: within its chunk interval, in order). Tasks the call
# starts inherit it; once the block ended (a background job settling later) it
# reads False again.
_answer_first: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar(
    "toolbound_answer_first", default=None
)


def answers_first() -> bool:
    """Whether the call settling now is answered before its listeners settle it."""
    block = _answer_first.get()
    return block is not None and block[0]


@contextlib.contextmanager
def answer_first() -> Iterator[None]:
    """Calls started in the block may be answered before their listeners settled them
    (``answers_first``)."""
    block = [True]
    token = _answer_first.set(block)
    try:
        yield
    finally:
        _answer_first.reset(token)
        block[0] = False


def tell(listener: CallListener, method: str, *args: Any) -> None:
    """One listener call; a listener's bug is logged and never breaks the call."""
    try:
        getattr(listener, method)(*args)
    except Exception:
        log.exception("listener %r failed in %s", listener, method)


async def settled(listener: CallListener, call: CallStart) -> None:
    """Await ``listener.settle(call)``; a failure is logged, never raised."""
    try:
        await listener.settle(call)
    except Exception:
        log.exception("listener %r failed to settle", listener)


async def all_settled(listeners: Iterable[CallListener], call: CallStart) -> None:
    """Await the settle of each listener that has one, side by side (``settled``).

    A listener that keeps ``CallListener.settle`` (nothing to wait for) is
    skipped, and a single one is awaited in place: a call then pays no task
    and no loop turn for its listeners.
    """
    waiting = [listener for listener in listeners if _settles(listener)]
    if len(waiting) == 1:
        await settled(waiting[0], call)
    elif waiting:
        await asyncio.gather(*(settled(listener, call) for listener in waiting))


def _settles(listener: CallListener) -> bool:
    """Whether ``listener`` overrides the no-op ``settle``."""
    return getattr(type(listener), "settle", None) is not CallListener.settle
