"""The one error of a store that cannot be used.

Pieces:
    StoreUnavailable  the database cannot be reached, opened or migrated
"""

from __future__ import annotations


class StoreUnavailable(OSError):
    """The store's database cannot be reached, opened or migrated; the message names it.

    Every way a store fails to open (a data dir that cannot be created, an
    SQLite or PostgreSQL error, a database whose migrations are not this
    code's) is this one exception, so a caller that can do without the store
    catches only it.
    """
