"""Checkpoints (D203): user messages only, bounded, marked, restart-proof, history untouched."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from toolbound import DEFAULT_LIMITS, SessionStore, estimate_tokens
from toolbound.bounds import CHECKPOINT_MARKER
from toolbound.store import message_tokens

LIMIT = DEFAULT_LIMITS.checkpoint_retained_tokens
MESSAGE_ROWS = "SELECT * FROM messages ORDER BY session_id, seq"


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def calls(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": "running"}]
        + [{"type": "tool_use", "id": i, "name": "Bash", "input": {"command": i}} for i in ids],
    }


def results(ids: list[str], content: str, text: str | None = None) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [
        {"type": "tool_result", "tool_use_id": i, "content": content, "is_error": False}
        for i in ids
    ]
    if text:
        blocks.append({"type": "text", "text": text})
    return {"role": "user", "content": blocks}


def pairs_are_complete(context: list[dict[str, Any]]) -> bool:
    """Every tool_use is answered by the next message, and every result answers one."""
    open_ids: set[str] = set()
    for message in context:
        blocks = message["content"] if isinstance(message["content"], list) else []
        answered = {b["tool_use_id"] for b in blocks if b["type"] == "tool_result"}
        if answered != open_ids:
            return False
        open_ids = {b["id"] for b in blocks if b["type"] == "tool_use"}
    return not open_ids


def openai_pairs_are_complete(context: list[dict[str, Any]]) -> bool:
    open_ids: list[str] = []
    for message in context:
        if message["role"] == "tool":
            if not open_ids or open_ids.pop(0) != message["tool_call_id"]:
                return False
            continue
        if open_ids:
            return False
        open_ids = [c["id"] for c in message.get("tool_calls", [])]
    return not open_ids


def expected_cut(text: str, budget: int) -> str:
    """The largest 75/25 cut around the marker within ``budget`` tokens, found by counting."""
    best = ""
    for keep in range(1, len(text)):
        head = round(keep * DEFAULT_LIMITS.checkpoint_head_share)
        candidate = f"{text[:head]}\n{CHECKPOINT_MARKER}\n{text[len(text) - (keep - head) :]}"
        if estimate_tokens(candidate) > budget:
            break
        best = candidate
    return best


CRITERION_14 = r"""
import json, sys
from toolbound import SessionStore
with SessionStore(sys.argv[1]) as store:
    session = store.session("s14")
    json.dump({"context": session.context(), "openai": session.context(provider="openai"),
               "transcript": session.transcript(),
               "checkpoint": session.checkpoints()[-1].to_wire()}, sys.stdout)
"""


def test_criterion_14_parallel_batch_compacts_to_a_bounded_marked_context_after_restart(
    open_store: Callable[..., SessionStore],
    location: str,
    raw: Callable[[str], list[tuple[Any, ...]]],
) -> None:
    ids = [f"toolu_{i:02d}" for i in range(8)]
    # A user message of about 30,000 tokens, with distinct head and tail.
    big = "".join(f"line {i:06d} of the pasted log\n" for i in range(4000))
    assert 29_000 < estimate_tokens(big) < 31_000
    result_text = "".join(f"{i:07d} build output ok\n" for i in range(4096))  # 96 KB
    assert len(result_text) == 96 * 1024
    turn = [user(big), calls(*ids), results(ids, result_text)]
    with open_store() as store:
        session = store.session("s14")
        for m in turn:
            session.append(m)
        before = raw(MESSAGE_ROWS)
        record = session.checkpoint(summary="Read the log; all eight builds passed.")
        after_message = user("now deploy")
        session.append(after_message)
        context = session.context()

    cut = expected_cut(big, LIMIT)
    assert context == [
        user(cut),
        user("Read the log; all eight builds passed."),
        after_message,
    ]
    assert cut.count(CHECKPOINT_MARKER) == 1
    head, tail = cut.split(f"\n{CHECKPOINT_MARKER}\n")
    assert big.startswith(head)
    assert big.endswith(tail)
    assert round((len(head) + len(tail)) * 0.75) == len(head)
    assert record.retained_tokens == message_tokens(user(cut), estimate_tokens) <= LIMIT
    assert record.retained_tokens > LIMIT - 10
    assert (record.cut_seq, record.retained_seqs, record.through_seq) == (0, (0,), 2)
    assert result_text not in json.dumps(context)

    reopened = subprocess.run(
        [sys.executable, "-c", CRITERION_14, location],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    seen = json.loads(reopened.stdout)
    assert seen["context"] == context
    assert seen["openai"] == [
        {"role": "user", "content": cut},
        {"role": "user", "content": "Read the log; all eight builds passed."},
        {"role": "user", "content": "now deploy"},
    ]
    assert seen["checkpoint"] == record.to_wire()
    assert seen["transcript"] == [*turn, after_message]
    assert raw(MESSAGE_ROWS)[:3] == before


def test_checkpoint_keeps_only_user_authored_messages_newest_first(store: SessionStore) -> None:
    session = store.session("s1")
    session.append(user("first question"))
    session.append(calls("a"))
    session.append(results(["a"], "secret result", text="and a remark"))
    session.append({"role": "assistant", "content": "answer"})
    session.append(user("second question"))
    record = session.checkpoint(summary="summary")
    assert session.context() == [
        user("first question"),
        {"role": "user", "content": [{"type": "text", "text": "and a remark"}]},
        user("second question"),
        user("summary"),
    ]
    assert record.retained_seqs == (0, 2, 4)
    assert record.cut_seq is None


def test_messages_older_than_the_crossing_one_are_dropped(store: SessionStore) -> None:
    session = store.session("s1")
    oldest, crossing, newest = "o" * 400, "c" * (LIMIT * 4), "n" * (LIMIT * 2)
    for text in (oldest, crossing, newest):
        session.append(user(text))
    record = session.checkpoint(summary="s")
    context = session.context()
    assert context == [user(expected_cut(crossing, LIMIT // 2)), user(newest), user("s")]
    assert record.retained_tokens <= LIMIT
    assert record.retained_seqs == (1, 2)


def test_a_message_that_exactly_fills_the_budget_drops_all_older_ones(
    store: SessionStore,
) -> None:
    session = store.session("s1")
    session.append(user("older"))
    session.append(user("x" * LIMIT * 4))
    record = session.checkpoint(summary="s")
    assert session.context() == [user("x" * LIMIT * 4), user("s")]
    assert (record.retained_tokens, record.cut_seq) == (LIMIT, None)


def test_context_after_a_checkpoint_keeps_every_tool_pair_for_both_providers(
    store: SessionStore,
) -> None:
    session = store.session("s1")
    session.append(user("start"))
    session.append(calls("a", "b"))
    session.append(results(["a", "b"], "before"))
    session.checkpoint(summary="s")
    session.append(calls("c"))
    session.append(results(["c"], "after"))
    context = session.context()
    assert context == [user("start"), user("s"), calls("c"), results(["c"], "after")]
    assert pairs_are_complete(context)
    assert openai_pairs_are_complete(session.context(provider="openai"))


def test_a_call_awaiting_its_results_stays_after_the_checkpoint(store: SessionStore) -> None:
    session = store.session("s1")
    session.append(user("start"))
    session.append(calls("a"))
    record = session.checkpoint(summary="s")
    session.append(results(["a"], "late"))
    assert record.through_seq == 0
    assert record.context_tokens == sum(
        message_tokens(m, estimate_tokens) for m in (user("start"), user("s"), calls("a"))
    )
    context = session.context()
    assert context == [user("start"), user("s"), calls("a"), results(["a"], "late")]
    assert pairs_are_complete(context)


def test_the_latest_checkpoint_decides_the_context(store: SessionStore) -> None:
    session = store.session("s1")
    session.append(user("one"))
    session.checkpoint(summary="first summary")
    session.append(user("two"))
    session.checkpoint(summary="second summary")
    assert session.context() == [user("one"), user("two"), user("second summary")]
    assert [c.summary for c in session.checkpoints()] == ["first summary", "second summary"]


def test_checkpoint_rows_never_change_the_transcript_rows(
    store: SessionStore, raw: Callable[[str], list[tuple[Any, ...]]]
) -> None:
    session = store.session("s1")
    for i in range(5):
        session.append(user(f"message {i} " + "z" * 30_000))
        session.append({"role": "assistant", "content": f"reply {i}"})
    before = raw(MESSAGE_ROWS)
    session.checkpoint(summary="compacted")
    session.checkpoint(summary="again")
    assert raw(MESSAGE_ROWS) == before


def test_a_crossing_cjk_message_is_cut_between_characters_within_budget(
    store: SessionStore,
) -> None:
    session = store.session("s1")
    text = "".join(f"第{i}行：日本語と中文の混在テキスト。\n" for i in range(3000))
    session.append(user(text))
    record = session.checkpoint(summary="s")
    (kept,) = record.retained
    head, tail = kept["content"].split(f"\n{CHECKPOINT_MARKER}\n")
    assert text.startswith(head)
    assert text.endswith(tail)
    assert len(head) == round((len(head) + len(tail)) * DEFAULT_LIMITS.checkpoint_head_share)
    assert LIMIT - 2 <= estimate_tokens(kept["content"]) == record.retained_tokens <= LIMIT


def test_a_checkpoint_needs_a_summary_and_may_cover_nothing(store: SessionStore) -> None:
    session = store.session("s1")
    with pytest.raises(ValueError, match="non-blank summary"):
        session.checkpoint(summary=" ")
    record = session.checkpoint(summary="nothing yet")
    assert (record.through_seq, record.retained, record.retained_tokens) == (-1, (), 0)
    assert session.context() == [user("nothing yet")]


def test_a_second_checkpoint_builds_on_the_last_summary(store: SessionStore) -> None:
    session = store.session("s1")
    assert session.last_summary() is None
    session.append(user("fix the build"))
    session.checkpoint(summary="Found the broken rule in the Makefile.")
    session.append(user("and the tests"))
    previous = session.last_summary()
    assert previous == "Found the broken rule in the Makefile."
    record = session.checkpoint(summary=f"{previous} Then fixed two failing tests.")
    assert session.last_summary() == record.summary
    assert [c.summary for c in session.checkpoints()] == [
        "Found the broken rule in the Makefile.",
        "Found the broken rule in the Makefile. Then fixed two failing tests.",
    ]
    assert session.context() == [
        user("fix the build"),
        user("and the tests"),
        user("Found the broken rule in the Makefile. Then fixed two failing tests."),
    ]
