"""`SQLiteMemory`: a memory store in one SQLite file that several processes share.

Writes run in `BEGIN IMMEDIATE` transactions on a WAL-mode database, so
processes take turns writing while readers go on; keyword search uses an
FTS5 table kept beside the items (same rowids), and semantic search scores
every vector under the prefix with numpy (exact, no index).

Value filters on JSON scalars run in SQL (`json_extract`), so a listing reads
only the rows it returns. Vectors are not read per search: the store keeps
the matrix of a prefix in memory, stamped with `memory_changes`' counter,
which every write transaction raises (this process's or another's), and
loads it again only after a change.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
import orjson

from ..llm._embedder import Embedder
from ..rag._rows import Matrix
from ._base import KEEP_EFFECTS, Clock, Found, MemoryBase, Row, effect_result, hit, items_result
from ._errors import MemoryBackendError, MemoryDataError
from ._items import Item, MemoryHit, Namespace, decode_value, join_namespace, split_namespace
from ._pushdown import NOTHING, VectorCache, Where, load, top

__all__ = ("SQLiteMemory",)

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_items (
    ns TEXT NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL,
    text TEXT NOT NULL,
    vector BLOB,
    version INTEGER NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    expires REAL,
    UNIQUE (ns, key)
);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_words USING fts5(text, tokenize = 'unicode61');
CREATE TABLE IF NOT EXISTS memory_effects (
    effect TEXT PRIMARY KEY,
    result BLOB NOT NULL,
    at REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS memory_effects_at ON memory_effects (at);
CREATE TABLE IF NOT EXISTS memory_changes (
    id INTEGER PRIMARY KEY CHECK (id = 0),
    n INTEGER NOT NULL
);
INSERT OR IGNORE INTO memory_changes VALUES (0, 0);
"""
_COLUMNS = "ns, key, value, text, version, created, updated, expires"
_LIVE = "(expires IS NULL OR expires > ?)"
_BUSY = 30.0
"""Seconds a write waits for another process's transaction before failing."""


def _under(prefix: Namespace) -> tuple[str, list[Any]]:
    """The SQL condition (and its parameters) for namespaces under `prefix`.

    A stored namespace ends in a separator that no label holds, so the rows
    under a prefix are one range of strings: from the prefix to the prefix
    with its last separator raised by one.
    """
    if not prefix:
        return "1", []
    low = join_namespace(prefix)
    return "ns >= ? AND ns < ?", [low, low[:-1] + chr(ord(low[-1]) + 1)]


class SQLiteMemory(MemoryBase):
    """Items in one SQLite file; several processes may use the same file at once.

    ```python
    memory = SQLiteMemory("memory.db", embedder=embedder)
    await memory.put(("user", "42"), "diet", {"text": "vegetarian"})
    await memory.aclose()
    ```
    Every call runs in a worker thread on this object's connection. See
    `MemoryBase` for `embedder`, `index` and `clock`.

    Raises:
        FileNotFoundError: the folder for the file does not exist.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        embedder: Embedder | None = None,
        index: Sequence[str] | None = None,
        clock: Clock = time.time,
        keep_effects: float | None = KEEP_EFFECTS,
    ) -> None:
        super().__init__(embedder=embedder, index=index, clock=clock, keep_effects=keep_effects)
        self.path = Path(path)
        if not self.path.parent.is_dir():
            raise FileNotFoundError(f"the folder for the memory file {self.path} does not exist")
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._cache = VectorCache()

    def __repr__(self) -> str:
        return f"SQLiteMemory({str(self.path)!r})"

    async def __aenter__(self) -> SQLiteMemory:
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
    async def _run(self, action: str, work: Callable[[sqlite3.Connection], T]) -> T:
        return await anyio.to_thread.run_sync(self._locked, action, work)

    def _locked(self, action: str, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            if self._closed:
                raise MemoryBackendError(repr(self), action, RuntimeError("the store is closed"))
            try:
                if self._conn is None:
                    self._conn = self._connect()
                return work(self._conn)
            except sqlite3.Error as exc:
                raise MemoryBackendError(repr(self), action, exc) from exc

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=_BUSY
        )
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            with _write(conn):
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
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

        def work(conn: sqlite3.Connection) -> list[Item]:
            with _write(conn):
                done = _applied(conn, effect)
                if done is not None:
                    result: list[Item] = effect_result(done, effect or "")
                    return result
                items = [_put_row(conn, ns, stored, row, now, expires) for row in rows]
                _changed(conn)
                if effect is not None:
                    conn.execute(
                        "INSERT INTO memory_effects VALUES (?, ?, ?)",
                        (effect, items_result(items), now),
                    )
                return items

        return await self._run("store items", work)

    async def _prune(self, before: float) -> int:
        def work(conn: sqlite3.Connection) -> int:
            with _write(conn):
                return conn.execute("DELETE FROM memory_effects WHERE at < ?", (before,)).rowcount

        return await self._run("prune effects", work)

    async def _get(self, ns: Namespace, key: str, now: float) -> Item | None:
        def work(conn: sqlite3.Connection) -> Item | None:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM memory_items WHERE ns = ? AND key = ? AND {_LIVE}",
                (join_namespace(ns), key, now),
            ).fetchone()
            return None if row is None else _item(row)

        return await self._run("read an item", work)

    async def _delete(self, ns: Namespace, key: str, now: float, effect: str | None) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            with _write(conn):
                done = _applied(conn, effect)
                if done is not None:
                    return bool(effect_result(done, effect or ""))
                found = conn.execute(
                    "SELECT rowid, expires FROM memory_items WHERE ns = ? AND key = ?",
                    (join_namespace(ns), key),
                ).fetchone()
                there = found is not None and (found[1] is None or found[1] > now)
                if found is not None:
                    conn.execute("DELETE FROM memory_items WHERE rowid = ?", (found[0],))
                    conn.execute("DELETE FROM memory_words WHERE rowid = ?", (found[0],))
                    _changed(conn)
                if effect is not None:
                    conn.execute(
                        "INSERT INTO memory_effects VALUES (?, ?, ?)",
                        (effect, b"true" if there else b"false", now),
                    )
                return there

        return await self._run("delete an item", work)

    async def _scan(
        self,
        prefix: Namespace,
        now: float,
        *,
        vectors: bool,
        where: Where = NOTHING,
        newest: int | None = None,
    ) -> list[Found]:
        under, params = _under(prefix)
        equal, values = _equal(where)
        cond = f"{under} AND {_LIVE}{equal}"
        pushed = [*params, now, *values]
        select = f"SELECT {_COLUMNS}, {'vector' if vectors else 'NULL'} FROM memory_items"

        def work(conn: sqlite3.Connection) -> list[Found]:
            with _read(conn):
                try:
                    if newest is None:
                        rows = conn.execute(f"{select} WHERE {cond}", pushed).fetchall()
                    else:
                        rows = _newest(conn, select, cond, pushed, newest)
                except sqlite3.OperationalError as exc:
                    if not _bad_json(exc):
                        raise
                    # A damaged value: read every row, so the damage is named as such.
                    rows = conn.execute(
                        f"{select} WHERE {under} AND {_LIVE}", [*params, now]
                    ).fetchall()
            return [Found(_item(row), row[3], row[8]) for row in rows]

        return await self._run("search items", work)

    async def _semantic(
        self, prefix: Namespace, now: float, query: Matrix, where: Where, limit: int
    ) -> list[MemoryHit] | None:
        under, params = _under(prefix)

        def work(conn: sqlite3.Connection) -> list[MemoryHit] | None:
            with _read(conn):  # one snapshot: the counter and the rows agree
                (version,) = conn.execute("SELECT n FROM memory_changes").fetchone()
                loaded = self._cache.get(prefix, version)
                if loaded is None:
                    rows = conn.execute(
                        "SELECT rowid, expires, vector FROM memory_items "
                        f"WHERE {under} AND vector IS NOT NULL",
                        params,
                    ).fetchall()
                    loaded = load(version, rows, lambda ref, why: _damaged(conn, ref, why))
                    self._cache.put(prefix, loaded)
                if loaded.refs and loaded.matrix.shape[1] != query.shape[0]:
                    raise _damaged(
                        conn,
                        loaded.refs[0],
                        f"its vector has {loaded.matrix.shape[1]} dimensions, the query "
                        f"{query.shape[0]}: search with the embedder the items were stored with",
                    )
                allowed = None
                if where.fields:
                    equal, values = _equal(where)
                    try:
                        found = conn.execute(
                            f"SELECT rowid FROM memory_items WHERE {under}{equal}",
                            [*params, *values],
                        ).fetchall()
                    except sqlite3.OperationalError as exc:
                        if not _bad_json(exc):
                            raise
                        return None  # a damaged value: the plain search names it
                    allowed = {rowid for (rowid,) in found}
                best = top(loaded, query, now, allowed, limit)
                if not best:
                    return []
                marks = ", ".join("?" * len(best))
                rows = conn.execute(
                    f"SELECT {_COLUMNS}, rowid FROM memory_items WHERE rowid IN ({marks})",
                    [rowid for rowid, _ in best],
                ).fetchall()
            by_id = {row[8]: row for row in rows}
            return [hit(Found(_item(by_id[r]), by_id[r][3]), score) for r, score in best]

        return await self._run("search items", work)

    async def _keyword(self, prefix: Namespace, words: list[str], now: float) -> list[Found]:
        where, params = _under(prefix)
        match = " OR ".join('"' + word.replace('"', '""') + '"' for word in words)
        columns = ", ".join(f"i.{c.strip()}" for c in _COLUMNS.split(","))

        def work(conn: sqlite3.Connection) -> list[Found]:
            rows = conn.execute(
                f"SELECT {columns}, bm25(memory_words) FROM memory_words "
                "JOIN memory_items AS i ON i.rowid = memory_words.rowid "
                f"WHERE memory_words MATCH ? AND {where.replace('ns', 'i.ns')} "
                f"AND (i.expires IS NULL OR i.expires > ?)",
                (match, *params, now),
            ).fetchall()
            # bm25 is lower for better matches: negated, higher is better as everywhere else.
            return [Found(_item(row), row[3], None, -float(row[8])) for row in rows]

        return await self._run("search items", work)

    async def _namespaces(self, prefix: Namespace, now: float) -> set[Namespace]:
        where, params = _under(prefix)

        def work(conn: sqlite3.Connection) -> set[Namespace]:
            rows = conn.execute(
                f"SELECT DISTINCT ns FROM memory_items WHERE {where} AND {_LIVE}", (*params, now)
            ).fetchall()
            return {split_namespace(ns, "") for (ns,) in rows}

        return await self._run("list namespaces", work)


class _write:
    """`with _write(conn):` one IMMEDIATE transaction: committed, or rolled back on error."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, error: object, tb: object) -> None:
        self.conn.execute("COMMIT" if kind is None else "ROLLBACK")


class _read:
    """`with _read(conn):` one read transaction, so that every statement sees one snapshot."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN")

    def __exit__(self, kind: object, error: object, tb: object) -> None:
        self.conn.execute("COMMIT" if kind is None else "ROLLBACK")


def _newest(
    conn: sqlite3.Connection, select: str, cond: str, params: list[Any], count: int
) -> list[Any]:
    """The `count` rows matching `cond` that were updated last (ties by namespace, then key),
    reading only the timestamps and names of the others."""
    found = conn.execute(
        f"SELECT rowid, updated, ns, key FROM memory_items WHERE {cond}", params
    ).fetchall()
    if len(found) > count:
        try:
            found.sort(key=lambda r: (-r[1], r[2].split("\x1f"), r[3]))
        except (TypeError, AttributeError):  # a damaged row: read them all, to name it
            return conn.execute(f"{select} WHERE {cond}", params).fetchall()
    ids = orjson.dumps([r[0] for r in found[:count]]).decode()
    return conn.execute(
        f"{select} WHERE rowid IN (SELECT value FROM json_each(?))", (ids,)
    ).fetchall()


def _bad_json(error: sqlite3.OperationalError) -> bool:
    return "JSON" in str(error)


def _changed(conn: sqlite3.Connection) -> None:
    """Count a write, so every process's cached vectors know they are out of date."""
    conn.execute("UPDATE memory_changes SET n = n + 1")


def _equal(where: Where) -> tuple[str, list[Any]]:
    """SQL for `where`'s fields (appended with AND) and its parameters.

    A JSON scalar compares with its type: `true` is not `1`, `"1"` is not `1`,
    and a field holding null is not a missing one.
    """
    sql: list[str] = []
    params: list[Any] = []
    for field, value in where.equal:
        # CAST: SQLite 3.45 and later read a BLOB as binary JSON; the values are text.
        # The path is a parameter, never SQL text: a field name may hold anything.
        path = '$."' + field + '"'
        kind = "json_type(CAST(value AS TEXT), ?)"
        if value is None or isinstance(value, bool):
            sql.append(f"{kind} = ?")
            params += [path, "null" if value is None else "true" if value else "false"]
            continue
        types = "= 'text'" if isinstance(value, str) else "IN ('integer', 'real')"
        sql.append(f"{kind} {types} AND json_extract(CAST(value AS TEXT), ?) = ?")
        params += [path, path, value]
    return "".join(f" AND {part}" for part in sql), params


def _damaged(conn: sqlite3.Connection, rowid: int, why: str) -> MemoryDataError:
    found = conn.execute("SELECT ns, key FROM memory_items WHERE rowid = ?", (rowid,)).fetchone()
    ns, key = found if found is not None else ("?", "?")
    return MemoryDataError(tuple(str(ns).rstrip("\x1f").split("\x1f")), str(key), why)


def _applied(conn: sqlite3.Connection, effect: str | None) -> bytes | None:
    if effect is None:
        return None
    found = conn.execute("SELECT result FROM memory_effects WHERE effect = ?", (effect,))
    row = found.fetchone()
    return None if row is None else bytes(row[0])


def _put_row(
    conn: sqlite3.Connection,
    ns: Namespace,
    stored: str,
    row: Row,
    now: float,
    expires: float | None,
) -> Item:
    old = conn.execute(
        "SELECT rowid, version, created, expires FROM memory_items WHERE ns = ? AND key = ?",
        (stored, row.key),
    ).fetchone()
    if old is not None and (old[3] is None or old[3] > now):
        version, created = old[1] + 1, old[2]
    else:
        version, created = 1, now
    values = (row.raw, row.text, row.vector, version, created, now, expires)
    if old is None:
        rowid = conn.execute(
            "INSERT INTO memory_items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (stored, row.key, *values),
        ).lastrowid
    else:
        rowid = old[0]
        conn.execute(
            "UPDATE memory_items SET value = ?, text = ?, vector = ?, version = ?, created = ?, "
            "updated = ?, expires = ? WHERE rowid = ?",
            (*values, rowid),
        )
        conn.execute("DELETE FROM memory_words WHERE rowid = ?", (rowid,))
    if row.text:
        conn.execute("INSERT INTO memory_words (rowid, text) VALUES (?, ?)", (rowid, row.text))
    return Item(ns, row.key, row.value, version, created, now, expires)


def _item(row: Sequence[Any]) -> Item:
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
