"""`SQLMemory`: what the SQL stores share, over a sync driver's one connection.

`SQLiteMemory` and `PostgresMemory` both hold one connection per store
object and drive it from worker threads under a lock, so they work on
asyncio and trio alike; a driver's error becomes `MemoryBackendError`. Both
keep the same tables (`memory_items`, `memory_effects`, `memory_changes`)
and apply an effect id the same way: the write, the count of changes and the
record of the effect's outcome go in one transaction, and a write whose
effect id is recorded returns that outcome instead. Here that happens once;
a backend brings its connection, its parameter mark, how it stores a row and
how it deletes one, and its searches.
"""

from __future__ import annotations

import contextlib
import threading
from abc import abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

import anyio.to_thread

from ._base import MemoryBase, Row, effect_result, items_result
from ._errors import MemoryBackendError, MemoryDataError
from ._items import Item, Namespace, decode_value, join_namespace, split_namespace
from ._pushdown import VectorCache

__all__ = ("COLUMNS", "SQLMemory", "damaged", "row_item")

T = TypeVar("T")

COLUMNS = "ns, key, value, text, version, created, updated, expires"
"""The columns `row_item` reads, in its order."""


class _Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> Any: ...


class Connection(Protocol):
    """What the shared code asks of a driver's connection (sqlite3's and psycopg's both)."""

    def execute(self, query: str, params: Sequence[Any] = ..., /) -> _Cursor: ...

    def close(self) -> None: ...


C = TypeVar("C", bound=Connection)


class SQLMemory(MemoryBase, Generic[C]):
    """A store on one connection of a SQL driver; subclasses fill in the driver's hooks."""

    MARK: ClassVar[str]
    """The driver's parameter placeholder (`?` or `%s`)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._lock = threading.Lock()
        self._conn: C | None = None
        self._closed = False
        self._cache = VectorCache()

    async def __aenter__(self) -> Self:
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
    async def _run(self, action: str, work: Callable[[C], T]) -> T:
        return await anyio.to_thread.run_sync(self._locked, action, work)

    def _locked(self, action: str, work: Callable[[C], T]) -> T:
        with self._lock:
            if self._closed:
                raise MemoryBackendError(repr(self), action, RuntimeError("the store is closed"))
            try:
                if self._conn is None:
                    self._conn = self._connect()
                return self._call(self._conn, work)
            except self._driver_error() as exc:
                if self._conn is not None and self._broken(self._conn):
                    self._conn = None  # the next call connects again
                raise MemoryBackendError(repr(self), action, exc) from exc

    # -- the driver's hooks -------------------------------------------------------------
    @abstractmethod
    def _connect(self) -> C:
        """A new connection, with the tables in place."""

    @abstractmethod
    def _driver_error(self) -> type[Exception]:
        """The base class of the driver's errors."""

    def _call(self, conn: C, work: Callable[[C], T]) -> T:
        """Run `work` on `conn` (in a transaction, where the driver wants one per call)."""
        return work(conn)

    def _broken(self, conn: C) -> bool:
        """Whether `conn` is lost after an error, so that the next call connects again."""
        return False

    def _writing(self, conn: C) -> AbstractContextManager[None]:
        """The transaction a write runs in, where `_call` does not open one."""
        return contextlib.nullcontext()

    @abstractmethod
    def _put_row(
        self, conn: C, ns: Namespace, stored: str, row: Row, now: float, expires: float | None
    ) -> Item:
        """Store `row` under the joined namespace `stored`; the item as stored."""

    @abstractmethod
    def _remove(self, conn: C, stored: str, key: str) -> tuple[float | None] | None:
        """Delete the row of `key`; its expiry when there was one, else None."""

    # -- the hooks of MemoryBase ----------------------------------------------------------
    async def _write(
        self,
        ns: Namespace,
        rows: list[Row],
        now: float,
        expires: float | None,
        effect: str | None,
    ) -> list[Item]:
        stored = join_namespace(ns)

        def work(conn: C) -> list[Item]:
            with self._writing(conn):
                done = self._applied(conn, effect)
                if done is not None:
                    result: list[Item] = effect_result(done, effect or "")
                    return result
                items = [self._put_row(conn, ns, stored, row, now, expires) for row in rows]
                _changed(conn)
                self._record(conn, effect, items_result(items), now)
                return items

        return await self._run("store items", work)

    async def _delete(self, ns: Namespace, key: str, now: float, effect: str | None) -> bool:
        def work(conn: C) -> bool:
            with self._writing(conn):
                done = self._applied(conn, effect)
                if done is not None:
                    return bool(effect_result(done, effect or ""))
                removed = self._remove(conn, join_namespace(ns), key)
                there = removed is not None and (removed[0] is None or removed[0] > now)
                if removed is not None:
                    _changed(conn)
                self._record(conn, effect, b"true" if there else b"false", now)
                return there

        return await self._run("delete an item", work)

    async def _prune(self, before: float) -> int:
        def work(conn: C) -> int:
            with self._writing(conn):
                sql = f"DELETE FROM memory_effects WHERE at < {self.MARK}"
                return conn.execute(sql, (before,)).rowcount

        return await self._run("prune effects", work)

    async def _get(self, ns: Namespace, key: str, now: float) -> Item | None:
        m = self.MARK
        sql = f"SELECT {COLUMNS} FROM memory_items WHERE ns = {m} AND key = {m} AND {self._live}"

        def work(conn: C) -> Item | None:
            row = conn.execute(sql, (join_namespace(ns), key, now)).fetchone()
            return None if row is None else row_item(row)

        return await self._run("read an item", work)

    async def _namespaces(self, prefix: Namespace, now: float) -> set[Namespace]:
        under, params = self._under(prefix)

        def work(conn: C) -> set[Namespace]:
            rows = conn.execute(
                f"SELECT DISTINCT ns FROM memory_items WHERE {under} AND {self._live}",
                (*params, now),
            ).fetchall()
            return {split_namespace(ns, "") for (ns,) in rows}

        return await self._run("list namespaces", work)

    # -- SQL both dialects read alike ---------------------------------------------------
    @property
    def _live(self) -> str:
        """The condition that a row has not expired at the time given as its parameter."""
        return f"(expires IS NULL OR expires > {self.MARK})"

    @abstractmethod
    def _under(self, prefix: Namespace) -> tuple[str, list[Any]]:
        """The SQL condition (and its parameters) for namespaces under `prefix`."""

    def _applied(self, conn: C, effect: str | None) -> bytes | None:
        """The outcome recorded for `effect`, when it was applied already."""
        if effect is None:
            return None
        sql = f"SELECT result FROM memory_effects WHERE effect = {self.MARK}"
        row = conn.execute(sql, (effect,)).fetchone()
        return None if row is None else bytes(row[0])

    def _record(self, conn: C, effect: str | None, result: bytes, now: float) -> None:
        # Two PostgreSQL writers of one effect may both find it unapplied: the second's
        # insert fails on the key, which rolls back its write.
        if effect is not None:
            m = self.MARK
            conn.execute(
                f"INSERT INTO memory_effects VALUES ({m}, {m}, {m})", (effect, result, now)
            )


def _changed(conn: Connection) -> None:
    """Count a write, so every process's cached vectors know they are out of date."""
    conn.execute("UPDATE memory_changes SET n = n + 1")


def damaged(stored: str, key: str, why: str) -> MemoryDataError:
    """The error for a damaged row of the joined namespace `stored`."""
    return MemoryDataError(tuple(stored.rstrip("\x1f").split("\x1f")), key, why)


def row_item(row: Sequence[Any]) -> Item:
    """The item of a row of `COLUMNS`, or the error naming what in it is damaged."""
    ns_text, key = row[0], row[1]
    if not isinstance(key, str) or not isinstance(ns_text, str):
        raise MemoryDataError(str(ns_text), str(key), "its namespace or key is not text")
    ns = split_namespace(ns_text, key)
    value = decode_value(row[2], ns, key)
    version, created, updated, expires = row[4], row[5], row[6], row[7]
    if not isinstance(version, int) or not isinstance(created, float | int):
        raise MemoryDataError(ns, key, "its version or timestamps are not numbers")
    if not isinstance(updated, float | int) or not (
        expires is None or isinstance(expires, float | int)
    ):
        raise MemoryDataError(ns, key, "its timestamps are not numbers")
    return Item(ns, key, value, version, float(created), float(updated), expires)
