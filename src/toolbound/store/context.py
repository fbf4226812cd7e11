"""Checkpoints and the context: what a session's compaction writes and the model reads.

A checkpoint row holds the summary, the user messages it retained (chosen by
the pure ``checkpoint.plan_retention``) and their re-estimated sizes; the
transcript rows are never touched. The context is the latest checkpoint's
retained messages and summary, then every message after it. Each function
runs inside a transaction the caller (``Session``) holds.

Pieces:
    Provider           the context's two shapes: "anthropic" or "openai"
    CheckpointRecord   one checkpoint: summary, what it retained, its estimates
    write_checkpoint   persist a checkpoint covering messages up to a position
    read_checkpoints   every checkpoint of a session, oldest first
    read_last_summary  the latest checkpoint's summary, or None
    read_context       the Anthropic-shaped messages to send the model
    ContextTally       a context's estimated tokens and how far they were counted
    tally_context      that estimate, counting only what came since a previous one
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Literal

from toolbound.limits import Limits
from toolbound.store.checkpoint import plan_retention
from toolbound.store.conn import Conn
from toolbound.store.messages import dumps
from toolbound.store.tokens import Estimator, message_tokens

Provider = Literal["anthropic", "openai"]


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    """A checkpoint: it covers messages ``0..through_seq`` of the transcript.

    ``retained`` are the user messages it keeps (oldest first, tool results
    removed, the one at ``cut_seq`` cut around the marker); ``retained_tokens``
    is their re-estimated size (within the retention limit) and
    ``context_tokens`` the estimate of the whole context when it was taken.
    """

    id: int
    session_id: str
    through_seq: int
    summary: str
    retained: tuple[dict[str, Any], ...]
    retained_seqs: tuple[int, ...]
    cut_seq: int | None
    retained_tokens: int
    context_tokens: int
    created_at: float

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "sessionId": self.session_id,
            "throughSeq": self.through_seq,
            "summary": self.summary,
            "retained": list(self.retained),
            "retainedSeqs": list(self.retained_seqs),
            "cutSeq": self.cut_seq,
            "retainedTokens": self.retained_tokens,
            "contextTokens": self.context_tokens,
            "createdAt": self.created_at,
        }


_CHECKPOINT_COLUMNS = (
    "id, session_id, through_seq, summary, retained, retained_seqs, cut_seq,"
    " retained_tokens, context_tokens, created_at"
)


def _checkpoint_from_row(row: tuple[Any, ...]) -> CheckpointRecord:
    return CheckpointRecord(
        id=row[0],
        session_id=row[1],
        through_seq=row[2],
        summary=row[3],
        retained=tuple(json.loads(row[4])),
        retained_seqs=tuple(json.loads(row[5])),
        cut_seq=row[6],
        retained_tokens=row[7],
        context_tokens=row[8],
        created_at=row[9],
    )


def write_checkpoint(
    conn: Conn,
    session_id: str,
    *,
    through: int,
    summary: str,
    limits: Limits,
    estimator: Estimator,
) -> CheckpointRecord:
    """Persist a checkpoint covering messages ``0..through`` (``Session.checkpoint``)."""
    rows = conn.execute(
        "SELECT seq, body FROM messages WHERE session_id = ? AND kind = 'user'"
        " AND seq <= ? ORDER BY seq DESC",
        (session_id, through),
    )
    retention = plan_retention(
        ((seq, json.loads(body)) for seq, body in rows),
        budget_tokens=limits.checkpoint_retained_tokens,
        head_share=limits.checkpoint_head_share,
        estimator=estimator,
    )
    rows.close()
    # Re-estimate what will actually go into the context before persisting it.
    retained_tokens = sum(message_tokens(m, estimator) for m in retention.messages)
    if retained_tokens > limits.checkpoint_retained_tokens:
        raise RuntimeError("checkpoint retention exceeded its budget; estimator not monotone")
    # The whole resulting context, under this store's estimator.
    tail = conn.execute(
        "SELECT body FROM messages WHERE session_id = ? AND seq > ?", (session_id, through)
    ).fetchall()
    context_tokens = retained_tokens + sum(
        message_tokens(m, estimator)
        for m in [{"role": "user", "content": summary}] + [json.loads(body) for (body,) in tail]
    )
    now = time.time()
    cur = conn.execute(
        "INSERT INTO checkpoints (session_id, through_seq, summary, retained,"
        " retained_seqs, cut_seq, retained_tokens, context_tokens, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (
            session_id,
            through,
            summary,
            dumps(list(retention.messages)),
            dumps(list(retention.seqs)),
            retention.cut_seq,
            retained_tokens,
            context_tokens,
            now,
        ),
    )
    (checkpoint_id,) = cur.fetchone()
    return CheckpointRecord(
        id=checkpoint_id,
        session_id=session_id,
        through_seq=through,
        summary=summary,
        retained=retention.messages,
        retained_seqs=retention.seqs,
        cut_seq=retention.cut_seq,
        retained_tokens=retained_tokens,
        context_tokens=context_tokens,
        created_at=now,
    )


def read_checkpoints(conn: Conn, session_id: str) -> list[CheckpointRecord]:
    """Every checkpoint of the session, oldest first."""
    rows = conn.execute(
        f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE session_id = ? ORDER BY id",
        (session_id,),
    ).fetchall()
    return [_checkpoint_from_row(r) for r in rows]


def read_last_summary(conn: Conn, session_id: str) -> str | None:
    """The latest checkpoint's summary; None before any."""
    row = conn.execute(
        "SELECT summary FROM checkpoints WHERE session_id = ? ORDER BY id DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    return None if row is None else str(row[0])


def read_context(conn: Conn, session_id: str) -> list[dict[str, Any]]:
    """The latest checkpoint's retained messages and summary, then every later message.

    Without a checkpoint, the whole transcript. Anthropic-shaped, as appended.
    """
    row = conn.execute(
        f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE session_id = ?"
        " ORDER BY id DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    head: list[dict[str, Any]] = []
    through = -1
    if row is not None:
        record = _checkpoint_from_row(row)
        head = [*record.retained, {"role": "user", "content": record.summary}]
        through = record.through_seq
    tail = conn.execute(
        "SELECT body FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq",
        (session_id, through),
    ).fetchall()
    return head + [json.loads(body) for (body,) in tail]


@dataclass(frozen=True, slots=True)
class ContextTally:
    """The estimated tokens of a session's context (``read_context``'s messages)
    and how far they were counted: through message ``last_seq`` after the
    checkpoint ``checkpoint_id`` (None: none). ``messages`` is how many there were.
    """

    checkpoint_id: int | None
    last_seq: int
    messages: int
    tokens: int


def tally_context(
    conn: Conn, session_id: str, estimator: Estimator, known: ContextTally | None = None
) -> ContextTally:
    """The tokens of ``read_context``'s messages by ``estimator``.

    Messages are only ever appended, so while the latest checkpoint is the one
    ``known`` counted (by the same estimator), only the messages after its
    ``last_seq`` are read: a long context costs what it grew by, not its size.
    """
    latest = conn.execute(
        "SELECT id FROM checkpoints WHERE session_id = ? ORDER BY id DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    checkpoint_id = None if latest is None else int(latest[0])
    if known is None or known.checkpoint_id != checkpoint_id:
        messages, tokens, last_seq = 0, 0, -1
        if checkpoint_id is not None:
            row = conn.execute(
                f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE id = ?", (checkpoint_id,)
            ).fetchone()
            record = _checkpoint_from_row(row)
            head = [*record.retained, {"role": "user", "content": record.summary}]
            messages = len(head)
            tokens = sum(message_tokens(message, estimator) for message in head)
            last_seq = record.through_seq
    else:
        messages, tokens, last_seq = known.messages, known.tokens, known.last_seq
    for seq, body in conn.execute(
        "SELECT seq, body FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq",
        (session_id, last_seq),
    ).fetchall():
        messages += 1
        tokens += message_tokens(json.loads(body), estimator)
        last_seq = seq
    return ContextTally(checkpoint_id, last_seq, messages, tokens)
