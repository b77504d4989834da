"""`SQLiteStore`: checkpoints in one SQLite file, written by a background thread."""

from __future__ import annotations

import contextlib
import functools
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, TypeVar

import anyio.to_thread
import attrs
import orjson

from .._errors import CheckpointError
from ._lease import LEASE_TERM, Lease, LeaseLost, RunBusy, owner_is_gone
from ._records import Effect, Record, RunLog, RunRecord, StepRecord
from ._store import BlobWrite, LeaseRelease, WriterStore, blob_digest

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
CREATE TABLE IF NOT EXISTS leases (
    run_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    fence INTEGER NOT NULL,
    expires REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blobs (
    digest TEXT PRIMARY KEY,
    data BLOB NOT NULL
) WITHOUT ROWID;
"""

_INSERT_RUN = (
    "INSERT INTO runs (run_id, graph, structure, context, created, parent, parent_step) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_STEP = "INSERT INTO steps VALUES "
_INSERT_EFFECT = "INSERT OR REPLACE INTO effects (run, key, kind, value) VALUES "
_GATHER = 0.005
"""Seconds the writer lets records gather before a commit, unless a flush is waiting."""
_BUSY = 10.0
"""Seconds a connection waits for another's write lock before it gives up."""
_ROWS = 500
"""Rows per INSERT statement: well under SQLite's limit of 32,766 parameters."""

_T = TypeVar("_T")


_Op = LeaseRelease | BlobWrite
_Item = Sequence[Record] | _Op | threading.Event | None  # ..., a flush barrier, or close


class SQLiteStore(WriterStore):
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
        lease_term: seconds a run's lease lasts without renewal: how long a
            run whose runner died stays blocked before another may resume it.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        lease_term: float = LEASE_TERM,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous is 'NORMAL' or 'FULL', not {synchronous!r}")
        self.path = os.fspath(path)
        if self.path in ("", ":memory:"):
            raise ValueError(
                f"SQLiteStore needs a database file, not {self.path!r}: every connection "
                "to an in-memory database gets a new, empty one (use MemoryStore instead)"
            )
        if not lease_term > 0:
            raise ValueError(f"lease_term is a positive number of seconds, not {lease_term!r}")
        super().__init__(f"SQLite store {self.path!r}")
        self.synchronous = synchronous
        self.lease_term = lease_term
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._setup = threading.Lock()
        self._ready = False

    # -- the protocol -------------------------------------------------------------------
    def write(self, records: Sequence[Record]) -> None:
        """Queue `records` for the writer thread; they commit together."""
        if self._error is not None or self._closed:
            self._raise()
        if self._thread is None:
            self._start()
        self._queue.put(records)

    async def load(self, run_id: str) -> RunLog | None:
        """Every record of `run_id` (after committing what is queued), or None."""
        await self._barrier()
        return await anyio.to_thread.run_sync(self._reading, self._read, run_id)

    async def run_ids(self) -> tuple[str, ...]:
        """Every run in the store, oldest first."""
        await self._barrier()
        return await anyio.to_thread.run_sync(self._reading, self._read_ids)

    async def acquire(self, run_id: str, *, owner: str) -> Lease:
        """Take `run_id`'s lease for `owner`, or raise `RunBusy` naming the runner that has it."""
        if self._closed or self._error is not None:
            self._raise()
        if self._thread is not None:
            await self._barrier()  # a release queued here goes first
        take = functools.partial(self._reading, self._take, run_id, owner, what="lease runs")
        lease = await anyio.to_thread.run_sync(take)
        with self._lock:
            self._held[run_id] = lease
            self._fences[run_id] = lease.fence
        self._start()  # the writer renews it
        self._urgent.set()
        return lease

    def release(self, lease: Lease) -> None:
        """Give `lease` back once what is queued before it is committed."""
        with self._lock:
            if self._fences.get(lease.run_id) != lease.fence:
                return
            self._held.pop(lease.run_id, None)
            if self._thread is None or self._closed:
                self._fences.pop(lease.run_id, None)
                return
        self._queue.put(LeaseRelease(lease))

    def put_blob(self, data: bytes) -> str:
        """Queue `data` for storage under its digest and return the digest."""
        if self._error is not None or self._closed:
            self._raise()
        if self._thread is None:
            self._start()
        digest = blob_digest(data)
        self._queue.put(BlobWrite(digest, bytes(data)))
        return digest

    async def get_blob(self, digest: str) -> bytes:
        """The bytes stored under `digest`; `CheckpointError` when there are none."""
        await self._barrier()
        data = await anyio.to_thread.run_sync(self._reading, self._read_blob, digest)
        if data is None:
            raise CheckpointError(f"no blob {digest!r} in {self._label}")
        return data

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
                f"{self._label} stopped storing records: "
                f"{type(self._error).__name__}: {self._error}"
            ) from self._error
        raise CheckpointError(f"{self._label} is closed")

    def _start(self) -> None:
        with self._lock:
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._work, name=f"agentgraph-sqlite:{self.path}", daemon=True
                )
                self._thread.start()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=_BUSY
        )
        self._prepare(conn)
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        return conn

    def _work(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            conn = self._connect()
        except Exception as exc:  # reported by the next write or flush
            self._error = exc
        ids: dict[str, int] = {}
        while True:
            batch = self._gather()
            if conn is not None and self._error is None:
                try:
                    self._store(conn, batch, ids)
                except Exception as exc:
                    self._error = exc
            for item in batch:
                if isinstance(item, threading.Event):
                    item.set()
            if None in batch:
                if conn is not None:
                    self._shut(conn)
                return

    def _shut(self, conn: sqlite3.Connection) -> None:
        """Fold the WAL into the database and close; a failure is kept, never printed."""
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:
            self._error = self._error or exc
        finally:
            conn.close()

    def _gather(self) -> list[_Item]:
        """The next batch: what queued up, or nothing when a lease is due for renewal."""
        try:
            batch = [self._queue.get(timeout=self._renew_in())]
        except queue.Empty:
            return []
        if isinstance(batch[0], Sequence):
            # Let steps gather for a moment (a flush cuts it short): fewer, larger
            # transactions, and fewer hand-overs of the GIL to and from this thread.
            self._urgent.wait(_GATHER)
        self._urgent.clear()
        while True:  # group commit: take everything that queued up meanwhile
            try:
                batch.append(self._queue.get_nowait())
            except queue.Empty:
                return batch

    def _store(self, conn: sqlite3.Connection, batch: list[_Item], ids: dict[str, int]) -> None:
        """Commit a batch's records, blobs and releases; renew the leases that are due."""
        writes = [i for i in batch if isinstance(i, Sequence) and i and not isinstance(i, _Op)]
        blobs = [i for i in batch if isinstance(i, BlobWrite)]
        if writes or blobs:
            with self._lock:
                fences = dict(self._fences)
            self._refuse(_commit(conn, writes, blobs, ids, fences))
        for item in batch:
            if isinstance(item, LeaseRelease):
                lease = item.lease
                # The row stays, lapsed: fencing numbers only ever grow.
                conn.execute(
                    "UPDATE leases SET expires = 0 WHERE run_id = ? AND fence = ?",
                    (lease.run_id, lease.fence),
                )
                with self._lock:
                    if self._fences.get(lease.run_id) == lease.fence:
                        del self._fences[lease.run_id]
        self._renew(conn)

    def _renew_in(self) -> float | None:
        """Seconds until the next lease is due for renewal; None when none is held."""
        held = list(self._held.values())
        if not held:
            return None
        due = min(lease.expires for lease in held) - self.lease_term * 2 / 3
        return max(0.0, due - time.time())

    def _renew(self, conn: sqlite3.Connection) -> None:
        """Renew every lease held here that has used a third of its term."""
        now = time.time()
        for lease in list(self._held.values()):
            if lease.expires - now > self.lease_term * 2 / 3:
                continue
            expires = now + self.lease_term
            renewed = conn.execute(
                "UPDATE leases SET expires = ? WHERE run_id = ? AND fence = ?",
                (expires, lease.run_id, lease.fence),
            ).rowcount
            with self._lock:
                if self._held.get(lease.run_id) != lease:
                    continue  # released meanwhile
                if renewed:
                    self._held[lease.run_id] = attrs.evolve(lease, expires=expires)
                else:  # taken over: the run sees it at its next look, and stops
                    del self._held[lease.run_id]

    def _take(self, run_id: str, owner: str) -> Lease:
        """Take `run_id`'s lease in one immediate transaction (the lease check and the write)."""
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=_BUSY)
        try:
            self._prepare(conn)
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute(
                    "SELECT owner, fence, expires FROM leases WHERE run_id = ?", (run_id,)
                ).fetchone()
                now = time.time()
                # A lease of a process on this machine that died is free at once.
                if row is not None and row[2] > now and not owner_is_gone(row[0]):
                    raise RunBusy(run_id, row[0], row[2])
                lease = Lease(run_id, owner, (row[1] if row else 0) + 1, now + self.lease_term)
                conn.execute(
                    "INSERT INTO leases (run_id, owner, fence, expires) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner, "
                    "fence = excluded.fence, expires = excluded.expires",
                    (run_id, owner, lease.fence, lease.expires),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        finally:
            conn.close()
        return lease

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """WAL mode and the schema, once per store object.

        Switching a new file to WAL does not wait for a busy database, so
        connections that race to set it up try again for a moment.
        """
        with self._setup:
            if self._ready:
                return
            for attempt in range(50):
                try:
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.executescript(_SCHEMA)
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or attempt == 49:
                        raise
                    time.sleep(0.01 * (attempt + 1))
            self._ready = True

    def _read_blob(self, digest: str) -> bytes | None:
        conn = sqlite3.connect(self.path)
        try:
            row = conn.execute("SELECT data FROM blobs WHERE digest = ?", (digest,)).fetchone()
        finally:
            conn.close()
        return None if row is None else bytes(row[0])

    # -- reading ------------------------------------------------------------------------
    def _reading(self, read: Callable[..., _T], *args: Any, what: str = "be read") -> _T:
        try:
            return read(*args)
        except sqlite3.Error as exc:
            failed = f"{type(exc).__name__}: {exc}"
            raise CheckpointError(f"{self._label} cannot {what}: {failed}") from exc

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
    conn: sqlite3.Connection,
    writes: Sequence[Sequence[Record]],
    blobs: Sequence[BlobWrite],
    ids: dict[str, int],
    fences: dict[str, int],
) -> list[tuple[Sequence[Record], Exception]]:
    """Commit `writes` and `blobs` in one transaction; return the writes refused, with errors.

    A write of a run whose lease this store took is refused when the run's
    fencing number in the database is no longer the one taken (another
    runner has the run now). All other writes go in together first (few
    statements); only when the database refuses one are they inserted again
    one by one, each in a savepoint, so that a refused write takes no other
    write down with it.
    """
    refused: list[tuple[Sequence[Record], Exception]] = []
    with _transaction(conn, ids):
        lost = _lost_leases(conn, {r.run_id for w in writes for r in w} & fences.keys(), fences)
        if lost:
            kept = []
            for records in writes:
                gone = lost.intersection(r.run_id for r in records)
                if gone:
                    refused.append((records, LeaseLost(min(gone), "another runner took it over")))
                else:
                    kept.append(records)
            writes = kept
        _insert_blobs(conn, blobs)
        try:
            conn.execute("SAVEPOINT together")
            _insert_records(conn, [r for records in writes for r in records], ids)
            conn.execute("RELEASE together")
            return refused
        except _REFUSED:
            conn.execute("ROLLBACK TO together")
            conn.execute("RELEASE together")
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


def _lost_leases(conn: sqlite3.Connection, runs: set[str], fences: dict[str, int]) -> set[str]:
    """The runs among `runs` whose fencing number in the database is not the one taken."""
    lost = set()
    for run_id in runs:
        row = conn.execute("SELECT fence FROM leases WHERE run_id = ?", (run_id,)).fetchone()
        if row is None or row[0] != fences[run_id]:
            lost.add(run_id)
    return lost


def _insert_blobs(conn: sqlite3.Connection, blobs: Sequence[BlobWrite]) -> None:
    for blob in blobs:
        conn.execute(
            "INSERT OR IGNORE INTO blobs (digest, data) VALUES (?, ?)", (blob.digest, blob.data)
        )


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection, ids: dict[str, int]) -> Iterator[None]:
    """BEGIN ... COMMIT, or ROLLBACK and forget the run ids cached meanwhile."""
    known = dict(ids)
    conn.execute("BEGIN IMMEDIATE")  # the write lock first: its wait honours the busy timeout
    try:
        yield
        conn.execute("COMMIT")
    except Exception:
        # SQLite rolls back by itself after some errors (a full disk); the error that
        # got us here is the one to report, not a failed ROLLBACK.
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
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
