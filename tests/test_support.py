"""The bounded wait every test uses: the value it waited for, or a failure naming it."""

from __future__ import annotations

import asyncio
import time

import pytest

from support import WAIT_S, wait_for, wait_for_async


def test_wait_for_returns_the_first_truthy_value() -> None:
    answers = iter([None, 0, "", "ready"])
    assert wait_for(lambda: next(answers), "the answer", poll_s=0) == "ready"


def test_wait_for_fails_naming_what_it_waited_for_once_the_time_is_up() -> None:
    started = time.monotonic()
    with pytest.raises(AssertionError, match=r"^timed out after 0.2 s waiting for the moon$"):
        wait_for(lambda: False, "the moon", timeout_s=0.2)
    # Not before its time (monotonic: this cannot flake); after it, only a hang bound.
    assert 0.2 <= time.monotonic() - started < WAIT_S


async def test_wait_for_async_lets_the_loop_run_what_it_waits_for() -> None:
    done: list[int] = []

    async def work() -> None:
        done.append(1)

    task = asyncio.create_task(work())
    assert await wait_for_async(lambda: done, "the task to run", poll_s=0) == [1]
    await task


async def test_wait_for_async_fails_naming_what_it_waited_for() -> None:
    with pytest.raises(AssertionError, match=r"^timed out after 0.1 s waiting for nothing$"):
        await wait_for_async(lambda: None, "nothing", timeout_s=0.1)
