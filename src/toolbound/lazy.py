"""Names a module gives on first use (PEP 562), so importing it costs only what is used.

``toolbound``, ``toolbound.arguments``, ``toolbound.results`` and
``toolbound.edit`` each keep a table of names that live in other modules;
``loader`` makes the module's ``__getattr__`` from it: the first access imports
the name's home, takes the name, and keeps it in the module's namespace, so
later accesses are plain look-ups.

Pieces:
    loader  a module's ``__getattr__`` from its table of homes
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def loader(
    module: str, homes: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """``__getattr__`` for ``module``: a name of ``homes`` imported from its home on first
    use and kept in ``namespace``; any other name is an AttributeError."""

    def load(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    return load
