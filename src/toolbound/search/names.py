"""The old home of ``toolbound.names`` (``shown_name``, ``real_name``), kept because
0.2's README named ``toolbound.search.names.real_name``; new code imports
``toolbound.names``, which sits beside ``paths`` below every tool.

Pieces:
    shown_name, real_name   re-exported from toolbound.names
"""

from toolbound.names import real_name, shown_name

__all__ = ["real_name", "shown_name"]
