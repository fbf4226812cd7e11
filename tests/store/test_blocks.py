"""Real transcripts: every Messages API content block is kept verbatim.

The transcripts are shaped like the Anthropic Messages API's own examples:
vision (base64 and url images), PDF documents, extended thinking with a
redacted block, a tool result carrying an image, the web search server tool
with its result and a cited text block, and blocks or keys this code has never
heard of.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from toolbound import DEFAULT_LIMITS, SessionStore, estimate_tokens
from toolbound.bounds import CHECKPOINT_MARKER
from toolbound.store import TranscriptError, message_tokens

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
    "AAAABJRU5ErkJggg=="
)

IMAGE_B64 = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
IMAGE_URL = {"type": "image", "source": {"type": "url", "url": "https://example.com/ant.jpg"}}
PDF = {
    "type": "document",
    "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"},
    "title": "spec.pdf",
    "citations": {"enabled": True},
    "cache_control": {"type": "ephemeral"},
}
THINKING = {
    "type": "thinking",
    "thinking": "The user wants the build fixed; I should read the Makefile first.",
    "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"}


def vision_turn() -> list[dict[str, Any]]:
    return [
        {
            "role": "user",
            "content": [
                IMAGE_B64,
                IMAGE_URL,
                {"type": "text", "text": "What is in these images?"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "A pixel and an ant."}]},
    ]


def thinking_tool_turn() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [PDF, {"type": "text", "text": "Take a screenshot of it."}]},
        {
            "role": "assistant",
            "content": [
                THINKING,
                REDACTED,
                {"type": "text", "text": "Taking it."},
                {
                    "type": "tool_use",
                    "id": "toolu_01A09q90qw90lq917835lq9",
                    "name": "screenshot",
                    "input": {"page": 1},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
                    "content": [{"type": "text", "text": "page 1"}, IMAGE_B64],
                },
                {"type": "text", "text": "Describe it."},
            ],
        },
    ]


def web_search_turn() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "How do I update a web app to TypeScript 5.5?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I'll search for that."},
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE",
                    "name": "web_search",
                    "input": {"query": "TypeScript 5.5 upgrade"},
                },
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE",
                    "content": [
                        {
                            "type": "web_search_result",
                            "url": "https://devblogs.microsoft.com/typescript/announcing-typescript-5-5/",
                            "title": "Announcing TypeScript 5.5",
                            "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5",
                            "page_age": "June 20, 2024",
                        }
                    ],
                },
                {
                    "type": "text",
                    "text": "TypeScript 5.5 adds inferred type predicates.",
                    "citations": [
                        {
                            "type": "web_search_result_location",
                            "url": "https://devblogs.microsoft.com/typescript/announcing-typescript-5-5/",
                            "title": "Announcing TypeScript 5.5",
                            "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm",
                            "cited_text": "TypeScript now infers a type predicate",
                        }
                    ],
                },
            ],
        },
    ]


def future_turn() -> list[dict[str, Any]]:
    """Blocks and keys newer than this code: kept as they came."""
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "hi", "x_future_key": [1, 2]},
                {"type": "hologram", "frames": 3},
            ],
            "x_client_meta": {"source": "ide"},
        },
        {
            "role": "assistant",
            "content": [{"type": "container_upload", "file_id": "file_011CNha8iCJcU1wXNR6q4V8w"}],
        },
    ]


@pytest.mark.parametrize(
    "turn",
    [vision_turn, thinking_tool_turn, web_search_turn, future_turn],
    ids=lambda f: str(f.__name__),
)
def test_every_content_block_and_extra_key_is_kept_verbatim(store: SessionStore, turn: Any) -> None:
    messages = turn()
    session = store.session("s1")
    for m in messages:
        session.append(m)
    assert session.transcript() == messages
    assert session.context() == messages


def test_a_whole_real_session_survives_reopening(
    store: SessionStore, open_store: Callable[..., SessionStore]
) -> None:
    messages = [
        *vision_turn(),
        *thinking_tool_turn(),
        {"role": "assistant", "content": "A screenshot of page 1."},
        *web_search_turn(),
        *future_turn(),
    ]
    session = store.session("s1")
    for m in messages:
        session.append(m)
    with open_store() as again:
        assert again.session("s1").transcript() == messages


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (
            {
                "role": "user",
                "content": [{"type": "tool_use", "id": "a", "name": "x", "input": {}}],
            },
            "message 0, block 0 (tool_use): a tool_use block belongs in an assistant message",
        ),
        (
            {"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "a"}]},
            "message 0, block 0 (tool_result): a tool_result block belongs in a user message",
        ),
        (
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x"}]},
            "message 0, block 0 (tool_use): missing input",
        ),
        (
            {"role": "user", "content": [{"text": "no type"}]},
            "message 0, block 0 (?): a block is an object with a 'type'",
        ),
        ({"role": "system", "content": "x"}, "message 0: role must be 'user' or 'assistant'"),
        ({"role": "user"}, "message 0: a message needs 'role' and 'content'"),
    ],
)
def test_only_roles_and_tool_pairing_are_validated(
    store: SessionStore, message: dict[str, Any], error: str
) -> None:
    with pytest.raises(TranscriptError) as caught:
        store.session("s1").append(message)
    assert str(caught.value).startswith(error)


def test_a_tool_result_must_come_before_an_image_in_its_message(store: SessionStore) -> None:
    session = store.session("s1")
    session.append(thinking_tool_turn()[1])
    late = {
        "role": "user",
        "content": [
            IMAGE_B64,
            {"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9"},
        ],
    }
    with pytest.raises(TranscriptError, match=r"block 1 \(tool_result\): tool_result blocks must"):
        session.append(late)


def test_a_server_tool_use_opens_no_client_tool_call(store: SessionStore) -> None:
    session = store.session("s1")
    for m in web_search_turn():
        session.append(m)
    # Nothing awaits a client tool_result: a plain user message may follow.
    assert session.append({"role": "user", "content": "thanks"}) == 2


def test_a_checkpoint_keeps_the_text_of_a_retained_message_and_drops_its_images(
    store: SessionStore,
) -> None:
    session = store.session("s1")
    for m in vision_turn():
        session.append(m)
    session.append({"role": "user", "content": [IMAGE_URL]})  # an image and nothing else
    record = session.checkpoint(summary="saw the ant")
    assert session.context() == [
        {"role": "user", "content": [{"type": "text", "text": "What is in these images?"}]},
        {"role": "user", "content": "saw the ant"},
    ]
    assert record.retained_seqs == (0,)


def test_a_crossing_message_with_an_image_keeps_75_25_of_its_text(store: SessionStore) -> None:
    limit = DEFAULT_LIMITS.checkpoint_retained_tokens
    text = "".join(f"line {i:06d} of the pasted log\n" for i in range(4000))
    session = store.session("s1")
    session.append({"role": "user", "content": [IMAGE_B64, {"type": "text", "text": text}]})
    record = session.checkpoint(summary="s")
    (kept,) = record.retained
    head, tail = kept["content"].split(f"\n{CHECKPOINT_MARKER}\n")
    assert text.startswith(head)
    assert text.endswith(tail)
    assert len(head) == round((len(head) + len(tail)) * DEFAULT_LIMITS.checkpoint_head_share)
    assert limit - 10 < record.retained_tokens <= limit
    assert PNG not in str(kept)


def test_openai_rendering_maps_images_to_image_parts_and_leaves_thinking_out(
    store: SessionStore,
) -> None:
    session = store.session("s1")
    for m in vision_turn()[:1] + thinking_tool_turn()[1:]:
        session.append(m)
    data_url = f"data:image/png;base64,{PNG}"
    assert session.context(provider="openai") == [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": data_url}},
                {"type": "image_url", "image_url": {"url": "https://example.com/ant.jpg"}},
                {"type": "text", "text": "What is in these images?"},
            ],
        },
        {
            "role": "assistant",
            "content": "Taking it.",
            "tool_calls": [
                {
                    "id": "toolu_01A09q90qw90lq917835lq9",
                    "type": "function",
                    "function": {"name": "screenshot", "arguments": '{"page": 1}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "toolu_01A09q90qw90lq917835lq9",
            "content": [{"type": "text", "text": "page 1"}],
        },
        # Chat Completions tool messages carry text only: the result's image follows
        # in the next user message, ahead of that message's own text.
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": data_url}},
                {"type": "text", "text": "Describe it."},
            ],
        },
    ]


def test_openai_rendering_of_documents_and_server_tools(store: SessionStore) -> None:
    session = store.session("s1")
    session.append({"role": "user", "content": [PDF, {"type": "text", "text": "Summarise."}]})
    for m in web_search_turn()[1:]:
        session.append(m)
    assert session.context(provider="openai") == [
        {
            "role": "user",
            "content": [
                {
                    "type": "file",
                    "file": {
                        "filename": "spec.pdf",
                        "file_data": "data:application/pdf;base64,JVBERi0xLjQK",
                    },
                },
                {"type": "text", "text": "Summarise."},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I'll search for that."},
                {"type": "text", "text": "TypeScript 5.5 adds inferred type predicates."},
            ],
        },
    ]


def test_media_count_a_fixed_estimate_and_thinking_counts_its_text() -> None:
    thinking = {"role": "assistant", "content": [THINKING, {"type": "text", "text": "ok"}]}
    assert message_tokens(thinking, estimate_tokens) == estimate_tokens(
        THINKING["thinking"]
    ) + estimate_tokens("ok")
    image = {"role": "user", "content": [IMAGE_B64, IMAGE_URL]}
    assert message_tokens(image, estimate_tokens) == 2 * 1600
