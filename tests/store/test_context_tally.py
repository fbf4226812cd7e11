"""The context's token tally: a full count's answer, counting on only what was appended."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from toolbound import SessionStore, ToolHost, estimate_tokens
from toolbound.store import message_tokens
from toolbound.store.transcript import Session


def full_count(session: Session) -> int:
    return sum(message_tokens(message, estimate_tokens) for message in session.context())


def chat(session: Session, n: int, size: int) -> None:
    for i in range(n):
        session.append({"role": "user", "content": f"question {i} " + "q" * size})
        session.append({"role": "assistant", "content": [{"type": "text", "text": "a" * size}]})


def test_a_tally_matches_a_full_count_as_the_transcript_grows_and_is_checkpointed(
    store: SessionStore, open_store: Callable[..., SessionStore]
) -> None:
    session = store.session("s1")
    empty = session.context_tally(estimate_tokens)
    assert (empty.messages, empty.tokens) == (0, 0)
    chat(session, 3, 400)
    first = session.context_tally(estimate_tokens, empty)
    assert (first.messages, first.tokens) == (6, full_count(session))
    # Another connection (another process's host) appends: counted on from the tally.
    with open_store() as other:
        chat(other.session("s1"), 2, 1000)
    grown = session.context_tally(estimate_tokens, first)
    assert (grown.messages, grown.tokens) == (10, full_count(session))
    assert grown.last_seq > first.last_seq
    session.checkpoint(summary="the story so far")
    chat(session, 1, 50)
    after = session.context_tally(estimate_tokens, grown)
    assert after.checkpoint_id is not None
    assert after.checkpoint_id != grown.checkpoint_id
    assert (after.messages, after.tokens) == (len(session.context()), full_count(session))


def test_a_tally_reads_only_the_messages_after_the_one_it_counted(store: SessionStore) -> None:
    session = store.session("s1")
    chat(session, 2, 100)
    known = session.context_tally(estimate_tokens)
    # A tally says what it counted; a count on from it adds only what came after.
    marked = dataclasses.replace(known, tokens=known.tokens + 10_000)
    assert session.context_tally(estimate_tokens, marked).tokens == known.tokens + 10_000
    session.append({"role": "user", "content": "x" * 400})  # 100 tokens
    counted_on = session.context_tally(estimate_tokens, marked)
    assert counted_on.tokens == known.tokens + 10_000 + 100
    assert counted_on.messages == known.messages + 1
    # A checkpoint since the tally: counted afresh.
    session.checkpoint(summary="done")
    assert session.context_tally(estimate_tokens, marked).tokens == full_count(session)


async def test_an_economy_hosts_gauge_follows_the_transcript_between_calls(
    tmp_path: Path, location: str
) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    async with ToolHost(
        tmp_path, store=location, session_id="s1", profile="economy", context_window=100_000
    ) as host:
        with SessionStore(location, scratch_dir=tmp_path / "scratch") as other:
            session = other.session("s1")
            estimated: list[int | None] = []
            counted: list[int] = []
            for size in (100, 4000):
                chat(session, 2, size)
                await host.call("Read", {"path": "a.txt"})
                estimated.append(host.gauge.estimated)
                counted.append(full_count(session))
    assert estimated == counted
    assert counted[1] > counted[0]
