"""`SQLiteStore`: checkpoints in one SQLite file, written by a background thread."""

from __future__ import annotations

import contextlib
import os
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any, Literal, TypeVar

import anyio.to_thread
import orjson

from .._context import AgentContext
from .._errors import CheckpointError
from ._records import Effect, Record, RunLog, RunRecord, StepRecord
from ._store import StoreBase, fork

__all__ = ("SQLiteStore",)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    graph TEXT NOT NULL,
    structure BLOB NOT NULL,
    context BLOB NOT NULL,
    created REAL NOT NULL,
    parent TEXT,
    parent_step INTEGER
);
CREATE TABLE IF NOT EXISTS steps (
    run INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    step INTEGER NOT NULL,
    path TEXT NOT NULL,
    node TEXT NOT NULL,
    next TEXT NOT NULL,
    local INTEGER NOT NULL,
    steps INTEGER NOT NULL,
    context BLOB NOT NULL,
    at REAL NOT NULL,
    duration REAL NOT NULL,
    PRIMARY KEY (run, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS effects (
    run INTEGER NOT NULL,
    key TEXT NOT NULL,
    kind TEXT NOT NULL,
    value BLOB NOT NULL,
    UNIQUE (run, key, kind)
);
"""

_INSERT_RUN = (
    "INSERT INTO runs (run_id, graph, structure, context, created, parent, parent_step) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_STEP = "INSERT INTO steps VALUES "
_INSERT_EFFECT = "INSERT OR REPLACE INTO effects (run, key, kind, value) VALUES "
_GATHER = 0.005
"""Seconds the writer lets records gather before a commit, unless a flush is waiting."""
_ROWS = 500
"""Rows per INSERT statement: well under SQLite's limit of 32,766 parameters."""

_T = TypeVar("_T")
_Item = Sequence[Record] | threading.Event | None  # records, a flush barrier, or close


class SQLiteStore(StoreBase):
    """Checkpoints in an SQLite database (stdlib `sqlite3`, WAL mode), off the event loop.

    `write` only queues: one writer thread commits what has queued up, waiting
    up to 5 ms for more unless a flush is waiting, so several steps may share
    one transaction (each `write`'s records always commit together, so every
    step is atomic). A write the database refuses (a run id taken twice, a
    record for a run it does not hold) is undone alone and reported to the
    next `flush` of its run; only an error of the database itself (a full or
    unreadable disk) stops the store for good. A run flushes before an unsafe tool runs, when it is
    interrupted and when it ends; a crash loses at most the steps not yet
    committed, which a resume runs again.

    ```python
    async with SQLiteStore("runs.db") as store:
        out = await runner.run(graph, ctx, store=store)
    ```

    Args:
        path: the database file, created when missing. Not `":memory:"`:
            reads use connections of their own, which must see the same data.
        synchronous: SQLite's `synchronous` mode. `"NORMAL"` (the default)
            survives a crash of the process; `"FULL"` also survives a power
            loss, at the cost of an fsync per transaction.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, synchronous: Literal["NORMAL", "FULL"] = "NORMAL"
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous is 'NORMAL' or 'FULL', not {synchronous!r}")
        self.path = os.fspath(path)
        if self.path in ("", ":memory:"):
            raise ValueError(
                f"SQLiteStore needs a database file, not {self.path!r}: every connection "
                "to an in-memory database gets a new, empty one (use MemoryStore instead)"
            )
        self.synchronous = synchronous
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None  # the database failed: no more writes
        self._rejected: dict[str, Exception] = {}  # a write refused, by run, until flushed
        self._closed = False
        self._lock = threading.Lock()
        self._urgent = threading.Event()

    # -- the protocol -------------------------------------------------------------------
    def write(self, records: Sequence[Record]) -> None:
        """Queue `records` for the writer thread; they commit together."""
        if self._error is not None or self._closed:
            self._raise()
        if self._thread is None:
            self._start()
        self._queue.put(records)

    async def flush(self, run_id: str | None = None) -> None:
        """Wait until every queued record is committed; raise if the writer failed.

        Also raises for a write of `run_id` (of any run when None) that the
        database refused since the last such flush.
        """
        await self._barrier()
        with self._lock:
            if run_id is None:
                refused = next(iter(self._rejected.items()), None)
                self._rejected.clear()
            else:
                error = self._rejected.pop(run_id, None)
                refused = None if error is None else (run_id, error)
        if refused is not None:
            where = f"SQLite store {self.path!r} refused records of run {refused[0]!r}"
            raise CheckpointError(f"{where}: {refused[1]}") from refused[1]

    async def load(self, run_id: str) -> RunLog | None:
        """Every record of `run_id` (after committing what is queued), or None."""
        await self._barrier()
        return await anyio.to_thread.run_sync(self._reading, self._read, run_id)

    async def run_ids(self) -> tuple[str, ...]:
        """Every run in the store, oldest first."""
        await self._barrier()
        return await anyio.to_thread.run_sync(self._reading, self._read_ids)

    async def fork(
        self, run_id: str, step: int, *, context: AgentContext[Any] | None = None
    ) -> str:
        """Start a new run from `step` of `run_id`; see `agentgraph.checkpoint.fork`."""
        return await fork(self, run_id, step, context=context)

    def close(self) -> None:
        """Commit what is queued and stop the writer (blocks; `aclose` from async code)."""
        with self._lock:
            thread, self._closed = self._thread, True
        if thread is not None:
            self._queue.put(None)
            self._urgent.set()
            thread.join()

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self.close)

    async def __aenter__(self) -> SQLiteStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- the writer thread --------------------------------------------------------------
    async def _barrier(self) -> None:
        """Wait until every queued record is committed; raise if the database failed."""
        if self._closed:
            self._raise()
        if self._thread is None:
            self._start()
        done = threading.Event()
        self._queue.put(done)
        self._urgent.set()
        await anyio.to_thread.run_sync(done.wait, abandon_on_cancel=True)
        if self._error is not None:
            self._raise()

    def _refuse(self, refused: Sequence[tuple[Sequence[Record], Exception]]) -> None:
        with self._lock:
            for records, error in refused:
                for rid in {r.run_id for r in records}:
                    self._rejected.setdefault(rid, error)

    def _raise(self) -> None:
        if self._error is not None:
            raise CheckpointError(
                f"SQLite store {self.path!r} stopped storing records: "
                f"{type(self._error).__name__}: {self._error}"
            ) from self._error
        raise CheckpointError(f"SQLite store {self.path!r} is closed")

    def _start(self) -> None:
        with self._lock:
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._work, name=f"agentgraph-sqlite:{self.path}", daemon=True
                )
                self._thread.start()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        conn.executescript(_SCHEMA)
        return conn

    def _work(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            conn = self._connect()
        except Exception as exc:  # reported by the next write or flush
            self._error = exc
        ids: dict[str, int] = {}
        while True:
            batch = [self._queue.get()]
            if isinstance(batch[0], Sequence):
                # Let steps gather for a moment (a flush cuts it short): fewer, larger
                # transactions, and fewer hand-overs of the GIL to and from this thread.
                self._urgent.wait(_GATHER)
            self._urgent.clear()
            while True:  # group commit: take everything that queued up meanwhile
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            writes = [item for item in batch if isinstance(item, Sequence) and item]
            if writes and conn is not None and self._error is None:
                try:
                    self._refuse(_commit(conn, writes, ids))
                except Exception as exc:
                    self._error = exc
            for item in batch:
                if isinstance(item, threading.Event):
                    item.set()
            if None in batch:
                if conn is not None:
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                    conn.close()
                return

    # -- reading ------------------------------------------------------------------------
    def _reading(self, read: Callable[..., _T], *args: Any) -> _T:
        try:
            return read(*args)
        except sqlite3.Error as exc:
            failed = f"{type(exc).__name__}: {exc}"
            raise CheckpointError(f"SQLite store {self.path!r} cannot be read: {failed}") from exc

    def _read(self, run_id: str) -> RunLog | None:
        conn = sqlite3.connect(self.path)
        try:
            row = conn.execute(
                "SELECT id, graph, structure, context, created, parent, parent_step "
                "FROM runs WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            if row is None:
                return None
            rid, *fields = row
            steps = conn.execute(
                "SELECT seq, step, path, node, next, local, steps, context, at, duration "
                "FROM steps WHERE run = ? ORDER BY seq",
                (rid,),
            ).fetchall()
            effects = conn.execute(
                "SELECT key, kind, value FROM effects WHERE run = ? ORDER BY rowid", (rid,)
            ).fetchall()
        finally:
            conn.close()
        return RunLog(
            RunRecord(run_id, *fields),
            tuple(
                StepRecord(run_id, seq, step, tuple(orjson.loads(path)), *rest)
                for seq, step, path, *rest in steps
            ),
            tuple(Effect(run_id, *e) for e in effects),
        )

    def _read_ids(self) -> tuple[str, ...]:
        conn = sqlite3.connect(self.path)
        try:
            return tuple(r[0] for r in conn.execute("SELECT run_id FROM runs ORDER BY id"))
        finally:
            conn.close()


_REFUSED = (sqlite3.IntegrityError, CheckpointError)  # one write's records are refused


def _commit(
    conn: sqlite3.Connection, writes: Sequence[Sequence[Record]], ids: dict[str, int]
) -> list[tuple[Sequence[Record], Exception]]:
    """Commit `writes` in one transaction; return the writes refused, each with its error.

    All writes go in together first (few statements); only when the database
    refuses one are they inserted again one by one, each in a savepoint, so
    that a refused write takes no other write down with it.
    """
    try:
        with _transaction(conn, ids):
            _insert_records(conn, [r for records in writes for r in records], ids)
        return []
    except _REFUSED:
        pass
    refused: list[tuple[Sequence[Record], Exception]] = []
    with _transaction(conn, ids):
        for records in writes:
            conn.execute("SAVEPOINT write")
            known = dict(ids)
            try:
                _insert_records(conn, records, ids)
            except _REFUSED as error:
                conn.execute("ROLLBACK TO write")
                ids.clear()
                ids.update(known)
                refused.append((records, error))
            conn.execute("RELEASE write")
    return refused


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection, ids: dict[str, int]) -> Iterator[None]:
    """BEGIN ... COMMIT, or ROLLBACK and forget the run ids cached meanwhile."""
    known = dict(ids)
    conn.execute("BEGIN")
    try:
        yield
        conn.execute("COMMIT")
    except Exception:
        conn.execute("ROLLBACK")
        ids.clear()
        ids.update(known)
        raise


def _insert_records(
    conn: sqlite3.Connection, records: Sequence[Record], ids: dict[str, int]
) -> None:
    steps: list[tuple[Any, ...]] = []
    effects: list[tuple[Any, ...]] = []
    for r in records:
        if isinstance(r, RunRecord):
            started = (r.run_id, r.graph, r.structure, r.context, r.created, r.parent)
            try:
                cursor = conn.execute(_INSERT_RUN, (*started, r.parent_step))
            except sqlite3.IntegrityError as error:
                raise CheckpointError(f"run {r.run_id!r} is already in the store") from error
            assert cursor.lastrowid is not None
            ids[r.run_id] = cursor.lastrowid
        elif isinstance(r, StepRecord):
            run, path = _run(conn, ids, r.run_id), orjson.dumps(r.path).decode()
            row = (r.seq, r.step, path, r.node, r.next, r.local, r.steps, r.context)
            steps.append((run, *row, r.at, r.duration))
        else:
            effects.append((_run(conn, ids, r.run_id), r.key, r.kind, r.value))
    _insert(conn, _INSERT_STEP, steps)
    _insert(conn, _INSERT_EFFECT, effects)


def _run(conn: sqlite3.Connection, ids: dict[str, int], run_id: str) -> int:
    found = ids.get(run_id)
    if found is None:
        row = conn.execute("SELECT id FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise CheckpointError(f"a record for run {run_id!r}, which never started")
        found = ids[run_id] = int(row[0])
    return found


def _insert(conn: sqlite3.Connection, head: str, rows: list[tuple[Any, ...]]) -> None:
    """Insert `rows` with few statements.

    sqlite3 lets go of the GIL around each statement it steps; with one row per
    statement, the event loop would hand the GIL back and forth once per step.
    """
    if not rows:
        return
    one = "(" + ", ".join("?" * len(rows[0])) + ")"
    for start in range(0, len(rows), _ROWS):
        chunk = rows[start : start + _ROWS]
        values = [value for row in chunk for value in row]
        conn.execute(head + ", ".join([one] * len(chunk)), values)
