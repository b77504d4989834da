"""A throwaway PostgreSQL server for tests: `initdb` and `pg_ctl` on a temporary directory.

`PostgresServer` starts one on a free loopback port (its unix socket in its own
directory), owned by an unprivileged user when the tests run as root (initdb
refuses root: CI runs as root, so the server runs as `postgres` through
`runuser`), and stops and removes it on exit. `postgres_server` is a session
fixture around it; import it into a conftest to use it. Without the server
binaries the fixture skips, saying why, except in CI (`CI` set), where it fails.
"""

from __future__ import annotations

import atexit
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import pytest

__all__ = (
    "PostgresServer",
    "bindir",
    "drop_schema",
    "fresh_schema",
    "postgres_server",
    "server_binaries",
)

USER = "postgres"
"""The unprivileged user the server runs as when the tests run as root."""
TIMEOUT = 60
"""Seconds any one server command may take."""


def bindir() -> Path | None:
    """Where `initdb`, `pg_ctl` and `postgres` are (Debian keeps them off PATH), or None."""
    candidates = []
    if shutil.which("pg_config"):
        found = subprocess.run(
            ["pg_config", "--bindir"], capture_output=True, text=True, check=False, timeout=10
        )
        candidates.append(found.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for candidate in candidates:
        if candidate and all(
            os.access(os.path.join(candidate, tool), os.X_OK)
            for tool in ("initdb", "pg_ctl", "postgres")
        ):
            return Path(candidate)
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """A PostgreSQL server of its own, for as long as the `with` block lasts.

    Tests run it without fsync (a crash of the machine is not what they test);
    `durable=True` keeps PostgreSQL's defaults, for measurements.

    Attributes:
        dsn: a libpq URL for the `postgres` database as the superuser `postgres`.
    """

    def __init__(self, bin_dir: Path, *, durable: bool = False) -> None:
        self.bin = bin_dir
        self.durable = durable
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="agentgraph-pg-"))
        self.data = self.root / "data"
        self.sockets = self.root / "sockets"
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as: list[str] = []
        self._started = False

    def __enter__(self) -> PostgresServer:
        atexit.register(self._stop)  # should the `with` block never end (an interpreter exit)
        try:
            self._start()
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop()

    def _run(self, *command: str) -> None:
        done = subprocess.run(
            [*self._as, *command], capture_output=True, text=True, check=False, timeout=TIMEOUT
        )
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(
                f"{' '.join(command[:2])} failed ({done.returncode}): "
                f"{done.stderr.strip() or done.stdout.strip()}\n{tail}"
            )

    def _start(self) -> None:
        self.sockets.mkdir()
        if os.geteuid() == 0:  # initdb refuses root: the server runs as an ordinary user
            user = pwd.getpwnam(USER)
            for path in (self.root, self.sockets):
                os.chown(path, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", USER, "--"]
        self._run(
            str(self.bin / "initdb"),
            *["-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
            *["--no-sync", "--no-instructions"],
        )
        settings = (
            f"-p {self.port} -k {self.sockets} -c listen_addresses=127.0.0.1 -c max_connections=300"
        )
        if not self.durable:
            settings += " -c fsync=off -c full_page_writes=off -c synchronous_commit=off"
        self._started = True
        self._run(
            str(self.bin / "pg_ctl"),
            *["start", "-D", str(self.data), "-o", settings],
            *["-l", str(self.root / "server.log"), "-w", "-t", str(TIMEOUT)],
        )

    def restart(self) -> None:
        """Stop the server (ending every connection) and start it again on the same port."""
        self._run(
            str(self.bin / "pg_ctl"),
            *["restart", "-D", str(self.data), "-m", "fast"],
            *["-l", str(self.root / "server.log"), "-w", "-t", str(TIMEOUT)],
        )

    def _stop(self) -> None:
        atexit.unregister(self._stop)
        try:
            if self._started:
                self._started = False
                self._run(
                    str(self.bin / "pg_ctl"),
                    *["stop", "-D", str(self.data), "-m", "immediate", "-w", "-t", str(TIMEOUT)],
                )
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def server_binaries() -> Path:
    """Where the server binaries are; without them, skip (saying why), or fail in CI."""
    found = bindir()
    if found is None:
        why = (
            "PostgreSQL server binaries (initdb, pg_ctl) not found: "
            "`make test` installs the Debian postgresql package when run as root"
        )
        if os.environ.get("CI"):
            pytest.fail(f"{why} (CI must run these tests)")
        pytest.skip(why)
    return found


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the whole test session; skips without one, outside CI."""
    with PostgresServer(server_binaries()) as server:
        yield server


def fresh_schema() -> str:
    """A schema name no other test uses."""
    return f"t_{uuid.uuid4().hex[:16]}"


def drop_schema(dsn: str, schema: str) -> None:
    """Remove a test's schema and everything in it."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
