"""`SQLiteStore`: checkpoints in one SQLite file, written by a background thread."""

from __future__ import annotations

import functools
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

import anyio.to_thread
import attrs

from .._errors import CheckpointError
from ._lease import LEASE_TERM, Lease, RunBusy, checked_lease, owner_is_gone
from ._records import Record, RunLog, ThreadLog
from ._sqlite_sql import (
    commit,
    delete_thread,
    migrate,
    read_blob,
    read_ids,
    read_log,
    read_thread,
    read_thread_ids,
)
from ._store import BlobWrite, LeaseRelease, WriterStore, blob_digest

__all__ = ("SQLiteStore",)

_GATHER = 0.005
"""Seconds the writer lets records gather before a commit, unless a flush is waiting."""
_BUSY = 10.0
"""Seconds a connection waits for another's write lock before it gives up."""
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
        return await anyio.to_thread.run_sync(self._reading, self._with, read_log, run_id)

    async def run_ids(self) -> tuple[str, ...]:
        """Every run in the store, oldest first."""
        await self._barrier()
        return await anyio.to_thread.run_sync(self._reading, self._with, read_ids)

    async def load_thread(self, thread_id: str) -> ThreadLog | None:
        """The thread's head and turns (after committing what is queued), or None."""
        await self._barrier()
        return await anyio.to_thread.run_sync(self._reading, self._with, read_thread, thread_id)

    async def thread_ids(self) -> tuple[str, ...]:
        """Every thread in the store, oldest first."""
        await self._barrier()
        return await anyio.to_thread.run_sync(self._reading, self._with, read_thread_ids)

    async def delete_thread(self, thread_id: str) -> bool:
        """Delete the thread and its runs; False when there was no such thread."""
        await self._barrier()
        delete = functools.partial(self._with, delete_thread, thread_id)
        done: bool = await anyio.to_thread.run_sync(
            functools.partial(self._reading, delete, what="delete threads")
        )
        return done

    async def acquire(self, run_id: str, *, owner: str) -> Lease:
        """Take `run_id`'s lease for `owner`, or raise `RunBusy` naming the runner that has it."""
        if self._closed or self._error is not None:
            self._raise()
        if self._thread is not None:
            await self._barrier()  # a release queued here goes first
        take = functools.partial(self._reading, self._take, run_id, owner, what="lease runs")
        self._claim(owner)
        try:
            lease = await anyio.to_thread.run_sync(take)
        except BaseException:
            self._unclaim(owner)
            raise
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
                unwritten = True
            else:
                unwritten = False
        if unwritten:
            self._unclaim(lease.owner)
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
        read = functools.partial(self._with, read_blob, digest)
        data: bytes | None = await anyio.to_thread.run_sync(self._reading, read)
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
        self._stop()

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
            self._stop(exc)
        ids: dict[str, int] = {}
        while True:
            batch = self._gather()
            if conn is not None and self._error is None:
                try:
                    self._store(conn, batch, ids)
                except Exception as exc:
                    self._stop(exc)
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
            self._refuse(commit(conn, writes, blobs, ids, fences))
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
                self._unclaim(lease.owner)
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
            if not renewed:
                self._unclaim(lease.owner)

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
                held_by, fence, expires = (
                    ("", 0, 0.0) if row is None else checked_lease(run_id, *row)
                )
                # A lease nobody can renew (its owner is gone) is free at once.
                if expires > now and not owner_is_gone(held_by):
                    raise RunBusy(run_id, held_by, expires)
                lease = Lease(run_id, owner, fence + 1, now + self.lease_term)
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
                    migrate(conn, self._label)
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or attempt == 49:
                        raise
                    time.sleep(0.01 * (attempt + 1))
            self._ready = True

    # -- reading ------------------------------------------------------------------------
    def _with(self, read: Callable[..., _T], *args: Any) -> _T:
        """`read(conn, *args)` on a connection of its own."""
        conn = sqlite3.connect(self.path)
        try:
            return read(conn, *args)
        finally:
            conn.close()

    def _reading(self, read: Callable[..., _T], *args: Any, what: str = "be read") -> _T:
        try:
            return read(*args)
        except sqlite3.Error as exc:
            failed = f"{type(exc).__name__}: {exc}"
            raise CheckpointError(f"{self._label} cannot {what}: {failed}") from exc
