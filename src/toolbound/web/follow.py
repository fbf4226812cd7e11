"""Following the calls of other hosts live: PostgreSQL's LISTEN/NOTIFY, not polling.

Every host of a fleet records into one PostgreSQL store, and its recorder
NOTIFYs each committed batch (``{"session", "call", "seq"}`` on the store's
channel). A web view attached to one host sees that host's calls through its
hub; a ``StoreFollower`` lets it follow any other host's running call: one
connection LISTENs in a thread, and each notification wakes the feeds of
that call, which then read the events committed after the last one they
sent. Nothing is read until the store says something was written.

Pieces:
    StoreFollower  the LISTEN thread and the waiters it wakes: start(), watch(), close()
    Watch          one feed's wake-up: changed() waits for the next notification
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

CallKey = tuple[str, str]

# How often the LISTEN thread looks up from waiting to see whether it must stop.
_STOP_CHECK_S = 0.5


@dataclass(eq=False)
class Watch:
    """Set when the store announced new events of one call."""

    event: asyncio.Event = field(default_factory=asyncio.Event)

    async def changed(self) -> None:
        """Wait for the next announcement since the last call (or since the watch began)."""
        await self.event.wait()
        self.event.clear()


class StoreFollower:
    """LISTENs on a PostgreSQL store's channel and wakes the watches of each call."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._watches: dict[CallKey, set[Watch]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._conn: Any = None

    def start(self) -> None:
        """Connect and LISTEN (blocking: call it in a thread), then run the thread."""
        from toolbound.store.postgres import listen

        self._conn = listen(self.url)
        self._thread = threading.Thread(target=self._run, name="toolbound-listen", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                for note in self._conn.notifies(timeout=_STOP_CHECK_S):
                    self._dispatch(note.payload)
        except Exception as err:  # the connection broke: live following stops, replay goes on
            if not self._stop.is_set():
                log.warning("toolbound: the web view stopped following the store: %s", err)
        finally:
            with contextlib.suppress(Exception):
                self._conn.close()

    def _dispatch(self, payload: str) -> None:
        try:
            note = json.loads(payload)
            key = (str(note["session"]), str(note["call"]))
        except (ValueError, KeyError, TypeError):
            return
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed
                loop.call_soon_threadsafe(self._wake, key)

    def _wake(self, key: CallKey) -> None:
        for watch in self._watches.get(key, ()):
            watch.event.set()

    @contextlib.contextmanager
    def watch(self, session_id: str, tool_call_id: str) -> Iterator[Watch]:
        """A watch of one call for the duration of the block (on the event loop)."""
        self._loop = asyncio.get_running_loop()
        key = (session_id, tool_call_id)
        watch = Watch()
        self._watches.setdefault(key, set()).add(watch)
        try:
            yield watch
        finally:
            watches = self._watches.get(key)
            if watches is not None:
                watches.discard(watch)
                if not watches:
                    del self._watches[key]

    def close(self) -> None:
        """Stop the thread and close its connection (blocking up to the stop check)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
