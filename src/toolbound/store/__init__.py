"""The session store: transcript, compaction checkpoints and tool calls, in SQLite or PostgreSQL.

Pieces:
    tokens      estimate_tokens (the default estimator), message_tokens
    messages    provider validity of a message, OpenAI rendering
    checkpoint  which user messages a checkpoint retains (pure)
    schema      ordered, named migrations, in the SQLite and PostgreSQL dialects
    conn        the connection and backend protocols, the store's environment variable
    db          opening the SQLite database (WAL, foreign keys, busy timeout)
    errors      StoreUnavailable: the one error of a store that cannot be used
    backend     where a store lives: the SQLite backend, store locations, the dialect seam
    postgres    the PostgreSQL backend (imported only for a postgresql:// store)
    context     CheckpointRecord: writing checkpoints, reading the context
    transcript  Session, SessionInfo, SessionError: appending checked messages, reading them back
    sessions    SessionStore, PruneReport: the store and session lifecycle
    recorder    CallRecorder: the host's tool calls and events, off the event loop
    ledger      the context ledger: each call's model tokens and bytes, elided, spilled
    replay      reading the recorded calls and events back
    summaries   SessionSummary: where each session runs, its size and last activity
"""

from toolbound.store.backend import is_url, store_location
from toolbound.store.context import CheckpointRecord
from toolbound.store.errors import StoreUnavailable
from toolbound.store.messages import TranscriptError
from toolbound.store.recorder import CallHandle, CallRecorder
from toolbound.store.schema import SchemaError
from toolbound.store.sessions import PruneReport, SessionStore
from toolbound.store.tokens import Estimator, estimate_tokens, message_tokens
from toolbound.store.transcript import Session, SessionError, SessionInfo

__all__ = [
    "CallHandle",
    "CallRecorder",
    "CheckpointRecord",
    "Estimator",
    "PruneReport",
    "SchemaError",
    "Session",
    "SessionError",
    "SessionInfo",
    "SessionStore",
    "StoreUnavailable",
    "TranscriptError",
    "estimate_tokens",
    "is_url",
    "message_tokens",
    "store_location",
]
