"""`PostgresStore`: checkpoints in a PostgreSQL database, shared by many processes.

One writer thread per store object, with one connection (sync psycopg, so the
store works on asyncio and trio alike), does everything the database sees
(`_pgwriter`): group commits, lease takes, renewals and releases, and reads.
A run's lease row is locked inside every commit that writes the run, so a
runner taking the lease over waits for that commit and sees it; after the
take, the old owner's commits find the new fencing number and are refused.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread

from .._core._errors import CheckpointError
from .._util._pg import load_psycopg, place
from ._lease import LEASE_TERM, Lease
from ._pglease import LeaseTake, text_refusal
from ._pgschema import migrate
from ._pgsql import (
    delete_thread,
    read_blob,
    read_chain,
    read_ids,
    read_log,
    read_thread,
    read_thread_ids,
)
from ._pgwriter import Call, PostgresWriter
from ._records import Record, RunLog, ThreadLog
from ._store import BlobWrite, LeaseRelease, blob_digest
from ._wake import Waiter
from ._writer import beside

if TYPE_CHECKING:
    import psycopg

__all__ = ("PostgresStore",)

_T = TypeVar("_T")

_READERS = 4
"""Reading connections kept open between reads."""


class PostgresStore(PostgresWriter):
    """Checkpoints in PostgreSQL, for runs of many processes and machines sharing one database.

    Works like `SQLiteStore`: `write` only queues; one writer thread commits
    what queued up (group commit, each `write` atomic), reports a refused
    write to the next `flush` of its run and stops for good only when the
    database fails (then runs fail with `CheckpointError` and can be resumed
    by a new store). The tables live in their own schema, created and
    migrated on first use (a schema-version table; an advisory lock makes
    concurrent first use from several processes safe). Leases are rows with
    a fencing number checked inside each commit's transaction, and expiry
    is measured on the database's clock.

    ```python
    store = PostgresStore("postgresql://app@db.internal/agents")
    out = await runner.run(graph, ctx, store=store)
    await store.aclose()
    ```

    A store pickles as its settings: unpickled (in another process, say) it
    is a new store on the same database, with its own connection.

    Args:
        conninfo: a libpq connection string or `postgresql://` URL.
        schema: the schema the tables live in (created when missing); a name
            of lowercase letters, digits and underscores.
        lease_term: seconds a run's lease lasts without renewal.
        connect_timeout: seconds to wait for the connection.
    """

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str = "agentgraph",
        lease_term: float = LEASE_TERM,
        connect_timeout: float = 10.0,
    ) -> None:
        self._name = place("PostgresStore", conninfo, schema)
        if not lease_term > 0:
            raise ValueError(f"lease_term is a positive number of seconds, not {lease_term!r}")
        if not connect_timeout > 0:
            raise ValueError(f"connect_timeout is a positive number, not {connect_timeout!r}")
        self.conninfo = conninfo
        self.schema = schema
        self.lease_term = lease_term
        self.connect_timeout = connect_timeout
        super().__init__(f"Postgres store {self._name!r}", f"agentgraph-postgres:{self._name}")
        # Reading connections kept between reads; reads start once the writer made the tables.
        self._readers: queue.SimpleQueue[psycopg.Connection[Any]] = queue.SimpleQueue()
        self._made = False

    def __repr__(self) -> str:
        return f"PostgresStore({self._name!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        settings = (self.conninfo, self.schema, self.lease_term, self.connect_timeout)
        return (_restore, settings)

    # -- the protocol -------------------------------------------------------------------
    def write(self, records: Sequence[Record]) -> None:
        """Queue `records` for the writer thread; they commit together."""
        self._usable()
        self._queued(records)
        self._queue.put(records)

    async def load(self, run_id: str) -> RunLog | None:
        """Every record of `run_id` (after committing what is queued of it), or None."""
        return await self._read(lambda conn: read_log(conn, run_id), run_id)

    async def load_chain(self, run_id: str) -> tuple[RunLog, ...]:
        """`run_id`'s log and those of the runs its first context continues from, newest
        first (a thread's turns back to one stored whole), read in one go."""
        return await self._read(lambda conn: read_chain(conn, run_id), run_id)

    async def run_ids(self) -> tuple[str, ...]:
        """Every run in the store, oldest first."""
        return await self._read(read_ids, "new")

    async def load_thread(self, thread_id: str) -> ThreadLog | None:
        """The thread's head and turns (after committing what is queued of it), or None."""
        return await self._read(lambda conn: read_thread(conn, thread_id), f"thread:{thread_id}")

    async def thread_ids(self) -> tuple[str, ...]:
        """Every thread in the store, oldest first."""
        return await self._read(read_thread_ids, "new")

    async def delete_thread(self, thread_id: str) -> bool:
        """Delete the thread and its runs; False when there was no such thread."""
        return await self._call(lambda conn: delete_thread(conn, thread_id), "delete threads")

    async def acquire(self, run_id: str, *, owner: str) -> Lease:
        """Take `run_id`'s lease for `owner`, or raise `RunBusy` naming the runner that has it.

        The take goes into the next group commit, beside the records queued before it.
        """
        refusal = text_refusal(run_id, owner)
        if refusal is not None:
            raise CheckpointError(f"{self._label} cannot lease runs: {refusal}")
        self._usable()
        self._claim(owner)
        try:
            take = LeaseTake(run_id, owner, self.lease_term, Waiter())
            self._queue.put(take)
            self._urgent.set()
            lease: Lease = await take.waiter.wait()
        except BaseException:
            self._unclaim(owner)
            raise
        with self._lock:
            self._held[run_id] = lease
            self._fences[run_id] = lease.fence
        self._queue.put(threading.Event())  # wake the writer: it renews the lease from now on
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
        self._usable()
        digest = blob_digest(data)
        blob = BlobWrite(digest, bytes(data))
        self._queued(blob)
        self._queue.put(blob)
        return digest

    async def get_blob(self, digest: str) -> bytes:
        """The bytes stored under `digest`; `CheckpointError` when there are none."""
        data = await self._read(lambda conn: read_blob(conn, digest), f"blob:{digest}")
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

    # -- talking to the writer ----------------------------------------------------------
    def _usable(self) -> None:
        if self._error is not None or self._closed:
            self._raise()
        if self._thread is None:
            self._start()

    async def _barrier(self) -> None:
        """Wait until every queued record is committed; raise if the database failed."""
        if self._closed:
            self._raise()
        self._usable()
        done = Waiter()
        self._queue.put(done)
        self._urgent.set()
        await done.wait()
        if self._error is not None:
            self._raise()

    async def _read(self, work: Callable[[psycopg.Connection[Any]], _T], about: str) -> _T:
        """`work` on a reading connection of its own, beside the writer; on the writer's
        connection, after it, while something about `about` is queued (or before the
        writer made the tables)."""
        if not self._made or self._waits(about):
            found = await self._call(work, "be read")
            self._made = True
            return found
        return await beside(self._reading, work)

    def _reading(self, work: Callable[[psycopg.Connection[Any]], _T]) -> _T:
        try:
            conn = self._readers.get_nowait()
        except queue.Empty:
            try:
                conn = self._connect_reader()
            except Exception as exc:
                raise CheckpointError(f"{self._label} cannot be read: {exc}") from exc
        try:
            with conn.transaction():
                found = work(conn)
        except CheckpointError:
            self._keep_reader(conn)
            raise
        except Exception as exc:
            failed = f"{type(exc).__name__}: {exc}"
            if conn.broken or conn.closed:
                conn.close()
            else:
                self._keep_reader(conn)
            raise CheckpointError(f"{self._label} cannot be read: {failed}") from exc
        self._keep_reader(conn)
        return found

    def _keep_reader(self, conn: psycopg.Connection[Any]) -> None:
        if self._closed or self._readers.qsize() >= _READERS:
            conn.close()
        else:
            self._readers.put(conn)

    def _connect_reader(self) -> psycopg.Connection[Any]:
        pg = load_psycopg("PostgresStore")
        conn: psycopg.Connection[Any] = pg.connect(
            self.conninfo,
            autocommit=True,
            connect_timeout=max(1, round(self.connect_timeout)),
            application_name="agentgraph",
        )
        conn.execute(pg.sql.SQL("SET search_path TO {}").format(pg.sql.Identifier(self.schema)))
        return conn

    async def _call(self, work: Callable[[psycopg.Connection[Any]], _T], what: str) -> _T:
        """Run `work` on the writer's connection once what is queued before it is committed."""
        self._usable()
        call = Call(work, what, Waiter())
        self._queue.put(call)
        self._urgent.set()
        result: _T = await call.waiter.wait()
        return result

    # -- the writer thread's connection -------------------------------------------------
    def _connect(self) -> psycopg.Connection[Any]:
        pg = load_psycopg("PostgresStore")
        conn: psycopg.Connection[Any] = pg.connect(
            self.conninfo,
            autocommit=True,
            connect_timeout=max(1, round(self.connect_timeout)),
            application_name="agentgraph",
        )
        try:
            conn.execute(pg.sql.SQL("SET search_path TO {}").format(pg.sql.Identifier(self.schema)))
            migrate(conn, self.schema)
        except BaseException:
            conn.close()
            raise
        return conn


def _restore(
    conninfo: str, schema: str, lease_term: float, connect_timeout: float
) -> PostgresStore:
    return PostgresStore(
        conninfo, schema=schema, lease_term=lease_term, connect_timeout=connect_timeout
    )
