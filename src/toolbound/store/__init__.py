"""The session store: transcript, compaction checkpoints and tool calls in SQLite.

Pieces:
    tokens      estimate_tokens (the default estimator), message_tokens
    messages    provider validity of a message, OpenAI rendering
    checkpoint  which user messages a checkpoint retains (pure)
    schema      ordered, named migrations
    db          opening the database (WAL, foreign keys, busy timeout)
    sessions    SessionStore, Session, CheckpointRecord, SessionInfo
    recorder    CallRecorder: the host's tool calls and events, off the event loop
"""

from toolbound.store.messages import TranscriptError
from toolbound.store.recorder import CallHandle, CallRecorder
from toolbound.store.schema import SchemaError
from toolbound.store.sessions import (
    CheckpointRecord,
    Session,
    SessionError,
    SessionInfo,
    SessionStore,
)
from toolbound.store.tokens import Estimator, estimate_tokens, message_tokens

__all__ = [
    "CallHandle",
    "CallRecorder",
    "CheckpointRecord",
    "Estimator",
    "SchemaError",
    "Session",
    "SessionError",
    "SessionInfo",
    "SessionStore",
    "TranscriptError",
    "estimate_tokens",
    "message_tokens",
]
