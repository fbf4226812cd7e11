"""toolbound: a tool host for AI coding agents whose results never flood the context.

The public surface; everything else is internal. Each name is imported on
first use (PEP 562), so a process that needs one piece (``toolbound serve
--stdio`` answering ``initialize``, ``toolbound call`` running one tool) does
not pay for the others. ``__version__`` is the installed package's version.
"""

import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

# Eager, and light (no pydantic): the submodule of the same name would otherwise
# stand where the function is once anything imports it.
from toolbound.model_text import model_text

if _TYPE_CHECKING:
    from toolbound.bounds import Cut, cut
    from toolbound.host import ToolHost
    from toolbound.limits import DEFAULT_LIMITS, Budget, Limits, Profile
    from toolbound.listeners import CallListener, CallStart
    from toolbound.results import ErrorCode, ToolError
    from toolbound.store import (
        CheckpointRecord,
        Session,
        SessionError,
        SessionStore,
        StoreUnavailable,
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
    "Profile",
    "Session",
    "SessionError",
    "SessionStore",
    "StoreUnavailable",
    "ToolError",
    "ToolHost",
    "TranscriptError",
    "builtin_tool_defs",
    "cut",
    "estimate_tokens",
    "model_text",
]

# Where each public name lives.
_HOMES = {
    "Cut": "toolbound.bounds",
    "cut": "toolbound.bounds",
    "ToolHost": "toolbound.host",
    "DEFAULT_LIMITS": "toolbound.limits",
    "Budget": "toolbound.limits",
    "Limits": "toolbound.limits",
    "Profile": "toolbound.limits",
    "CallListener": "toolbound.listeners",
    "CallStart": "toolbound.listeners",
    "ErrorCode": "toolbound.results",
    "ToolError": "toolbound.results",
    "CheckpointRecord": "toolbound.store",
    "Session": "toolbound.store",
    "SessionError": "toolbound.store",
    "SessionStore": "toolbound.store",
    "StoreUnavailable": "toolbound.store",
    "TranscriptError": "toolbound.store",
    "estimate_tokens": "toolbound.store",
    "builtin_tool_defs": "toolbound.tooldefs",
}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolbound")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> _Any:
    if name == "__version__":
        value: _Any = _version()
    elif name in _HOMES:
        value = getattr(_importlib.import_module(_HOMES[name]), name)
    else:
        raise AttributeError(f"module 'toolbound' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
