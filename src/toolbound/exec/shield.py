"""Waiting out a stop: work that must finish even when its caller is cancelled.

Stopping a process tree takes up to the kill grace (SIGTERM, wait, SIGKILL,
reap). It runs in a worker thread, never on the event loop, so every other
session of a server goes on being served meanwhile; and whoever started it
waits for it to finish even when cancelled meanwhile, once or repeatedly,
then lets the cancellation go on (as trio's ``run_process`` always waits
for its child before raising).

The wait is shielded from both kinds of cancellation: asyncio's
``Task.cancel()`` (caught and held until the work is done) and anyio's
cancel scopes (the MCP SDK's), which would otherwise deliver the
cancellation again on every turn of the loop while we wait.

Pieces:
    wait_stopped     wait for a task or future to be done, through cancellations
    run_unstoppable  run a blocking call in a worker thread and wait it out
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def wait_stopped(future: asyncio.Future[Any]) -> None:
    """Wait until ``future`` is done; a cancellation meanwhile is re-raised after.

    The future's own outcome is left to the caller (``result()`` /
    ``exception()``): this only waits.
    """
    import anyio  # here, not at the top: a call that never waits out a stop skips it

    cancelled: asyncio.CancelledError | None = None
    with anyio.CancelScope(shield=True):
        while not future.done():
            try:
                await asyncio.wait({future})
            except asyncio.CancelledError as err:
                cancelled = cancelled or err
    if cancelled is not None:
        raise cancelled


async def run_unstoppable(fn: Callable[[], T]) -> T:
    """``fn()`` in a worker thread, waited for to the end even if cancelled meanwhile."""
    future = asyncio.ensure_future(asyncio.to_thread(fn))
    await wait_stopped(future)
    return future.result()
