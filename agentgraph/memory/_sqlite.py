"""`SQLiteMemory`: a memory store in one SQLite file that several processes share.

Writes run in `BEGIN IMMEDIATE` transactions on a WAL-mode database, so
processes take turns writing while readers go on; keyword search uses an
FTS5 table kept beside the items (same rowids), holding each item's words as
`terms` folds them (so it matches what the other stores match), and semantic search scores
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
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from ..llm._embedder import Embedder
from ..rag._rows import Matrix
from ._base import KEEP_EFFECTS, Clock, Found, Row, hit
from ._errors import MemoryDataError
from ._items import Item, MemoryHit, Namespace, join_namespace, terms
from ._pushdown import NOTHING, Where, top
from ._sql import COLUMNS, SQLMemory, damaged, row_item

__all__ = ("SQLiteMemory",)

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


class SQLiteMemory(SQLMemory[sqlite3.Connection]):
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

    def __repr__(self) -> str:
        return f"SQLiteMemory({str(self.path)!r})"

    # -- the driver -----------------------------------------------------------------------
    MARK = "?"

    def _driver_error(self) -> type[Exception]:
        return sqlite3.Error

    def _writing(self, conn: sqlite3.Connection) -> _transaction:
        return _write(conn)

    def _under(self, prefix: Namespace) -> tuple[str, list[Any]]:
        return _under(prefix)

    def _put_row(
        self,
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
                "UPDATE memory_items SET value = ?, text = ?, vector = ?, version = ?, "
                "created = ?, updated = ?, expires = ? WHERE rowid = ?",
                (*values, rowid),
            )
            conn.execute("DELETE FROM memory_words WHERE rowid = ?", (rowid,))
        words = " ".join(terms(row.text))  # FTS5 then finds the words every store finds
        if words:
            conn.execute("INSERT INTO memory_words (rowid, text) VALUES (?, ?)", (rowid, words))
        return Item(ns, row.key, row.value, version, created, now, expires)

    def _remove(
        self, conn: sqlite3.Connection, stored: str, key: str
    ) -> tuple[float | None] | None:
        found = conn.execute(
            "SELECT rowid, expires FROM memory_items WHERE ns = ? AND key = ?", (stored, key)
        ).fetchone()
        if found is None:
            return None
        conn.execute("DELETE FROM memory_items WHERE rowid = ?", (found[0],))
        conn.execute("DELETE FROM memory_words WHERE rowid = ?", (found[0],))
        return (found[1],)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=_BUSY
        )
        try:
            # Switching a new file to WAL while another process does the same answers
            # "locked" at once, without the busy timeout: try again, as the checkpoint
            # store does.
            for attempt in range(50):
                try:
                    conn.execute("PRAGMA journal_mode=WAL")
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or attempt == 49:
                        raise
                    time.sleep(0.01 * (attempt + 1))
            conn.execute("PRAGMA synchronous=NORMAL")
            with _write(conn):
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
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
        under, params = _under(prefix)
        equal, values = _equal(where)
        cond = f"{under} AND {_LIVE}{equal}"
        pushed = [*params, now, *values]
        select = f"SELECT {COLUMNS}, {'vector' if vectors else 'NULL'} FROM memory_items"

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
            return [Found(row_item(row), row[3], row[8]) for row in rows]

        return await self._run("search items", work)

    async def _semantic(
        self, prefix: Namespace, now: float, query: Matrix, where: Where, limit: int
    ) -> list[MemoryHit] | None:
        under, params = _under(prefix)

        def work(conn: sqlite3.Connection) -> list[MemoryHit] | None:
            with _read(conn):  # one snapshot: the counter and the rows agree
                (version,) = conn.execute("SELECT n FROM memory_changes").fetchone()
                loaded = self._cache.vectors(
                    prefix,
                    version,
                    lambda: conn.execute(
                        "SELECT rowid, expires, vector FROM memory_items "
                        f"WHERE {under} AND vector IS NOT NULL",
                        params,
                    ).fetchall(),
                    lambda ref, why: _damaged(conn, ref, why),
                    query,
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
                    f"SELECT {COLUMNS}, rowid FROM memory_items WHERE rowid IN ({marks})",
                    [rowid for rowid, _ in best],
                ).fetchall()
            by_id = {row[8]: row for row in rows}
            return [hit(Found(row_item(by_id[r]), by_id[r][3]), score) for r, score in best]

        return await self._run("search items", work)

    async def _keyword(self, prefix: Namespace, words: list[str], now: float) -> list[Found]:
        where, params = _under(prefix)
        match = " OR ".join('"' + word.replace('"', '""') + '"' for word in words)
        columns = ", ".join(f"i.{c.strip()}" for c in COLUMNS.split(","))

        def work(conn: sqlite3.Connection) -> list[Found]:
            rows = conn.execute(
                f"SELECT {columns}, bm25(memory_words) FROM memory_words "
                "JOIN memory_items AS i ON i.rowid = memory_words.rowid "
                f"WHERE memory_words MATCH ? AND {where.replace('ns', 'i.ns')} "
                f"AND (i.expires IS NULL OR i.expires > ?)",
                (match, *params, now),
            ).fetchall()
            # bm25 is lower for better matches: negated, higher is better as everywhere else.
            return [Found(row_item(row), row[3], None, -float(row[8])) for row in rows]

        return await self._run("search items", work)


class _transaction:
    """`with _transaction(conn, begin):` one transaction: committed, or rolled back on error."""

    def __init__(self, conn: sqlite3.Connection, begin: str) -> None:
        self.conn = conn
        self.begin = begin

    def __enter__(self) -> None:
        self.conn.execute(self.begin)

    def __exit__(self, kind: object, error: object, tb: object) -> None:
        self.conn.execute("COMMIT" if kind is None else "ROLLBACK")


def _write(conn: sqlite3.Connection) -> _transaction:
    """One IMMEDIATE transaction: writers take turns from its start, not at commit."""
    return _transaction(conn, "BEGIN IMMEDIATE")


def _read(conn: sqlite3.Connection) -> _transaction:
    """One read transaction, so that every statement sees one snapshot."""
    return _transaction(conn, "BEGIN")


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
    return damaged(str(ns), str(key), why)
