"""toolbound: a tool host for AI coding agents whose results never flood the context.

The public surface; everything else is internal.
"""

from toolbound.bounds import Cut, truncate_to
from toolbound.host import ToolHost
from toolbound.limits import DEFAULT_LIMITS, Budget, Limits
from toolbound.listeners import CallListener, CallStart
from toolbound.model_text import model_text
from toolbound.results import ErrorCode, ToolError
from toolbound.store import (
    CheckpointRecord,
    Session,
    SessionError,
    SessionStore,
    TranscriptError,
    estimate_tokens,
)
from toolbound.tooldefs import builtin_tool_defs

__all__ = [
    "DEFAULT_LIMITS",
    "Budget",
    "CallListener",
    "CallStart",
    "CheckpointRecord",
    "Cut",
    "ErrorCode",
    "Limits",
    "Session",
    "SessionError",
    "SessionStore",
    "ToolError",
    "ToolHost",
    "TranscriptError",
    "builtin_tool_defs",
    "estimate_tokens",
    "model_text",
    "truncate_to",
]

__version__ = "0.1.0"
