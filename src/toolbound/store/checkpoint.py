"""Which user messages a checkpoint retains (D203): pure, no I/O.

A checkpoint keeps only user-authored messages, newest first, while they fit
the retention budget. The one that crosses the budget keeps a head/tail share
of its text (char-safe: Python strings are cut between code points) around
the checkpoint marker; every older one is dropped. Only text crosses: a
retained message keeps its text blocks and loses its tool_result blocks
(D203) and its images, documents and any other block (``retained_part``), so
a message that carried no text is not retained.

Pieces:
    Retention      the retained messages (oldest first), their tokens, what was cut
    cut_message    one message's text cut to a token budget around the marker
    plan_retention user-authored messages newest first + budget -> Retention
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from toolbound.bounds.markers import CHECKPOINT_MARKER
from toolbound.store.messages import retained_part, text_of
from toolbound.store.tokens import Estimator, message_tokens


@dataclass(frozen=True, slots=True)
class Retention:
    """What a checkpoint keeps of the user-authored messages.

    ``messages`` are oldest first, as they go into the context; ``seqs`` their
    transcript positions; ``cut_seq`` the one that was cut, if any.
    """

    messages: tuple[dict[str, Any], ...]
    seqs: tuple[int, ...]
    tokens: int
    cut_seq: int | None


def _render_cut(text: str, keep_chars: int, head_share: float) -> str:
    head_chars = round(keep_chars * head_share)
    tail_chars = keep_chars - head_chars
    tail = text[len(text) - tail_chars :] if tail_chars else ""
    return f"{text[:head_chars]}\n{CHECKPOINT_MARKER}\n{tail}"


def cut_message(
    text: str, budget_tokens: int, *, head_share: float, estimator: Estimator
) -> dict[str, Any] | None:
    """A user message keeping as much of ``text`` as fits ``budget_tokens``.

    The kept characters split ``head_share`` / ``1 - head_share`` between the
    head and the tail, with the marker on its own line between them. None when
    not one character fits beside the marker. The estimator is assumed to grow
    with the text (a binary search finds the largest share that fits).
    """

    def fits(keep: int) -> bool:
        return estimator(_render_cut(text, keep, head_share)) <= budget_tokens

    if not fits(1):
        return None
    lo, hi = 1, len(text) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return {"role": "user", "content": _render_cut(text, lo, head_share)}


def plan_retention(
    newest_first: Iterable[tuple[int, dict[str, Any]]],
    *,
    budget_tokens: int,
    head_share: float,
    estimator: Estimator,
) -> Retention:
    """Retain user-authored messages newest first within ``budget_tokens``.

    ``newest_first`` yields ``(seq, message)`` for user-authored messages only;
    it is consumed only up to the message that crosses the budget, so a caller
    can stream it from a cursor.
    """
    kept: list[tuple[int, dict[str, Any], int]] = []
    used = 0
    cut_seq: int | None = None
    for seq, original in newest_first:
        message = retained_part(original)
        if message is None:
            continue  # an image or document with no text: the summary carries it
        tokens = message_tokens(message, estimator)
        if used + tokens <= budget_tokens:
            kept.append((seq, message, tokens))
            used += tokens
            continue
        cut = cut_message(
            text_of(message), budget_tokens - used, head_share=head_share, estimator=estimator
        )
        if cut is not None:
            tokens = message_tokens(cut, estimator)
            kept.append((seq, cut, tokens))
            used += tokens
            cut_seq = seq
        break
    kept.reverse()
    return Retention(
        messages=tuple(m for _, m, _ in kept),
        seqs=tuple(s for s, _, _ in kept),
        tokens=used,
        cut_seq=cut_seq,
    )
