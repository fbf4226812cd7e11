"""A call's abort signal wakes its waiters directly, and any asyncio.Event can stand in."""

from __future__ import annotations

import asyncio

from support import wait_for_async
from toolbound.exec.abort import Abort, on_abort


async def test_an_abort_calls_back_once_when_set_and_not_after_it_is_forgotten() -> None:
    abort, told = Abort(), []
    on_abort(abort, lambda: told.append("kept"))
    forget = on_abort(abort, lambda: told.append("forgotten"))
    forget()
    abort.set()
    abort.set()
    assert told == ["kept"]
    assert await asyncio.wait_for(abort.wait(), 1) is True


async def test_an_abort_already_set_calls_back_at_once() -> None:
    abort, told = Abort(), []
    abort.set()
    on_abort(abort, lambda: told.append("now"))
    assert told == ["now"]


async def test_a_plain_event_calls_back_through_a_waiting_task_until_forgotten() -> None:
    event, told = asyncio.Event(), []
    on_abort(event, lambda: told.append("kept"))
    forget = on_abort(event, lambda: told.append("forgotten"))
    forget()
    event.set()
    # The forgotten one's task was cancelled before the event was set, so it is
    # done by the time the kept one has called back.
    await wait_for_async(lambda: told, "the callback", poll_s=0)
    assert told == ["kept"]
