"""A real PostgreSQL server for the tests, started from Debian's ``postgresql`` package.

``initdb`` and ``pg_ctl`` run in a temporary directory, as an unprivileged
user when the tests run as root (initdb refuses root): ``setpriv`` switches to
``nobody``, the way the permission tests drop capabilities. The server listens
on a unix socket in that directory only (no TCP port), with durability off
(``fsync=off``: a test database need not survive a power cut), and is stopped
and removed when the last user releases it. Each test gets a schema of its
own (``new_url``), which is far cheaper than a database of its own.

Pieces:
    pg_bin_dir   where initdb and pg_ctl are (PG_BIN, pg_config, /usr/lib/postgresql)
    PgServer     start(), new_url(), stop()
    acquire, release   one shared server per test run, reference-counted
    running      acquire() for a fixture's lifetime: ``pytest.fixture(...)(running)``
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

INSTALL_HINT = (
    "the PostgreSQL tests need Debian's postgresql package (initdb, pg_ctl); "
    "run: sudo apt-get install -y postgresql   (or set PG_BIN to its bin folder)"
)
DATABASE = "toolbound"
START_TIMEOUT_S = 60


def pg_bin_dir() -> Path | None:
    """The folder holding initdb and pg_ctl, or None when PostgreSQL is not installed."""
    candidates: list[str] = []
    if os.environ.get("PG_BIN"):
        candidates.append(os.environ["PG_BIN"])
    pg_config = shutil.which("pg_config")
    if pg_config:
        done = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        candidates.append(done.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for folder in candidates:
        if folder and (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    return None


class PgServer:
    """One throwaway PostgreSQL cluster listening on a unix socket in its own folder."""

    def __init__(self, bin_dir: Path, *, durable: bool = False) -> None:
        self.bin_dir = bin_dir
        # durable (the benchmark): fsync on, commits not waited for (as SQLite's
        # synchronous=NORMAL in WAL mode); otherwise no fsync at all.
        self.durable = durable
        # Short: a unix socket path must fit in 107 bytes.
        self.root = Path(tempfile.mkdtemp(prefix="tbpg-"))
        self.data = self.root / "data"
        self.log = self.root / "log"
        self._as: list[str] = []
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            os.chown(self.root, nobody.pw_uid, nobody.pw_gid)
            self._as = ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}"]
            self._as += ["--clear-groups", "--"]

    def _run(self, *args: str) -> None:
        done = subprocess.run(
            [*self._as, *args],
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S,
            check=False,
            env={**os.environ, "LC_ALL": "C", "TZ": "UTC"},
        )
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr}{done.stdout}")

    def start(self) -> PgServer:
        self._run(
            str(self.bin_dir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "toolbound",
            "--auth=trust",
            "--encoding=UTF8",
            "--no-sync",
        )
        durability = "" if self.durable else " -c fsync=off -c full_page_writes=off"
        options = (
            f"-k {self.root} -c listen_addresses='' -c synchronous_commit=off"
            f" -c max_connections=200{durability}"
        )
        self._run(
            str(self.bin_dir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            options,
            "-w",
            "-t",
            str(START_TIMEOUT_S),
            "start",
        )
        with psycopg.connect(self._url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        return self

    def _url(self, database: str) -> str:
        return f"postgresql://toolbound@/{database}?host={self.root}"

    @property
    def url(self) -> str:
        """The test database, public schema."""
        return self._url(DATABASE)

    def new_url(self) -> str:
        """A URL whose connections work in a new, empty schema of the test database."""
        schema = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        return f"{self.url}&options=-csearch_path%3D{schema}"

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


_shared: PgServer | None = None
_users = 0


def acquire() -> PgServer:
    """The test run's server, started on first use; raises RuntimeError naming the fix."""
    global _shared, _users
    if _shared is None:
        bin_dir = pg_bin_dir()
        if bin_dir is None:
            raise RuntimeError(INSTALL_HINT)
        server = PgServer(bin_dir)
        try:
            _shared = server.start()
        except BaseException:
            server.stop()
            raise
    _users += 1
    return _shared


def release() -> None:
    """Give the server back; the last user stops it and removes its folder."""
    global _shared, _users
    _users -= 1
    if _users == 0 and _shared is not None:
        _shared.stop()
        _shared = None


def running() -> Iterator[PgServer]:
    """The shared server while a fixture lasts; no PostgreSQL fails the test, naming the fix."""
    try:
        server = acquire()
    except RuntimeError as err:
        pytest.fail(str(err))
    try:
        yield server
    finally:
        release()
