"""Transcript messages: Anthropic Messages shape in, provider-valid only.

A message is ``{"role": "user"|"assistant", "content": str | [block, ...]}``
with blocks ``text{text}``, ``tool_use{id,name,input}`` (assistant) and
``tool_result{tool_use_id,content?,is_error?}`` (user). Appending is checked
against the transcript so far, the way the Anthropic API checks a request:
every tool_use is answered by a tool_result in the very next message, before
that message's text, and every tool_result answers one. Everything here is
pure; the store supplies the pending ids and the ids already used.

Pieces:
    TranscriptError    ValueError naming the message and block that is not valid
    Checked            what a valid message carries: kind, tool_use ids, pending after it
    check_message      message + pending tool_use ids -> Checked, or TranscriptError
    is_user_authored   a user message with text (not only tool results)
    user_text_only     a user message with its tool_result blocks removed
    text_of            the text a message shows, its blocks joined
    to_openai          Anthropic-shaped messages -> Chat Completions messages
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["user", "results", "assistant"]

# The Anthropic API's pattern for tool_use ids, and the tool-name pattern both
# providers share.
_ID = re.compile(r"[A-Za-z0-9_-]+")
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_MESSAGE_KEYS = frozenset({"role", "content"})
# Optional keys a block may carry besides its own fields (kept, not rendered for OpenAI).
_BLOCK_EXTRAS = frozenset({"cache_control"})
_BLOCK_KEYS: Mapping[str, tuple[frozenset[str], frozenset[str]]] = {
    # type: (required keys, optional keys)
    "text": (frozenset({"type", "text"}), _BLOCK_EXTRAS),
    "tool_use": (frozenset({"type", "id", "name", "input"}), _BLOCK_EXTRAS),
    "tool_result": (
        frozenset({"type", "tool_use_id"}),
        _BLOCK_EXTRAS | {"content", "is_error"},
    ),
}
_ROLE_BLOCKS: Mapping[str, frozenset[str]] = {
    "user": frozenset({"text", "tool_result"}),
    "assistant": frozenset({"text", "tool_use"}),
}


class TranscriptError(ValueError):
    """A message that would make the transcript invalid for the provider APIs.

    ``seq`` is the position the message would have taken; ``block`` the index
    of the offending block, or None when the message as a whole is wrong.
    """

    def __init__(self, seq: int, block: int | None, what: str, message: str) -> None:
        where = f"message {seq}" if block is None else f"message {seq}, block {block} ({what})"
        super().__init__(f"{where}: {message}")
        self.seq = seq
        self.block = block


@dataclass(frozen=True, slots=True)
class Checked:
    """A valid message: its kind, the tool_use ids it opens, and what stays pending."""

    kind: Kind
    tool_use_ids: tuple[str, ...]
    pending: frozenset[str]


def _is_text(value: object) -> bool:
    return isinstance(value, str) and value.strip() != ""


def _check_block_keys(seq: int, i: int, block: Mapping[str, Any], kind: str) -> None:
    required, optional = _BLOCK_KEYS[kind]
    missing = sorted(required - block.keys())
    if missing:
        raise TranscriptError(seq, i, kind, f"missing {', '.join(missing)}")
    extra = sorted(block.keys() - required - optional)
    if extra:
        raise TranscriptError(seq, i, kind, f"unknown field {', '.join(extra)}")


def _check_result_content(seq: int, i: int, content: object) -> None:
    if isinstance(content, str):
        return
    if isinstance(content, list) and all(
        isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        for b in content
    ):
        return
    raise TranscriptError(
        seq, i, "tool_result", "content must be a string or a list of text blocks"
    )


def _check_block(seq: int, i: int, block: object, role: str) -> str:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise TranscriptError(seq, i, "?", "a block is an object with a 'type'")
    kind: str = block["type"]
    if kind not in _ROLE_BLOCKS[role]:
        allowed = " and ".join(sorted(_ROLE_BLOCKS[role]))
        raise TranscriptError(seq, i, kind, f"a {role} message carries only {allowed} blocks")
    _check_block_keys(seq, i, block, kind)
    if kind == "text" and not _is_text(block["text"]):
        raise TranscriptError(seq, i, kind, "text must be a non-blank string")
    if kind == "tool_use":
        if not isinstance(block["id"], str) or not _ID.fullmatch(block["id"]):
            raise TranscriptError(seq, i, kind, "id must match [A-Za-z0-9_-]+")
        if not isinstance(block["name"], str) or not _NAME.fullmatch(block["name"]):
            raise TranscriptError(seq, i, kind, "name must match [A-Za-z0-9_-]{1,64}")
        if not isinstance(block["input"], dict):
            raise TranscriptError(seq, i, kind, "input must be an object")
    if kind == "tool_result":
        if not isinstance(block["tool_use_id"], str):
            raise TranscriptError(seq, i, kind, "tool_use_id must be a string")
        _check_result_content(seq, i, block.get("content", ""))
        if not isinstance(block.get("is_error", False), bool):
            raise TranscriptError(seq, i, kind, "is_error must be true or false")
    return kind


def _check_shape(seq: int, message: object) -> tuple[str, list[Any] | str]:
    if not isinstance(message, dict):
        raise TranscriptError(seq, None, "", "a message is an object with role and content")
    extra = sorted(message.keys() - _MESSAGE_KEYS)
    if extra or not message.keys() >= _MESSAGE_KEYS:
        raise TranscriptError(seq, None, "", "a message has exactly the keys 'role' and 'content'")
    role = message["role"]
    if role not in _ROLE_BLOCKS:
        raise TranscriptError(seq, None, "", f"role must be 'user' or 'assistant', not {role!r}")
    content = message["content"]
    if isinstance(content, str):
        if not _is_text(content):
            raise TranscriptError(seq, None, "", "content must not be blank")
        return role, content
    if not isinstance(content, list) or not content:
        raise TranscriptError(seq, None, "", "content must be a string or a non-empty block list")
    return role, content


def _check_pairing(
    seq: int, role: str, blocks: list[Any], kinds: list[str], pending: frozenset[str]
) -> tuple[str, ...]:
    """Check tool_use/tool_result pairing; return the tool_use ids this message opens."""
    if role == "assistant":
        if pending:
            raise TranscriptError(
                seq,
                None,
                "",
                f"tool_use {', '.join(sorted(pending))} has no tool_result yet; "
                "append the user message carrying its results first",
            )
        ids: list[str] = []
        for i, (block, kind) in enumerate(zip(blocks, kinds, strict=True)):
            if kind == "tool_use":
                if block["id"] in ids:
                    raise TranscriptError(
                        seq, i, kind, f"duplicated id {block['id']!r} in this message"
                    )
                ids.append(block["id"])
        return tuple(ids)
    answered: list[str] = []
    seen_text = False
    for i, (block, kind) in enumerate(zip(blocks, kinds, strict=True)):
        if kind == "text":
            seen_text = True
            continue
        use_id = block["tool_use_id"]
        if seen_text:
            raise TranscriptError(
                seq, i, kind, "tool_result blocks must come before any text in a message"
            )
        if use_id in answered:
            raise TranscriptError(seq, i, kind, f"duplicated tool_result for {use_id!r}")
        if use_id not in pending:
            raise TranscriptError(
                seq,
                i,
                kind,
                f"tool_use_id {use_id!r} answers no tool_use of the preceding assistant "
                "message; append the assistant message with that tool_use first",
            )
        answered.append(use_id)
    missing = sorted(pending - set(answered))
    if missing:
        raise TranscriptError(
            seq,
            None,
            "",
            f"tool_use {', '.join(missing)} of the preceding assistant message has no "
            "tool_result here; every tool_use is answered in the very next message",
        )
    return ()


_PLAIN: Mapping[str, Checked] = {
    "user": Checked("user", (), frozenset()),
    "assistant": Checked("assistant", (), frozenset()),
}


def _plain_text(message: object) -> Checked | None:
    """The common case, decided without the general walk: a message of plain text."""
    if not isinstance(message, dict) or len(message) != 2:
        return None
    content = message.get("content")
    if not isinstance(content, str) or not content.strip():
        return None
    return _PLAIN.get(message.get("role"))  # type: ignore[arg-type]


def check_message(seq: int, message: object, pending: frozenset[str]) -> Checked:
    """Validate ``message`` as the transcript's message number ``seq``.

    ``pending`` are the tool_use ids of the preceding assistant message that
    have no result yet. Duplicates of ids used earlier in the session are the
    store's to check (it holds them); ids repeated inside the message are
    refused here.
    """
    fast = _plain_text(message) if not pending else None
    if fast is not None:
        return fast
    role, content = _check_shape(seq, message)
    if isinstance(content, str):
        blocks: list[Any] = [{"type": "text", "text": content}]
    else:
        blocks = content
    kinds = [_check_block(seq, i, block, role) for i, block in enumerate(blocks)]
    opened = _check_pairing(seq, role, blocks, kinds, pending)
    if role == "assistant":
        return Checked("assistant", opened, frozenset(opened))
    kind: Kind = "user" if "text" in kinds else "results"
    return Checked(kind, (), frozenset())


def is_user_authored(message: Mapping[str, Any]) -> bool:
    """A user message with some text; one carrying only tool results is not."""
    if message["role"] != "user":
        return False
    content = message["content"]
    return isinstance(content, str) or any(b["type"] == "text" for b in content)


def user_text_only(message: Mapping[str, Any]) -> dict[str, Any]:
    """The user message without its tool_result blocks (none may cross a checkpoint)."""
    content = message["content"]
    if isinstance(content, str):
        return {"role": "user", "content": content}
    return {"role": "user", "content": [b for b in content if b["type"] == "text"]}


def text_of(message: Mapping[str, Any]) -> str:
    """The message's text: the string, or its text blocks joined by blank lines."""
    content = message["content"]
    if isinstance(content, str):
        return content
    return "\n\n".join(b["text"] for b in content if b["type"] == "text")


def _openai_parts(blocks: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    return [{"type": "text", "text": b["text"]} for b in blocks]


def _openai_tool_content(block: Mapping[str, Any]) -> str | list[dict[str, str]]:
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    return _openai_parts(content)


def _openai_text(blocks: list[Mapping[str, Any]]) -> str | list[dict[str, str]] | None:
    if not blocks:
        return None
    if len(blocks) == 1:
        return str(blocks[0]["text"])
    return _openai_parts(blocks)


def _to_openai_one(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    role, content = message["role"], message["content"]
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    texts = [b for b in content if b["type"] == "text"]
    if role == "assistant":
        calls = [
            {
                "id": b["id"],
                "type": "function",
                "function": {
                    "name": b["name"],
                    "arguments": json.dumps(b["input"], ensure_ascii=False),
                },
            }
            for b in content
            if b["type"] == "tool_use"
        ]
        out: dict[str, Any] = {"role": "assistant", "content": _openai_text(texts)}
        if calls:
            out["tool_calls"] = calls
        return [out]
    # Tool messages must directly follow the assistant message that called them,
    # which is why tool_result blocks come first in an Anthropic user message.
    rendered: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": b["tool_use_id"], "content": _openai_tool_content(b)}
        for b in content
        if b["type"] == "tool_result"
    ]
    if texts:
        rendered.append({"role": "user", "content": _openai_text(texts)})
    return rendered


def to_openai(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Render Anthropic-shaped messages as Chat Completions messages.

    An assistant message becomes one message with ``tool_calls`` (arguments as
    a JSON string; content None when it has no text); each tool_result becomes
    a ``role: "tool"`` message (Chat Completions has no error flag, so
    ``is_error`` is not carried); user text stays a user message after them.
    ``cache_control`` is Anthropic-only and dropped.
    """
    return [out for message in messages for out in _to_openai_one(message)]
