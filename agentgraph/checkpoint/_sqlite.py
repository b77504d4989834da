"""`SQLiteStore`: checkpoints in one SQLite file, written by its own thread (`_sqlitewriter`)."""

from __future__ import annotations

import functools
import os
import queue
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

import anyio.to_thread

from .._core._errors import CheckpointError
from ._lease import LEASE_TERM, Lease
from ._records import Record, RunLog, ThreadLog
from ._sqlite_sql import (
    delete_thread,
    read_blob,
    read_chain,
    read_ids,
    read_log,
    read_thread,
    read_thread_ids,
)
from ._sqlitewriter import _BUSY, SQLiteWriter
from ._store import BlobWrite, LeaseRelease, blob_digest
from ._writer import beside

__all__ = ("SQLiteStore",)

_T = TypeVar("_T")

_READERS = 4
"""Reading connections kept open between reads."""


class SQLiteStore(SQLiteWriter):
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
        super().__init__(f"SQLite store {self.path!r}", f"agentgraph-sqlite:{self.path}")
        self._readers: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self.synchronous = synchronous
        self.lease_term = lease_term

    # -- the protocol -------------------------------------------------------------------
    def write(self, records: Sequence[Record]) -> None:
        """Queue `records` for the writer thread; they commit together."""
        if self._error is not None or self._closed:
            self._raise()
        if self._thread is None:
            self._start()
        self._queued(records)
        self._queue.put(records)

    async def load(self, run_id: str) -> RunLog | None:
        """Every record of `run_id` (after committing what is queued of it), or None."""
        if not self._ready or self._waits(run_id):
            await self._barrier()
        return await beside(self._reading, self._with, read_log, run_id)

    async def load_chain(self, run_id: str) -> tuple[RunLog, ...]:
        """`run_id`'s log and those of the runs its first context continues from, newest
        first (a thread's turns back to one stored whole), read in one go."""
        if not self._ready or self._waits(run_id):
            await self._barrier()
        return await beside(self._reading, self._with, read_chain, run_id)

    async def run_ids(self) -> tuple[str, ...]:
        """Every run in the store, oldest first."""
        if not self._ready or self._waits("new"):
            await self._barrier()
        return await beside(self._reading, self._with, read_ids)

    async def load_thread(self, thread_id: str) -> ThreadLog | None:
        """The thread's head and turns (after committing what is queued of it), or None."""
        if not self._ready or self._waits(f"thread:{thread_id}"):
            await self._barrier()
        return await beside(self._reading, self._with, read_thread, thread_id)

    async def thread_ids(self) -> tuple[str, ...]:
        """Every thread in the store, oldest first."""
        if not self._ready or self._waits("new"):
            await self._barrier()
        return await beside(self._reading, self._with, read_thread_ids)

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
        blob = BlobWrite(digest, bytes(data))
        self._queued(blob)
        self._queue.put(blob)
        return digest

    async def get_blob(self, digest: str) -> bytes:
        """The bytes stored under `digest`; `CheckpointError` when there are none."""
        if not self._ready or self._waits(f"blob:{digest}"):
            await self._barrier()
        read = functools.partial(self._with, read_blob, digest)
        data: bytes | None = await beside(self._reading, read)
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
        while True:
            try:
                self._readers.get_nowait().close()
            except queue.Empty:
                break

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self.close)

    # -- reading ------------------------------------------------------------------------
    def _with(self, read: Callable[..., _T], *args: Any) -> _T:
        """`read(conn, *args)` on a reading connection of its own (kept for the next read:
        a few are kept, so reads go on beside the writer and each other)."""
        try:
            conn = self._readers.get_nowait()
        except queue.Empty:
            conn = sqlite3.connect(self.path, check_same_thread=False, timeout=_BUSY)
        try:
            found = read(conn, *args)
        except BaseException:
            conn.close()
            raise
        if self._closed or self._readers.qsize() >= _READERS:
            conn.close()
        else:
            self._readers.put(conn)
        return found

    def _reading(self, read: Callable[..., _T], *args: Any, what: str = "be read") -> _T:
        try:
            return read(*args)
        except sqlite3.Error as exc:
            failed = f"{type(exc).__name__}: {exc}"
            raise CheckpointError(f"{self._label} cannot {what}: {failed}") from exc
