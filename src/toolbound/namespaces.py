"""Session namespaces (CONTRACT section 16): whose named sessions are whose.

A sessionless MCP request names its session (``_meta["toolbound/session"]``);
the name is kept in the namespace of the bearer token it came with, so it can
never reach a session an MCP session id created (``mcp-…``), the server's own,
or a session another token named. The web view lists and opens only the named
sessions of its own token.

Pieces:
    NAMED_PREFIX      how the id of every named session starts
    token_namespace   the namespace of a bearer token's named sessions
    named_session_id  a name's session id in a namespace
    visible_to        whether a holder of a token may see a session
"""

from __future__ import annotations

import hashlib

from toolbound.scratch import check_session_id

NAMED_PREFIX = "n-"
# A name longer than this is kept as its head and a digest of the whole.
_NAME_KEPT_CHARS = 80


def token_namespace(token: str) -> str:
    """The namespace of the sessions named by holders of ``token``: a digest of it
    (12 hex digits), the same across restarts with the same token."""
    return hashlib.sha256(b"toolbound-named-sessions\0" + token.encode()).hexdigest()[:12]


def named_session_id(namespace: str, name: str) -> str:
    """The toolbound session id of the session ``name`` in ``namespace``:
    ``n-<namespace>-<name>``, a long name cut and told apart by a digest."""
    if len(name) > _NAME_KEPT_CHARS:
        digest = hashlib.sha256(name.encode()).hexdigest()[:16]
        name = f"{name[:_NAME_KEPT_CHARS]}-{digest}"
    return check_session_id(f"{NAMED_PREFIX}{namespace}-{name}")


def visible_to(token: str, session_id: str) -> bool:
    """Whether a holder of ``token`` may see ``session_id``: every session but those
    another token named."""
    if not session_id.startswith(NAMED_PREFIX):
        return True
    return session_id.startswith(f"{NAMED_PREFIX}{token_namespace(token)}-")
