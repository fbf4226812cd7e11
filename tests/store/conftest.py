"""Every store test runs on both backends: an SQLite data dir and a real PostgreSQL.

``location`` is what a test hands ``SessionStore`` (and ``ToolHost(store=...)``,
``--store``, child processes): a fresh data dir, or the URL of a fresh schema
in the test run's PostgreSQL server (tests/pgserver.py, started once).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

import pgserver
from toolbound.store import SessionStore, is_url

BACKENDS = ["sqlite", "postgresql"]


pg = pytest.fixture(scope="session")(pgserver.running)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def location(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A fresh, empty store: a data dir, or a PostgreSQL schema of its own."""
    if backend == "sqlite":
        return str(tmp_path / "data")
    server: pgserver.PgServer = request.getfixturevalue("pg")
    return server.new_url()


@pytest.fixture
def open_store(location: str, tmp_path: Path) -> Callable[..., SessionStore]:
    """Open the test's store (again); scratch dirs live in ``tmp_path / "data"`` either way."""

    def opener(**options: Any) -> SessionStore:
        return SessionStore(location, scratch_dir=tmp_path / "data", **options)

    return opener


@pytest.fixture
def store(open_store: Callable[..., SessionStore]) -> Iterator[SessionStore]:
    with open_store() as s:
        yield s


@pytest.fixture
def raw(location: str) -> Callable[[str], list[tuple[Any, ...]]]:
    """Run one SQL statement on a connection of its own, beside the store's API."""

    def run(sql: str) -> list[tuple[Any, ...]]:
        if is_url(location):
            with psycopg.connect(location, autocommit=True) as pg_conn:
                cur = pg_conn.execute(sql)
                return cur.fetchall() if cur.description else []
        conn = sqlite3.connect(Path(location) / "toolbound.db", isolation_level=None)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()

    return run
