"""``HostSession``: a host's life in its session, and the one way it does without the store.

A ``ToolHost`` dispatches calls; the session they run in is this: its id, its
scratch dir, the live lock that keeps other hosts' sweeps off that dir, the
session store and this session's recorder (the host's first call listener),
what the session has Read (the read record, kept in the store so the
session's next host knows it, and one record per reader sharing the session),
and the gauge's estimate of the model's context from the session's
transcript.

Opening takes the live lock, opens the store (noting where the session runs)
and its recorder, loads the read record (which the recorder then keeps: written
with the calls that change it, ``CallRecorder.keep``), and sweeps stale and ended sessions'
scratch dirs; closing closes the recorder and the store, ends the session when
asked (marked ended, scratch dir removed), and lets go of the lock.

The store is a convenience, never a condition: opening it and every use of it
go through ``_degrade``, the one degrade path. A store that cannot be opened costs the
recording (said once, as the host opens), and one that fails later costs what
that use would have kept or read (said each time it fails): the host serves
every call either way. The store maps its driver's errors to
``StoreUnavailable`` (``toolbound.store.errors``), so no driver's error is
named here.

Pieces:
    MAX_READERS   the most readers of one session whose read records are kept
    HostSession   open(), close(); recorder, read_record, record_of(), estimate_context()
"""

from __future__ import annotations

import asyncio
import collections
import logging
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from toolbound.edit import ReadRecord
from toolbound.gauge import ContextGauge
from toolbound.limits import Limits
from toolbound.scratch import LiveLock, Scratch, sweep
from toolbound.store import (
    CallRecorder,
    SessionError,
    SessionStore,
    StoreUnavailable,
    estimate_tokens,
    store_location,
)
from toolbound.store.context import ContextTally
from toolbound.store.summaries import machine_name

log = logging.getLogger(__name__)

# The most readers of one session whose read records a host keeps (``record_of``).
MAX_READERS = 64

# How a store fails a host: StoreUnavailable (whatever its driver raised), an
# unknown or ended session (SessionError), or a saved read record that no longer
# parses (a ValueError, as SessionError is).
_FAILURES: tuple[type[Exception], ...] = (StoreUnavailable, SessionError, ValueError)

T = TypeVar("T")


class HostSession:
    """One host's session: ``session_id`` in ``data_dir``, recorded in ``store``.

    ``store`` is a data dir or a ``postgresql://`` URL; None means
    ``$TOOLBOUND_STORE``, else the data dir (``store.store_location``).
    ``gauge`` is the host's gauge of the model's context, which
    ``estimate_context`` fills from the session's transcript.
    """

    def __init__(
        self,
        session_id: str,
        data_dir: Path,
        *,
        store: str | Path | None,
        workspace: Path,
        limits: Limits,
        gauge: ContextGauge,
    ) -> None:
        self.id = session_id
        self.data_dir = data_dir
        # Where calls are recorded: a data dir or a postgresql:// URL.
        self.location = store_location(store, data_dir)
        self.scratch = Scratch(data_dir, session_id)
        self.workspace = workspace
        self.limits = limits
        self.gauge = gauge
        # What this session has Read and written: Edit and Write check it (CONTRACT section 10).
        self.read_record = ReadRecord()
        # The records of the readers that share this session (``record_of``),
        # least recently used first.
        self._readers: collections.OrderedDict[str, ReadRecord] = collections.OrderedDict()
        self._live = LiveLock(data_dir, session_id)
        self._store: SessionStore | None = None
        self.recorder: CallRecorder | None = None

    def _use(self, use: Callable[[SessionStore], T], fallback: T, failed: str | None) -> T:
        """``use(store)``; ``fallback`` when there is no store or it fails (blocking)."""
        store = self._store
        if store is None:
            return fallback
        return _degrade(lambda: use(store), fallback, failed)

    async def open(self) -> None:
        """Take the live lock, open the store and the recorder, load the read record, and
        sweep the scratch dirs of stale and ended sessions (not this one)."""
        self._live.acquire()
        await asyncio.to_thread(self._open_store)
        await asyncio.to_thread(self._load_read_record)
        await asyncio.to_thread(
            sweep,
            self.data_dir,
            stale_s=self.limits.scratch_stale_s,
            # Asked once per scratch dir: a store that fails ends none, quietly.
            is_ended=lambda sid: self._use(lambda store: store.is_ended(sid), False, None),
            keep=frozenset({self.id}),
        )

    def _open_store(self) -> None:
        """The store and this session's recorder; neither when the store is unusable."""
        not_recorded = f"tool calls are not recorded ({self.data_dir})"
        self._store = _degrade(
            lambda: SessionStore(self.location, limits=self.limits, scratch_dir=self.data_dir),
            None,
            not_recorded,
        )
        if self._store is None:
            return
        self.recorder = self._use(self._recorder, None, not_recorded)
        if self.recorder is None:
            self._store.close()
            self._store = None

    def _recorder(self, store: SessionStore) -> CallRecorder:
        # Where this session runs, for the web view's list of a fleet's sessions.
        store.note_origin(self.id, workspace=str(self.workspace), host=machine_name())
        return store.recorder(self.id)

    def _load_read_record(self) -> None:
        """What this session Read in an earlier host (``toolbound call`` is one per call);
        the record then follows the session's checkpoints. Without a store, neither."""
        if self._store is None:
            return

        def saved(store: SessionStore) -> ReadRecord:
            text = store.read_record(self.id)
            return self.read_record if text is None else ReadRecord.from_json(text)

        failed = f"session {self.id} starts with no read record"
        self.read_record = self._use(saved, self.read_record, failed)
        self._follow_checkpoints(self.read_record)
        if self.recorder is not None:
            self.recorder.keep(self.read_record)

    def _follow_checkpoints(self, record: ReadRecord) -> None:
        """``record`` asks this session for its checkpoints, through a weak reference:
        the recorder keeps the record (``CallRecorder.keep``) and its writer thread
        lives until it is closed, so a host dropped unclosed would otherwise keep
        its session, scratch dir and sandbox spare alive."""
        session = weakref.ref(self)

        def count() -> int | None:
            live = session()
            return None if live is None else live._checkpoint_count()

        record.checkpoint_count = count
        record.counts_on_loop = self.recorder is not None and self.recorder.counts_on_loop

    def _checkpoint_count(self) -> int | None:
        """The session's checkpoints as the store counts them now (economy re-reads ask);
        on the event loop, through the recorder's connection that never waits."""
        recorder = self.recorder
        if recorder is not None and recorder.counts_on_loop and _on_loop():
            return recorder.checkpoint_count(self.id)
        return self._use(
            lambda store: store.checkpoint_count(self.id),
            None,
            f"the checkpoints of {self.id} are unknown",
        )

    def record_of(self, reader: str | None) -> ReadRecord:
        """The read record of ``reader``: the session's own when None, else one of its
        own, so what one reader saw is never taken as seen by another (not kept in
        the store; the ``MAX_READERS`` most recent are kept)."""
        if reader is None:
            return self.read_record
        record = self._readers.get(reader)
        if record is None:
            record = ReadRecord()
            self._follow_checkpoints(record)
            self._readers[reader] = record
            while len(self._readers) > MAX_READERS:
                self._readers.popitem(last=False)
        else:
            self._readers.move_to_end(reader)
        return record

    async def estimate_context(self) -> None:
        """Estimate what the context holds from the session's transcript, counting on
        from the gauge's last estimate. A store that cannot be read leaves no
        estimate; without a store the gauge is left as it is."""
        if self._store is None:
            return
        known = self.gauge.tally

        def tally(store: SessionStore) -> ContextTally | None:
            session = store.get(self.id)
            return None if session is None else session.context_tally(estimate_tokens, known)

        # Quiet: asked before every economy call until the caller reports its context.
        self.gauge.take_estimate(await asyncio.to_thread(self._use, tally, None, None))

    async def close(self, *, end: bool) -> None:
        """Close the recorder (what it holds is written) and the store; with ``end``, end
        the session first: marked ended in the store, scratch dir removed. Then let go
        of the live lock."""
        recorder, store = self.recorder, self._store
        self.recorder = None
        if recorder is not None:
            await asyncio.to_thread(recorder.close)
        if end:
            await asyncio.to_thread(self._end)
        self._store = None
        if store is not None:
            store.close()
        self._live.release()

    def _end(self) -> None:
        """Mark the session ended in the store (a store that fails costs the record only),
        then remove its scratch dir in any case."""
        self._use(lambda store: store.end(self.id), None, f"session {self.id} not marked ended")
        self.scratch.remove()


def _on_loop() -> bool:
    """Whether the calling thread runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _degrade(action: Callable[[], T], fallback: T, failed: str | None) -> T:
    """``action()``, or ``fallback`` when the store fails it: the one degrade path.

    The failure is logged as ``failed`` (None: quietly, for what is asked too
    often to say each time), never raised.
    """
    try:
        return action()
    except _FAILURES as err:
        if failed is not None:
            log.warning("toolbound: %s: %s", failed, err)
        return fallback
