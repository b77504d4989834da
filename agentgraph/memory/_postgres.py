"""`PostgresMemory`: a memory store in PostgreSQL, for many processes and machines.

Sync psycopg on one connection per store object, driven from worker threads
(so it works on asyncio and trio alike), as `PostgresStore` does. Tables live
in their own schema, created on first use under an advisory lock. Keyword
search uses PostgreSQL's full-text search over the words `terms` folds (stored
as lexemes with `array_to_tsvector`, matched with a `tsquery` of lexemes, so
no parser of PostgreSQL's splits them otherwise than the other stores do);
semantic search is exact and runs in this process, over the vectors under
the prefix.

Value filters on JSON scalars run in SQL (`jsonb` equality). The vectors of a
prefix are kept in memory as one matrix, stamped with `memory_changes`'
counter, which every write transaction raises, and loaded again only after a
change; the counter's row lock makes concurrent writers take turns at commit.

The seam for a vector index: `_semantic` (and `_scan(prefix, now,
vectors=True)` for a filter SQL cannot express) are the only places vectors
leave the database. A subclass for the pgvector extension
would store them in a `vector` column and override `_semantic` to ask for the
nearest ones with `ORDER BY embedding <=> %s LIMIT %s`; none ships, because
it could not be tested here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from .._util._pg import load_psycopg, place
from ..llm._embedder import Embedder
from ..rag._rows import Matrix
from ._base import KEEP_EFFECTS, Clock, Found, Row, hit
from ._errors import MemoryDataError
from ._items import Item, MemoryHit, Namespace, join_namespace, terms
from ._pushdown import NOTHING, Where, top
from ._sql import COLUMNS, SQLMemory, damaged, row_item

if TYPE_CHECKING:
    import psycopg

__all__ = ("PostgresMemory",)

T = TypeVar("T")

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
CREATE INDEX IF NOT EXISTS memory_effects_at ON memory_effects (at);
CREATE TABLE IF NOT EXISTS memory_changes (
    id INTEGER PRIMARY KEY CHECK (id = 0),
    n BIGINT NOT NULL
);
INSERT INTO memory_changes VALUES (0, 0) ON CONFLICT DO NOTHING;
"""
_LIVE = "(expires IS NULL OR expires > %s)"
_UNDER = "starts_with(ns, %s)"


def _psycopg() -> Any:
    return load_psycopg("PostgresMemory")


class PostgresMemory(SQLMemory["psycopg.Connection[Any]"]):
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
        keep_effects: float | None = KEEP_EFFECTS,
        connect_timeout: float = 10.0,
    ) -> None:
        super().__init__(embedder=embedder, index=index, clock=clock, keep_effects=keep_effects)
        self._name = place("PostgresMemory", conninfo, schema)
        self.conninfo = conninfo
        self.schema = schema
        self.connect_timeout = connect_timeout

    def __repr__(self) -> str:
        return f"PostgresMemory({self._name!r})"

    # -- the driver -----------------------------------------------------------------------
    MARK = "%s"

    def _driver_error(self) -> type[Exception]:
        error: type[Exception] = _psycopg().Error
        return error

    def _call(
        self, conn: psycopg.Connection[Any], work: Callable[[psycopg.Connection[Any]], T]
    ) -> T:
        with conn.transaction():
            return work(conn)

    def _broken(self, conn: psycopg.Connection[Any]) -> bool:
        return conn.broken

    def _under(self, prefix: Namespace) -> tuple[str, list[Any]]:
        return _UNDER, [join_namespace(prefix)]

    def _put_row(
        self,
        conn: psycopg.Connection[Any],
        ns: Namespace,
        stored: str,
        row: Row,
        now: float,
        expires: float | None,
    ) -> Item:
        words = terms(row.text)
        # One statement: the version counts only live items, and concurrent puts of
        # one key queue on its row lock rather than both reading the old version.
        found = conn.execute(
            "INSERT INTO memory_items AS m VALUES "
            "(%s, %s, %s, %s, array_to_tsvector(%s::text[]), %s, 1, %s, %s, %s) "
            "ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, text = excluded.text, "
            "words = excluded.words, vector = excluded.vector, updated = excluded.updated, "
            "expires = excluded.expires, "
            "version = CASE WHEN m.expires IS NULL OR m.expires > %s THEN m.version + 1 "
            "ELSE 1 END, "
            "created = CASE WHEN m.expires IS NULL OR m.expires > %s THEN m.created "
            "ELSE excluded.created END "
            "RETURNING version, created",
            (stored, row.key, row.raw, row.text, words, row.vector, now, now, expires, now, now),
        ).fetchone()
        assert found is not None, "an upsert returns its row"
        return Item(ns, row.key, row.value, found[0], found[1], now, expires)

    def _remove(
        self, conn: psycopg.Connection[Any], stored: str, key: str
    ) -> tuple[float | None] | None:
        removed: tuple[float | None] | None = conn.execute(
            "DELETE FROM memory_items WHERE ns = %s AND key = %s RETURNING expires", (stored, key)
        ).fetchone()
        return removed

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

    # -- the searches -------------------------------------------------------------------
    async def _scan(
        self,
        prefix: Namespace,
        now: float,
        *,
        vectors: bool,
        where: Where = NOTHING,
        newest: int | None = None,
    ) -> list[Found]:
        vector = "vector" if vectors else "NULL"
        equal, values = _equal(where)
        cond = f"{_UNDER} AND {_LIVE}{equal}"
        params: list[Any] = [join_namespace(prefix), now, *values]
        if newest is not None:
            # The newest `newest` rows and any tied with the last of them (the caller
            # breaks ties by namespace and key).
            cond += (
                " AND updated >= COALESCE((SELECT updated FROM memory_items WHERE "
                f"{cond} ORDER BY updated DESC LIMIT 1 OFFSET %s), '-Infinity')"
            )
            params = [*params, *params, newest - 1]

        plain = f"SELECT {COLUMNS}, {vector} FROM memory_items WHERE {_UNDER} AND {_LIVE}"

        def work(conn: psycopg.Connection[Any]) -> list[Found]:
            try:
                with conn.transaction():  # a savepoint: a failed query leaves the rest usable
                    rows = conn.execute(
                        f"SELECT {COLUMNS}, {vector} FROM memory_items WHERE {cond}", params
                    ).fetchall()
            except _psycopg().DataError:
                # A damaged value: read every row, so the damage is named as such.
                rows = conn.execute(plain, (join_namespace(prefix), now)).fetchall()
            return [Found(row_item(row), row[3], _bytes(row[8])) for row in rows]

        return await self._run("search items", work)

    async def _semantic(
        self, prefix: Namespace, now: float, query: Matrix, where: Where, limit: int
    ) -> list[MemoryHit] | None:
        under = join_namespace(prefix)

        def work(conn: psycopg.Connection[Any]) -> list[MemoryHit] | None:
            # The counter first: a write committed between the two reads leaves a newer
            # matrix under an older count, which the next search loads again.
            (version,) = conn.execute("SELECT n FROM memory_changes").fetchone() or (0,)

            def read() -> list[tuple[tuple[str, str], float | None, bytes | None]]:
                rows = conn.execute(
                    "SELECT ns, key, expires, vector FROM memory_items "
                    f"WHERE {_UNDER} AND vector IS NOT NULL",
                    (under,),
                ).fetchall()
                return [((r[0], r[1]), r[2], _bytes(r[3])) for r in rows]

            loaded = self._cache.vectors(prefix, version, read, _damaged, query)
            allowed = None
            if where.fields:
                equal, values = _equal(where)
                try:
                    with conn.transaction():
                        matching = conn.execute(
                            f"SELECT ns, key FROM memory_items WHERE {_UNDER}{equal}",
                            (under, *values),
                        ).fetchall()
                except _psycopg().DataError:
                    return None  # a damaged value: the plain search names it
                allowed = {(ns, key) for ns, key in matching}
            best = top(loaded, query, now, allowed, limit)
            if not best:
                return []
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM memory_items WHERE (ns, key) IN "
                "(SELECT * FROM unnest(%s::text[], %s::text[]))",
                ([ref[0] for ref, _ in best], [ref[1] for ref, _ in best]),
            ).fetchall()
            by_ref = {(row[0], row[1]): row for row in rows}
            return [hit(Found(row_item(by_ref[r]), by_ref[r][3]), score) for r, score in best]

        return await self._run("search items", work)

    async def _keyword(self, prefix: Namespace, words: list[str], now: float) -> list[Found]:
        # Each word as a quoted lexeme, so no word is read as tsquery syntax; cast, not
        # to_tsquery, so that PostgreSQL's parser does not split or fold it again.
        query = " | ".join(
            "'" + word.replace("'", "''").replace("\\", "\\\\") + "'" for word in words
        )

        def work(conn: psycopg.Connection[Any]) -> list[Found]:
            rows = conn.execute(
                f"SELECT {COLUMNS}, ts_rank(words, q) FROM memory_items, "
                "CAST(%s AS tsquery) AS q "
                f"WHERE words @@ q AND {_UNDER} AND {_LIVE}",
                (query, join_namespace(prefix), now),
            ).fetchall()
            return [Found(row_item(row), row[3], None, float(row[8])) for row in rows]

        return await self._run("search items", work)


def _equal(where: Where) -> tuple[str, list[Any]]:
    """SQL for `where`'s fields (appended with AND) and its parameters.

    jsonb equality compares a JSON scalar with its type (`true` is not `1`) and
    numbers by value (`1` is `1.0`); a missing field is SQL NULL, never equal.
    """
    sql = " AND (convert_from(value, 'UTF8')::jsonb -> %s) = %s::jsonb" * len(where.equal)
    params: list[Any] = []
    for field, value in where.equal:
        params += [field, orjson.dumps(value).decode()]
    return sql, params


def _damaged(ref: tuple[str, str], why: str) -> MemoryDataError:
    return damaged(ref[0], ref[1], why)


def _bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)
