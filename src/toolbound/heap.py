"""The server's heap: what start-up made stays out of the cyclic collector's way.

A full collection (generation 2) of Python's cyclic garbage collector walks
every object the process tracks, holding the GIL, on whichever thread's
allocation set it off: most often the event loop's. A server's objects are
mostly what its imports made (about 94,000 once ``serve`` has imported the
MCP SDK, pydantic's models, starlette, uvicorn and the tools' runners), and
walking them took 85-90 ms here (2 cores, under load): every session's call
in flight waited that long, a short Read among them (bench/load.py
``--scenario stream``: the tool stage of the slowest Reads, about 100 ms, was
one such collection each).

Once the server has started, :func:`freeze_startup` moves everything alive
into the permanent generation (``gc.freeze``): later collections walk only
what was made since (a full one then took under a millisecond in the same
measurement). Nothing is kept alive by it: a frozen object is still freed
when its last reference goes; only a reference cycle made of frozen objects
would stay (start-up leaves about 40 objects of cyclic garbage, a few KB; no
collection is forced first, which would cost start-up the 90 ms walk).

Only the server freezes its heap (``serve``): a program that embeds the
library owns its process's collector.

Pieces:
    freeze_startup  freeze what start-up made, once the server is about to serve
"""

from __future__ import annotations

import gc


def freeze_startup() -> int:
    """Move every object the collector tracks into its permanent generation, so later
    collections skip them; the number of objects frozen so far."""
    gc.freeze()
    return gc.get_freeze_count()
