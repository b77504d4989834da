"""`PostgresMemory`: a memory store in PostgreSQL, for many processes and machines.

Sync psycopg on one connection per store object, driven from worker threads
(so it works on asyncio and trio alike), as `PostgresStore` does. Tables live
in their own schema, created on first use under an advisory lock. Keyword
search uses PostgreSQL's full-text search (`to_tsvector('simple', ...)`);
semantic search is exact and runs in this process, over the vectors under
the prefix.

The seam for a vector index: `_scan(prefix, now, vectors=True)` is the only
place vectors leave the database. A subclass for the pgvector extension
would store them in a `vector` column and override `search` to ask for the
nearest ones with `ORDER BY embedding <=> %s LIMIT %s`; none ships, because
it could not be tested here.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread

from .._extras import pip_install
from ..llm._embedder import Embedder
from ._base import Clock, Found, MemoryBase, Row, effect_result, items_result
from ._errors import MemoryBackendError, MemoryDataError
from ._items import Item, Namespace, decode_value, join_namespace, split_namespace

if TYPE_CHECKING:
    import psycopg

__all__ = ("PostgresMemory",)

T = TypeVar("T")

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_SETUP = """
CREATE TABLE IF NOT EXISTS memory_items (
    ns TEXT NOT NULL,
    key TEXT NOT NULL,
    value BYTEA NOT NULL,
    text TEXT NOT NULL,
    words TSVECTOR NOT NULL,
    vector BYTEA,
    version INTEGER NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    updated DOUBLE PRECISION NOT NULL,
    expires DOUBLE PRECISION,
    PRIMARY KEY (ns, key)
);
CREATE INDEX IF NOT EXISTS memory_items_words ON memory_items USING gin (words);
CREATE INDEX IF NOT EXISTS memory_items_ns ON memory_items (ns text_pattern_ops);
CREATE TABLE IF NOT EXISTS memory_effects (
    effect TEXT PRIMARY KEY,
    result BYTEA NOT NULL,
    at DOUBLE PRECISION NOT NULL
);
"""
_COLUMNS = "ns, key, value, text, version, created, updated, expires"
_LIVE = "(expires IS NULL OR expires > %s)"
_UNDER = "starts_with(ns, %s)"


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ImportError(f"PostgresMemory needs psycopg: {pip_install('postgres')}") from None
    return psycopg


class PostgresMemory(MemoryBase):
    """Items in PostgreSQL, shared by every process that opens the same schema.

    ```python
    memory = PostgresMemory("postgresql://app@db.internal/agents", embedder=embedder)
    await memory.put(("user", "42"), "diet", {"text": "vegetarian"})
    await memory.aclose()
    ```

    Args:
        conninfo: a libpq connection string or `postgresql://` URL.
        schema: the schema the tables live in (created when missing); the one
            a `PostgresStore` uses is fine, the table names differ.
        connect_timeout: seconds to wait for the connection.
    """

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str = "agentgraph",
        embedder: Embedder | None = None,
        index: Sequence[str] | None = None,
        clock: Clock = time.time,
        connect_timeout: float = 10.0,
    ) -> None:
        super().__init__(embedder=embedder, index=index, clock=clock)
        pg = _psycopg()
        try:
            parts = pg.conninfo.conninfo_to_dict(conninfo)
        except pg.ProgrammingError as exc:
            raise ValueError(f"not a PostgreSQL connection string: {exc}") from None
        if not _SCHEMA_NAME.fullmatch(schema):
            raise ValueError(
                f"schema is a name of lowercase letters, digits and underscores, not {schema!r}"
            )
        self.conninfo = conninfo
        self.schema = schema
        self.connect_timeout = connect_timeout
        where = f"{parts.get('host', 'localhost')}:{parts.get('port', 5432)}"
        self._name = f"{where}/{parts.get('dbname', '')}/{schema}"
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"PostgresMemory({self._name!r})"

    async def __aenter__(self) -> PostgresMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def close(self) -> None:
        """Close the connection (blocks while a call runs; `aclose` from async code)."""
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self.close)

    # -- the connection -----------------------------------------------------------------
    async def _run(self, action: str, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        return await anyio.to_thread.run_sync(self._locked, action, work)

    def _locked(self, action: str, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        pg = _psycopg()
        with self._lock:
            if self._closed:
                raise MemoryBackendError(repr(self), action, RuntimeError("the store is closed"))
            try:
                if self._conn is None:
                    self._conn = self._connect()
                with self._conn.transaction():
                    return work(self._conn)
            except pg.Error as exc:
                if self._conn is not None and self._conn.broken:
                    self._conn = None  # the next call connects again
                raise MemoryBackendError(repr(self), action, exc) from exc

    def _connect(self) -> psycopg.Connection[Any]:
        pg = _psycopg()
        conn: psycopg.Connection[Any] = pg.connect(
            self.conninfo, autocommit=True, connect_timeout=max(1, round(self.connect_timeout))
        )
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtext('agentgraph.memory'))")
                conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
                conn.execute(f"SET search_path TO {self.schema}")
                conn.execute(_SETUP)
            conn.execute(f"SET search_path TO {self.schema}")
        except BaseException:
            conn.close()
            raise
        return conn

    # -- the hooks ----------------------------------------------------------------------
    async def _write(
        self,
        ns: Namespace,
        rows: list[Row],
        now: float,
        expires: float | None,
        effect: str | None,
    ) -> list[Item]:
        stored = join_namespace(ns)

        def work(conn: psycopg.Connection[Any]) -> list[Item]:
            done = _applied(conn, effect)
            if done is not None:
                result: list[Item] = effect_result(done, effect or "")
                return result
            items = [_put_row(conn, ns, stored, row, now, expires) for row in rows]
            if effect is not None:
                conn.execute(
                    "INSERT INTO memory_effects VALUES (%s, %s, %s)",
                    (effect, items_result(items), now),
                )
            return items

        return await self._run("store items", work)

    async def _get(self, ns: Namespace, key: str, now: float) -> Item | None:
        def work(conn: psycopg.Connection[Any]) -> Item | None:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM memory_items WHERE ns = %s AND key = %s AND {_LIVE}",
                (join_namespace(ns), key, now),
            ).fetchone()
            return None if row is None else _item(row)

        return await self._run("read an item", work)

    async def _delete(self, ns: Namespace, key: str, now: float, effect: str | None) -> bool:
        def work(conn: psycopg.Connection[Any]) -> bool:
            done = _applied(conn, effect)
            if done is not None:
                return bool(effect_result(done, effect or ""))
            found = conn.execute(
                "DELETE FROM memory_items WHERE ns = %s AND key = %s RETURNING expires",
                (join_namespace(ns), key),
            ).fetchone()
            there = found is not None and (found[0] is None or found[0] > now)
            if effect is not None:
                conn.execute(
                    "INSERT INTO memory_effects VALUES (%s, %s, %s)",
                    (effect, b"true" if there else b"false", now),
                )
            return there

        return await self._run("delete an item", work)

    async def _scan(self, prefix: Namespace, now: float, *, vectors: bool) -> list[Found]:
        vector = "vector" if vectors else "NULL"

        def work(conn: psycopg.Connection[Any]) -> list[Found]:
            rows = conn.execute(
                f"SELECT {_COLUMNS}, {vector} FROM memory_items WHERE {_UNDER} AND {_LIVE}",
                (join_namespace(prefix), now),
            ).fetchall()
            return [Found(_item(row), row[3], _bytes(row[8])) for row in rows]

        return await self._run("search items", work)

    async def _keyword(self, prefix: Namespace, words: list[str], now: float) -> list[Found]:
        # Each word as a quoted lexeme, so no word is read as tsquery syntax.
        query = " | ".join(
            "'" + word.replace("'", "''").replace("\\", "\\\\") + "'" for word in words
        )

        def work(conn: psycopg.Connection[Any]) -> list[Found]:
            rows = conn.execute(
                f"SELECT {_COLUMNS}, ts_rank(words, q) FROM memory_items, "
                "to_tsquery('simple', %s) AS q "
                f"WHERE words @@ q AND {_UNDER} AND {_LIVE}",
                (query, join_namespace(prefix), now),
            ).fetchall()
            return [Found(_item(row), row[3], None, float(row[8])) for row in rows]

        return await self._run("search items", work)

    async def _namespaces(self, prefix: Namespace, now: float) -> set[Namespace]:
        def work(conn: psycopg.Connection[Any]) -> set[Namespace]:
            rows = conn.execute(
                f"SELECT DISTINCT ns FROM memory_items WHERE {_UNDER} AND {_LIVE}",
                (join_namespace(prefix), now),
            ).fetchall()
            return {split_namespace(ns, "") for (ns,) in rows}

        return await self._run("list namespaces", work)


def _applied(conn: psycopg.Connection[Any], effect: str | None) -> bytes | None:
    if effect is None:
        return None
    # Two writers of one effect at once: the second's insert of it fails, rolling back its write.
    row = conn.execute("SELECT result FROM memory_effects WHERE effect = %s", (effect,)).fetchone()
    return None if row is None else bytes(row[0])


def _put_row(
    conn: psycopg.Connection[Any],
    ns: Namespace,
    stored: str,
    row: Row,
    now: float,
    expires: float | None,
) -> Item:
    # One statement: the version counts only live items, and concurrent puts of
    # one key queue on its row lock rather than both reading the old version.
    found = conn.execute(
        "INSERT INTO memory_items AS m VALUES "
        "(%s, %s, %s, %s, to_tsvector('simple', %s), %s, 1, %s, %s, %s) "
        "ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, text = excluded.text, "
        "words = excluded.words, vector = excluded.vector, updated = excluded.updated, "
        "expires = excluded.expires, "
        "version = CASE WHEN m.expires IS NULL OR m.expires > %s THEN m.version + 1 ELSE 1 END, "
        "created = CASE WHEN m.expires IS NULL OR m.expires > %s THEN m.created "
        "ELSE excluded.created END "
        "RETURNING version, created",
        (stored, row.key, row.raw, row.text, row.text, row.vector, now, now, expires, now, now),
    ).fetchone()
    assert found is not None, "an upsert returns its row"
    return Item(ns, row.key, row.value, found[0], found[1], now, expires)


def _bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


def _item(row: Sequence[Any]) -> Item:
    ns_text, key = row[0], row[1]
    ns = split_namespace(ns_text, key)
    value = decode_value(bytes(row[2]), ns, key)
    version, created, updated, expires = row[4], row[5], row[6], row[7]
    if not isinstance(version, int):
        raise MemoryDataError(ns, key, "its version is not a number")
    return Item(ns, key, value, version, created, updated, expires)
