"""Where the multi-process trials keep their runs: an SQLite file or a Postgres schema.

A `Place` names one database that worker processes (`tests.checkpoint.crash_graph`)
and the test share; `places` is a fixture parametrized over both backends that
makes fresh places and removes the Postgres ones afterwards.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from tests.checkpoint.crash_graph import open_store
from tests.pg_server import drop_schema, fresh_schema


@attrs.frozen
class Place:
    db: str
    schema: str | None = None

    def args(self) -> list[str]:
        """The worker's DB argument and, for Postgres, its schema option."""
        return [self.db, *(["--schema", self.schema] if self.schema else [])]

    def store(self, *, lease: float = 30.0):
        return open_store(self.db, lease=lease, schema=self.schema)

    def _execute(self, query: str, params: tuple = ()) -> list[tuple]:
        if self.schema is None:
            with sqlite3.connect(self.db) as conn:
                return conn.execute(query.replace("%s", "?"), params).fetchall()
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.db, autocommit=True) as conn:
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema)))
            cursor = conn.execute(query, params)
            return cursor.fetchall() if cursor.description else []

    def expire(self, run_id: str) -> None:
        """Make a lease lapse now, as if its runner had died long ago."""
        self._execute("UPDATE leases SET expires = 0 WHERE run_id = %s", (run_id,))

    def expires(self, run_id: str) -> float | None:
        """When the run's lease lapses, or None when it was never taken."""
        rows = self._execute("SELECT expires FROM leases WHERE run_id = %s", (run_id,))
        return rows[0][0] if rows else None

    def execute(self, query: str, params: tuple = ()) -> list[tuple]:
        """Run one statement (`%s` placeholders) on the place's tables."""
        return self._execute(query, params)


class Places:
    def __init__(self, kind: str, tmp_path: Path, dsn: str | None) -> None:
        self.kind = kind
        self._tmp = tmp_path
        self._dsn = dsn
        self._schemas: list[str] = []

    def __call__(self, name: str) -> Place:
        if self._dsn is None:
            return Place(str(self._tmp / f"{name}.db"))
        schema = fresh_schema()
        self._schemas.append(schema)
        return Place(self._dsn, schema)

    def clean(self) -> None:
        for schema in self._schemas:
            assert self._dsn is not None
            drop_schema(self._dsn, schema)


@pytest.fixture(params=["sqlite", "postgres"])
def places(request, tmp_path) -> Iterator[Places]:
    """Makes fresh places of one backend: an SQLite file, or a Postgres schema."""
    dsn = request.getfixturevalue("postgres_server").dsn if request.param == "postgres" else None
    made = Places(request.param, tmp_path, dsn)
    yield made
    made.clean()
