"""The transcript: append-only, provider-valid on append, rendered for both providers."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from toolbound import SessionStore, estimate_tokens
from toolbound.store import SchemaError, SessionError, TranscriptError
from toolbound.store.schema import MIGRATIONS, Migration, migrate


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def calls(*ids: str, text: str | None = None) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks += [{"type": "tool_use", "id": i, "name": "Read", "input": {"path": i}} for i in ids]
    return {"role": "assistant", "content": blocks}


def results(*ids: str, text: str | None = None, is_error: bool = False) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [
        {"type": "tool_result", "tool_use_id": i, "content": f"out {i}", "is_error": is_error}
        for i in ids
    ]
    if text:
        blocks.append({"type": "text", "text": text})
    return {"role": "user", "content": blocks}


def test_transcript_returns_the_messages_as_appended_across_reopening(
    open_store: Callable[..., SessionStore],
) -> None:
    turn = [user("find the bug"), calls("t1", "t2", text="looking"), results("t1", "t2")]
    with open_store() as store:
        session = store.session("s1")
        assert [session.append(m) for m in turn] == [0, 1, 2]
    with open_store() as store:
        assert store.session("s1").transcript() == turn


def test_store_database_records_its_migrations_by_name(
    store: SessionStore, raw: Callable[[str], list[tuple[Any, ...]]]
) -> None:
    assert raw("SELECT version, name FROM schema_migrations ORDER BY version") == [
        (m.version, m.name) for m in MIGRATIONS
    ]
    assert [m.name for m in MIGRATIONS] == [
        "0001_initial",
        "0002_retention",
        "0003_read_records",
        "0004_ledger",
        "0005_session_origin",
        "0006_fit",
        "0007_job_input",
    ]


def test_sqlite_store_uses_wal_and_foreign_keys(tmp_path: Path) -> None:
    with SessionStore(tmp_path) as store:
        assert (tmp_path / "toolbound.db").is_file()
        assert store._conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert store._conn.execute("PRAGMA foreign_keys").fetchone() == (1,)


def test_a_database_with_an_edited_migration_is_refused(store: SessionStore) -> None:
    dialect = store.backend.kind
    conn = store.backend.connect()
    try:
        edited = (Migration(1, "0001_renamed", ""),)
        with pytest.raises(SchemaError, match="0001_initial"):
            migrate(conn, edited, dialect=dialect)
        assert migrate(conn, dialect=dialect) == 0
    finally:
        conn.close()


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE messages SET body = '{}'",
        "DELETE FROM messages",
        "UPDATE tool_uses SET seq = 9",
        "DELETE FROM checkpoints",
    ],
)
def test_triggers_refuse_rewriting_the_transcript(
    store: SessionStore, raw: Callable[[str], list[tuple[Any, ...]]], statement: str
) -> None:
    session = store.session("s1")
    session.append(user("hello"))
    session.append(calls("t1"))
    session.append(results("t1"))
    session.checkpoint(summary="said hello")
    before = session.transcript()
    with pytest.raises((sqlite3.IntegrityError, psycopg.IntegrityError), match="append-only"):
        raw(statement)
    assert session.transcript() == before


@pytest.mark.parametrize(
    ("history", "message", "error"),
    [
        (
            [user("hi")],
            results("t9"),
            "message 1, block 0 (tool_result): tool_use_id 't9' answers no tool_use of the "
            "preceding assistant message; append the assistant message with that tool_use first",
        ),
        (
            [user("hi"), calls("t1"), results("t1")],
            calls("t1"),
            "message 3, block 0 (tool_use): duplicated id 't1': message 1 already used it",
        ),
        (
            [user("hi")],
            calls("t1", "t1"),
            "message 1, block 1 (tool_use): duplicated id 't1' in this message",
        ),
        (
            [user("hi"), calls("t1", "t2")],
            results("t1"),
            "message 2: tool_use t2 of the preceding assistant message has no tool_result here; "
            "every tool_use is answered in the very next message",
        ),
        (
            [user("hi"), calls("t1")],
            user("and another thing"),
            "message 2: tool_use t1 of the preceding assistant message has no tool_result here; "
            "every tool_use is answered in the very next message",
        ),
        (
            [user("hi"), calls("t1")],
            calls("t2"),
            "message 2: tool_use t1 has no tool_result yet; "
            "append the user message carrying its results first",
        ),
        (
            [user("hi"), calls("t1")],
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "first"},
                    {"type": "tool_result", "tool_use_id": "t1", "content": "x"},
                ],
            },
            "message 2, block 1 (tool_result): tool_result blocks must come before any other "
            "block in a message",
        ),
        (
            [],
            {
                "role": "user",
                "content": [{"type": "tool_use", "id": "a", "name": "x", "input": {}}],
            },
            "message 0, block 0 (tool_use): a tool_use block belongs in an assistant message",
        ),
        (
            [],
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a b", "name": "x"}]},
            "message 0, block 0 (tool_use): missing input",
        ),
        ([], {"role": "system", "content": "x"}, "message 0: role must be 'user' or 'assistant'"),
        (
            [],
            {"role": "user", "content": {"type": "text"}},
            "message 0: content must be a string or a list of blocks",
        ),
    ],
)
def test_invalid_transcripts_are_refused_naming_the_block(
    store: SessionStore, history: list[dict[str, Any]], message: dict[str, Any], error: str
) -> None:
    session = store.session("s1")
    for m in history:
        session.append(m)
    with pytest.raises(TranscriptError) as caught:
        session.append(message)
    assert str(caught.value).startswith(error)
    assert isinstance(caught.value, ValueError)
    assert session.transcript() == history


def test_a_refused_message_leaves_the_session_appendable(store: SessionStore) -> None:
    session = store.session("s1")
    session.append(calls("t1"))
    with pytest.raises(TranscriptError):
        session.append(results("t2"))
    session.append(results("t1"))
    assert session.transcript() == [calls("t1"), results("t1")]


def test_openai_context_renders_tool_calls_and_tool_messages(store: SessionStore) -> None:
    session = store.session("s1")
    session.append(user("read two files"))
    session.append(calls("t1", "t2", text="reading"))
    session.append(results("t1", "t2", text="now fix it", is_error=False))
    session.append(
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t3", "name": "Bash", "input": {"command": "make"}}
            ],
        }
    )
    session.append(results("t3", is_error=True))
    assert session.context(provider="openai") == [
        {"role": "user", "content": "read two files"},
        {
            "role": "assistant",
            "content": "reading",
            "tool_calls": [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "Read", "arguments": '{"path": "t1"}'},
                },
                {
                    "id": "t2",
                    "type": "function",
                    "function": {"name": "Read", "arguments": '{"path": "t2"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "out t1"},
        {"role": "tool", "tool_call_id": "t2", "content": "out t2"},
        {"role": "user", "content": "now fix it"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "t3",
                    "type": "function",
                    "function": {"name": "Bash", "arguments": '{"command": "make"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "t3", "content": "out t3"},
    ]


def test_an_ended_session_takes_no_more_messages(store: SessionStore) -> None:
    session = store.session("s1")
    session.append(user("hello"))
    info = store.end("s1")
    assert info.ended_at is not None
    assert store.is_ended("s1")
    with pytest.raises(SessionError, match="has ended"):
        session.append(user("again"))
    assert store.session("s1").transcript() == [user("hello")]


def test_ending_a_session_removes_its_scratch_dir(store: SessionStore) -> None:
    scratch = store.data_dir / "scratch" / "s1" / "tool-output"
    scratch.mkdir(parents=True)
    (scratch / "stdout-1-0.log").write_text("spilled")
    store.session("s1")
    store.end("s1")
    assert not (store.data_dir / "scratch" / "s1").exists()


def test_unknown_and_malformed_session_ids_are_refused(store: SessionStore) -> None:
    with pytest.raises(SessionError, match="does not exist"):
        store.end("nobody")
    with pytest.raises(SessionError, match="is not allowed"):
        store.session("../escape")
    assert store.get("nobody") is None
    assert store.list() == []


def test_list_counts_messages_checkpoints_and_calls(store: SessionStore) -> None:
    store.session("a").append(user("one"))
    b = store.session("b")
    b.append(user("two"))
    b.append(user("three"))
    b.checkpoint(summary="counted")
    assert [(i.id, i.messages, i.checkpoints, i.tool_calls) for i in store.list()] == [
        ("a", 1, 0, 0),
        ("b", 2, 1, 0),
    ]


def test_estimate_tokens_is_utf8_bytes_over_four_rounded_up() -> None:
    assert [estimate_tokens(t) for t in ("", "a", "abcd", "abcde", "日本")] == [0, 1, 1, 2, 2]


def test_a_callers_estimator_sizes_messages(open_store: Callable[..., SessionStore]) -> None:
    with open_store(estimator=lambda text: len(text.split())) as store:
        session = store.session("s1")
        session.append(user("three short words"))
        record = session.checkpoint(summary="two words")
        assert (record.retained_tokens, record.context_tokens) == (3, 5)


def test_a_message_json_cannot_hold_is_refused(store: SessionStore) -> None:
    session = store.session("s1")
    session.append(user("hi"))
    bad = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {"n": float("nan")}}],
    }
    with pytest.raises(TranscriptError, match=r"^message 1: not JSON-serialisable"):
        session.append(bad)
    assert session.transcript() == [user("hi")]


def test_a_session_object_sees_what_another_writer_appended(store: SessionStore) -> None:
    first, second = store.session("s1"), store.session("s1")
    second.append(user("hi"))  # second caches "nothing pending"
    first.append(calls("t1"))
    assert second.append(results("t1")) == 2
    first.append(calls("t2"))
    with pytest.raises(TranscriptError, match=r"^message 4: tool_use t2 of the preceding"):
        second.append(user("too early"))
    assert first.append(results("t2")) == 4
    assert store.session("s1").transcript() == [
        user("hi"),
        calls("t1"),
        results("t1"),
        calls("t2"),
        results("t2"),
    ]
