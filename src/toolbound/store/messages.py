"""Transcript messages: the Anthropic Messages shape, every block kept verbatim.

A message is ``{"role": "user"|"assistant", "content": str | [block, ...]}``;
a block is any object with a string ``type``. Every block the Messages API
knows (text with citations, image, document, thinking, redacted_thinking,
tool_use, tool_result with string or block content, server_tool_use and the
server tools' results, ...), every block it may add later, and every extra
key of a message or a block are stored exactly as appended.

Validation is about roles and tool pairing only, the way the API checks a
request: ``tool_use`` appears only in assistant messages and ``tool_result``
only in user messages; every tool_use is answered by a tool_result in the very
next message, ahead of any other block of that message, and every tool_result
answers one. Server tool blocks (``server_tool_use`` and its
``*_tool_result``) run and pair inside one assistant message on the API's side,
so they open nothing here. Everything in this module is pure; the store
supplies the pending ids and the ids already used.

Pieces:
    TranscriptError    ValueError naming the message and block that is not valid
    Checked            what a valid message carries: kind, tool_use ids, pending after it
    check_message      message + pending tool_use ids -> Checked, or TranscriptError
    blocks_of          a message's content as blocks (a string is one text block)
    retained_part      what of a user message a checkpoint keeps: its text blocks
    text_of            the text a message shows, its text blocks joined
    to_openai          Anthropic-shaped messages -> Chat Completions messages
    dumps              a message (or any stored value) as the compact JSON of its row
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["user", "results", "assistant"]

_ROLES = ("user", "assistant")
# The client tool blocks and the one role each belongs to; all others go anywhere.
_TOOL_BLOCK_ROLE: Mapping[str, str] = {"tool_use": "an assistant", "tool_result": "a user"}
# What pairing and rendering read of a client tool block: (key, type, type name).
_TOOL_FIELDS: Mapping[str, tuple[tuple[str, type, str], ...]] = {
    "tool_use": (("id", str, "a string"), ("name", str, "a string"), ("input", dict, "an object")),
    "tool_result": (("tool_use_id", str, "a string"),),
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
    """A valid message: its kind, the tool_use ids it opens, and what stays pending.

    ``kind`` is ``"results"`` for a user message that only carries tool
    results (not user-authored), ``"user"`` for any other user message.
    """

    kind: Kind
    tool_use_ids: tuple[str, ...]
    pending: frozenset[str]


def blocks_of(message: Mapping[str, Any]) -> list[Any]:
    """The message's content as blocks: a string content is one text block."""
    content = message["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content)


def _check_block(seq: int, i: int, block: object, role: str) -> str:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise TranscriptError(seq, i, "?", "a block is an object with a 'type'")
    kind: str = block["type"]
    owner = _TOOL_BLOCK_ROLE.get(kind)
    if owner is not None and not owner.endswith(f" {role}"):
        raise TranscriptError(seq, i, kind, f"a {kind} block belongs in {owner} message")
    for key, typ, name in _TOOL_FIELDS.get(kind, ()):
        if key not in block:
            raise TranscriptError(seq, i, kind, f"missing {key}")
        if not isinstance(block[key], typ) or (typ is str and not block[key]):
            raise TranscriptError(seq, i, kind, f"{key} must be {name}")
    return kind


def _check_shape(seq: int, message: object) -> tuple[str, list[Any]]:
    if not isinstance(message, dict):
        raise TranscriptError(seq, None, "", "a message is an object with role and content")
    if "role" not in message or "content" not in message:
        raise TranscriptError(seq, None, "", "a message needs 'role' and 'content'")
    role = message["role"]
    if role not in _ROLES:
        raise TranscriptError(seq, None, "", f"role must be 'user' or 'assistant', not {role!r}")
    content = message["content"]
    if not isinstance(content, str | list):
        raise TranscriptError(seq, None, "", "content must be a string or a list of blocks")
    return role, blocks_of(message)


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
    seen_other = False
    for i, (block, kind) in enumerate(zip(blocks, kinds, strict=True)):
        if kind != "tool_result":
            seen_other = True
            continue
        use_id = block["tool_use_id"]
        if seen_other:
            raise TranscriptError(
                seq, i, kind, "tool_result blocks must come before any other block in a message"
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
    if not isinstance(message, dict) or not isinstance(message.get("content"), str):
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
    role, blocks = _check_shape(seq, message)
    kinds = [_check_block(seq, i, block, role) for i, block in enumerate(blocks)]
    opened = _check_pairing(seq, role, blocks, kinds, pending)
    if role == "assistant":
        return Checked("assistant", opened, frozenset(opened))
    only_results = bool(kinds) and all(k == "tool_result" for k in kinds)
    return Checked("results" if only_results else "user", (), frozenset())


def retained_part(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a checkpoint keeps of a user-authored message: its text, or None.

    A string content is kept as it is. Of a block list only the text blocks
    are kept (their extra keys included); tool results never cross a
    checkpoint (D203), and images, documents and every other block are
    dropped with them: the retention budget is counted in text tokens, and a
    dropped block reaches the next context only through the summary. A
    message left with no text is not retained at all.
    """
    content = message["content"]
    if isinstance(content, str):
        return {"role": "user", "content": content}
    texts = [b for b in content if b.get("type") == "text" and isinstance(b.get("text"), str)]
    return {"role": "user", "content": texts} if texts else None


def text_of(message: Mapping[str, Any]) -> str:
    """The message's text: the string, or its text blocks joined by blank lines."""
    return "\n\n".join(
        b["text"] for b in blocks_of(message) if b.get("type") == "text" and "text" in b
    )


# --- the Chat Completions rendering ------------------------------------------

Part = dict[str, Any]


def _source_url(block: Mapping[str, Any]) -> str | None:
    """A media block's source as a URL: ``data:`` for base64, the url for url sources."""
    source = block.get("source")
    if not isinstance(source, dict):
        return None
    if source.get("type") == "base64" and isinstance(source.get("data"), str):
        media_type = source.get("media_type", "application/octet-stream")
        return f"data:{media_type};base64,{source['data']}"
    if source.get("type") == "url" and isinstance(source.get("url"), str):
        return str(source["url"])
    return None


def _openai_part(block: Mapping[str, Any]) -> Part | None:
    """One block as a Chat Completions content part; None for what it has no part for.

    text -> text; image -> image_url (data URL or URL); a base64 document ->
    file (a data URL), a text document -> text. Thinking, redacted thinking,
    server tool blocks and unknown blocks have no Chat Completions form.
    """
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return {"type": "text", "text": block["text"]}
    if kind == "image":
        url = _source_url(block)
        return None if url is None else {"type": "image_url", "image_url": {"url": url}}
    if kind == "document":
        source = block.get("source")
        if isinstance(source, dict) and source.get("type") == "text":
            return {"type": "text", "text": str(source.get("data", ""))}
        url = _source_url(block)
        if url is None:
            return None
        if url.startswith("data:"):
            file: dict[str, str] = {"file_data": url}
            if isinstance(block.get("title"), str):
                file = {"filename": block["title"], **file}
            return {"type": "file", "file": file}
        return {"type": "text", "text": url}
    return None


def _parts(blocks: Iterable[Mapping[str, Any]]) -> list[Part]:
    return [p for p in (_openai_part(b) for b in blocks) if p is not None]


def _content(parts: list[Part]) -> str | list[Part] | None:
    """One text part as a string (the common shape), several as a list, none as None."""
    if not parts:
        return None
    if len(parts) == 1 and parts[0]["type"] == "text":
        return str(parts[0]["text"])
    return parts


def _tool_message(block: Mapping[str, Any]) -> tuple[dict[str, Any], list[Part]]:
    """A tool_result as a ``tool`` message, and its non-text parts (images) apart."""
    content = block.get("content", "")
    media: list[Part] = []
    rendered: str | list[Part]
    if isinstance(content, str):
        rendered = content
    else:
        parts = _parts(b for b in content if isinstance(b, dict))
        rendered = [p for p in parts if p["type"] == "text"]
        media = [p for p in parts if p["type"] != "text"]
    return {"role": "tool", "tool_call_id": block["tool_use_id"], "content": rendered}, media


def _to_openai_one(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    role, content = message["role"], message["content"]
    if isinstance(content, str):
        return [{"role": role, "content": content}]
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
        texts = [p for p in _parts(content) if p["type"] == "text"]
        out: dict[str, Any] = {"role": "assistant", "content": _content(texts)}
        if calls:
            out["tool_calls"] = calls
        return [out] if calls or texts else []
    # Tool messages must directly follow the assistant message that called them,
    # which is why tool_result blocks come first in an Anthropic user message.
    rendered: list[dict[str, Any]] = []
    parts: list[Part] = []
    for block in content:
        if block["type"] == "tool_result":
            tool, media = _tool_message(block)
            rendered.append(tool)
            parts += media
    parts += _parts(b for b in content if b["type"] != "tool_result")
    if parts:
        rendered.append({"role": "user", "content": _content(parts)})
    return rendered


def to_openai(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Render Anthropic-shaped messages as Chat Completions messages.

    An assistant message becomes one message with ``tool_calls`` (arguments as
    a JSON string; content None when it has no text) and its text; thinking,
    redacted thinking and server tool blocks are left out (they have no Chat
    Completions form), and an assistant message left empty is dropped. Each
    tool_result becomes a ``role: "tool"`` message with its text (Chat
    Completions has no error flag, so ``is_error`` is not carried); the images
    a tool result holds, then the user's own blocks, follow in one user
    message. Images become ``image_url`` parts (a ``data:`` URL for base64
    sources), base64 documents ``file`` parts. Extra keys such as
    ``cache_control`` or ``citations`` are Anthropic-only and dropped.
    """
    return [out for message in messages for out in _to_openai_one(message)]


# One encoder for every row: json.dumps would build a new one per call for these options.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: object) -> str:
    return _ENCODER.encode(value)
