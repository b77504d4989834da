"""The writer thread of `SQLiteStore`: it gathers what the event loops queue, and
commits each batch in one transaction.

A batch's records and blobs commit together (`_sqlite_sql.commit`); releases
and due lease renewals follow on the same connection. Taking a lease does not
wait for the writer: it runs in an immediate transaction on a connection of
its own (`_take`), so the lease check and the write are one step for SQLite.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
import time
from collections.abc import Sequence
from typing import Literal

import anyio.to_thread
import attrs

from ._lease import Lease, RunBusy, checked_lease, owner_is_gone
from ._records import Record
from ._sqlite_sql import commit, migrate
from ._store import BlobWrite, LeaseRelease, WriterStore
from ._writer import gather

__all__ = ("SQLiteWriter",)

_BUSY = 10.0
"""Seconds a connection waits for another's write lock before it gives up."""


_Op = LeaseRelease | BlobWrite
_Item = Sequence[Record] | _Op | threading.Event | None  # ..., a flush barrier, or close


class SQLiteWriter(WriterStore):
    """The writer thread's side of `SQLiteStore` (`_work` is the thread's target).

    A subclass sets `path`, `synchronous` and `lease_term`.
    """

    path: str
    synchronous: Literal["NORMAL", "FULL"]
    lease_term: float

    def __init__(self, label: str, thread_name: str) -> None:
        super().__init__(label, thread_name)
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._setup = threading.Lock()
        self._ready = False

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
            batch = gather(self._queue, self._renew_in(), self._urgent)
            if conn is not None and self._error is None:
                try:
                    self._store(conn, batch, ids)
                except Exception as exc:
                    self._stop(exc)
            self._committed(batch)
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
