"""A call's abort signal: an ``asyncio.Event`` that also calls back when it is set.

Waiting for "the shell exited, the deadline passed, or the call was aborted"
with ``asyncio.wait`` on ``event.wait()`` costs a task, its cancellation and
a loop turn or two per call (measured: 40 us against 15 us for one future
woken by callbacks); ``on_set`` lets the waiter be woken directly.

Pieces:
    Abort     asyncio.Event with on_set(callback) -> a function that forgets it
    on_abort  on_set for any asyncio.Event: a task waits on one that is not an Abort
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class Abort(asyncio.Event):
    """Set when a call is aborted; ``on_set`` callbacks run, on the loop, when it is."""

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: list[Callable[[], None]] = []

    def set(self) -> None:
        super().set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_set(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` once the event is set (at once if it is); returns a
        function that forgets the callback if it has not run yet."""
        if self.is_set():
            callback()
            return _nothing
        self._callbacks.append(callback)

        def forget() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return forget


def on_abort(event: asyncio.Event, callback: Callable[[], None]) -> Callable[[], None]:
    """``event.on_set(callback)`` for an Abort; for another Event, a task waits on it."""
    if isinstance(event, Abort):
        return event.on_set(callback)
    waiting = asyncio.ensure_future(event.wait())
    waiting.add_done_callback(lambda done: None if done.cancelled() else callback())

    def forget() -> None:
        waiting.cancel()

    return forget


def _nothing() -> None:
    pass
