"""`PostgresStore`: checkpoints in a PostgreSQL database, shared by many processes.

One writer thread per store object, with one connection (sync psycopg, so the
store works on asyncio and trio alike), does everything the database sees:
group commits, lease takes, renewals and releases, and reads. A run's lease
row is locked `FOR SHARE` inside every commit that writes the run, so a
runner taking the lease over waits for that commit and sees it; after the
take, the old owner's commits find the new fencing number and are refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import queue
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio.to_thread
import attrs

from .._errors import CheckpointError
from .._extras import pip_install
from ._lease import LEASE_TERM, Lease, RunBusy
from ._pglease import LeaseTake, Settled, settle, text_refusal
from ._pgsql import MIGRATIONS, commit, read_blob, read_ids, read_log
from ._records import Record, RunLog
from ._store import BlobWrite, LeaseRelease, WriterStore, blob_digest
from ._wake import Waiter, wake

if TYPE_CHECKING:
    import psycopg

__all__ = ("PostgresStore",)

_GATHER = 0.005
"""Seconds the writer lets records gather before a commit, unless someone waits on it."""
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

_T = TypeVar("_T")


@attrs.define(eq=False)
class _Call(Generic[_T]):
    """Work for the writer's connection (a read), answered through `waiter`."""

    work: Callable[[psycopg.Connection[Any]], _T]
    what: str
    waiter: Waiter


# Records, a release, a blob, a lease take, a read, a flush barrier, a wake-up, or close:
_Item = (
    Sequence[Record]
    | LeaseRelease
    | BlobWrite
    | LeaseTake
    | _Call[Any]
    | Waiter
    | threading.Event
    | None
)


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ImportError(f"PostgresStore needs psycopg: {pip_install('postgres')}") from None
    return psycopg


class PostgresStore(WriterStore):
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
        psycopg = _psycopg()
        try:
            parts = psycopg.conninfo.conninfo_to_dict(conninfo)
        except psycopg.ProgrammingError as exc:
            raise ValueError(f"not a PostgreSQL connection string: {exc}") from None
        if not _SCHEMA_NAME.fullmatch(schema):
            raise ValueError(
                f"schema is a name of lowercase letters, digits and underscores, not {schema!r}"
            )
        if not lease_term > 0:
            raise ValueError(f"lease_term is a positive number of seconds, not {lease_term!r}")
        if not connect_timeout > 0:
            raise ValueError(f"connect_timeout is a positive number, not {connect_timeout!r}")
        self.conninfo = conninfo
        self.schema = schema
        self.lease_term = lease_term
        self.connect_timeout = connect_timeout
        parts.pop("password", None)
        where = f"{parts.get('host', 'localhost')}:{parts.get('port', 5432)}"
        self._name = f"{where}/{parts.get('dbname', '')}/{schema}"
        super().__init__(f"Postgres store {self._name!r}")
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()

    def __repr__(self) -> str:
        return f"PostgresStore({self._name!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        settings = (self.conninfo, self.schema, self.lease_term, self.connect_timeout)
        return (_restore, settings)

    # -- the protocol -------------------------------------------------------------------
    def write(self, records: Sequence[Record]) -> None:
        """Queue `records` for the writer thread; they commit together."""
        self._usable()
        self._queue.put(records)

    async def load(self, run_id: str) -> RunLog | None:
        """Every record of `run_id` (after committing what is queued), or None."""
        return await self._call(lambda conn: read_log(conn, run_id), "be read")

    async def run_ids(self) -> tuple[str, ...]:
        """Every run in the store, oldest first."""
        return await self._call(read_ids, "be read")

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
        self._queue.put(BlobWrite(digest, bytes(data)))
        return digest

    async def get_blob(self, digest: str) -> bytes:
        """The bytes stored under `digest`; `CheckpointError` when there are none."""
        data = await self._call(lambda conn: read_blob(conn, digest), "be read")
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

    async def _call(self, work: Callable[[psycopg.Connection[Any]], _T], what: str) -> _T:
        """Run `work` on the writer's connection once what is queued before it is committed."""
        self._usable()
        call = _Call(work, what, Waiter())
        self._queue.put(call)
        self._urgent.set()
        result: _T = await call.waiter.wait()
        return result

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
                    target=self._work, name=f"agentgraph-postgres:{self._name}", daemon=True
                )
                self._thread.start()

    # -- the writer thread --------------------------------------------------------------
    def _connect(self) -> psycopg.Connection[Any]:
        pg = _psycopg()
        conn: psycopg.Connection[Any] = pg.connect(
            self.conninfo,
            autocommit=True,
            connect_timeout=max(1, round(self.connect_timeout)),
            application_name="agentgraph",
        )
        try:
            conn.execute(pg.sql.SQL("SET search_path TO {}").format(pg.sql.Identifier(self.schema)))
            _migrate(conn, self.schema)
        except BaseException:
            conn.close()
            raise
        return conn

    def _work(self) -> None:
        conn: psycopg.Connection[Any] | None = None
        try:
            conn = self._connect()
        except Exception as exc:  # reported by the next write, flush or call
            self._stop(exc)
        try:
            while True:
                batch = self._gather()
                if conn is not None and self._error is None:
                    try:
                        self._store(conn, batch)
                    except Exception as exc:
                        self._stop(exc)
                self._answer(batch)
                if None in batch:
                    return
        finally:
            self._drain()
            if conn is not None:
                conn.close()

    def _answer(self, batch: list[_Item]) -> None:
        """Wake whoever waits on `batch`; those not answered yet get the store's failure."""
        waiters = []
        for item in batch:
            if isinstance(item, LeaseTake | _Call):
                if not item.waiter.answered:
                    item.waiter.answer(error=self._failure())
                waiters.append(item.waiter)
            elif isinstance(item, Waiter):
                waiters.append(item)
            elif isinstance(item, threading.Event):
                item.set()
        wake(waiters)

    def _failure(self) -> CheckpointError:
        error = self._error
        if error is None:
            return CheckpointError(f"{self._label} is closed")
        return CheckpointError(
            f"{self._label} stopped storing records: {type(error).__name__}: {error}"
        )

    def _drain(self) -> None:
        """Answer whatever was queued after the writer stopped: nobody waits forever."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            self._answer([item])

    def _gather(self) -> list[_Item]:
        """The next batch: what queued up, or nothing when a lease is due for renewal."""
        try:
            batch = [self._queue.get(timeout=self._renew_in())]
        except queue.Empty:
            return []
        if isinstance(batch[0], Sequence):
            self._urgent.wait(_GATHER)  # fewer, larger transactions, unless someone waits
        self._urgent.clear()
        while True:  # group commit: take everything that queued up meanwhile
            try:
                batch.append(self._queue.get_nowait())
            except queue.Empty:
                return batch

    def _store(self, conn: psycopg.Connection[Any], batch: list[_Item]) -> None:
        """Commit a batch's records, blobs, lease takes, releases and due renewals in one
        transaction; then run its reads."""
        writes = [i for i in batch if isinstance(i, Sequence) and i]
        blobs = [(i.digest, i.data) for i in batch if isinstance(i, BlobWrite)]
        releases = [i.lease for i in batch if isinstance(i, LeaseRelease)]
        takes = [i for i in batch if isinstance(i, LeaseTake)]
        try:
            self._commit(conn, writes, blobs, releases, takes)
        except Exception as exc:
            if not takes or conn.broken or conn.closed:
                raise
            # A take the database refused (a run id too long for its index, say): the
            # rest goes in without the takes, and each take alone, failing alone.
            self._commit(conn, writes, blobs, releases, [])
            for take in takes:
                try:
                    self._commit(conn, [], [], [], [take])
                except Exception as alone:
                    if conn.broken or conn.closed:
                        raise
                    failed = f"{type(alone).__name__}: {alone}"
                    error = CheckpointError(f"{self._label} cannot lease runs: {failed}")
                    error.__cause__ = alone
                    take.waiter.answer(error=error)
            del exc
        for item in batch:
            if isinstance(item, _Call):
                self._run_call(conn, item)

    def _commit(
        self,
        conn: psycopg.Connection[Any],
        writes: list[Sequence[Record]],
        blobs: list[tuple[str, bytes]],
        releases: list[Lease],
        takes: list[LeaseTake],
    ) -> None:
        """One transaction, in two exchanges with the server: the lease rows locked and
        read; then the lease changes, the records and the COMMIT."""
        renewals = self._due()
        if not (writes or blobs or releases or takes or renewals):
            return
        written = {r.run_id for w in writes for r in w}
        with self._lock:
            fences = {run: f for run, f in self._fences.items() if run in written}
        renewed_until = time.time() + self.lease_term
        with conn.pipeline() as pipeline:
            conn.execute("BEGIN")
            try:
                settled = settle(
                    conn,
                    fences=fences,
                    releases=releases,
                    takes=takes,
                    renewals=renewals,
                    term=self.lease_term,
                )
                refused = commit(conn, writes, blobs, settled.lost, pipeline.sync)
            except BaseException:
                if not (conn.broken or conn.closed):
                    with contextlib.suppress(Exception):
                        pipeline.sync()  # out of the aborted state the error left
                    conn.execute("ROLLBACK")
                    pipeline.sync()
                raise
        self._settled(settled, renewed_until)
        with self._lock:
            for records, error in refused:
                for rid in {r.run_id for r in records}:
                    self._rejected.setdefault(rid, error)

    def _settled(self, settled: Settled, renewed_until: float) -> None:
        """The commit is durable: the leases as it left them, here too."""
        for take, outcome in settled.taken:
            if isinstance(outcome, Lease):
                take.waiter.answer(outcome)
            else:
                take.waiter.answer(error=outcome)
        for lease in settled.released:
            with self._lock:
                if self._fences.get(lease.run_id) == lease.fence:
                    del self._fences[lease.run_id]
            self._unclaim(lease.owner)
        for run_id, renewed in settled.renewed.items():
            with self._lock:
                held = self._held.get(run_id)
                if held is None:
                    continue  # released meanwhile
                if renewed:
                    self._held[run_id] = attrs.evolve(held, expires=renewed_until)
                else:  # taken over: the run sees it at its next look, and stops
                    del self._held[run_id]
            if not renewed:
                self._unclaim(held.owner)

    def _run_call(self, conn: psycopg.Connection[Any], call: _Call[Any]) -> None:
        try:
            with conn.transaction():
                call.waiter.answer(call.work(conn))
        except (RunBusy, CheckpointError) as exc:
            call.waiter.answer(error=exc)
        except Exception as exc:  # a refused request or a damaged row: this call fails alone
            if conn.broken or conn.closed:
                raise  # the database is gone: the store stops
            failed = f"{type(exc).__name__}: {exc}"
            error = CheckpointError(f"{self._label} cannot {call.what}: {failed}")
            error.__cause__ = exc
            call.waiter.answer(error=error)

    def _renew_in(self) -> float | None:
        """Seconds until the next lease is due for renewal; None when none is held."""
        held = list(self._held.values())
        if not held:
            return None
        due = min(lease.expires for lease in held) - self.lease_term * 2 / 3
        return max(0.0, due - time.time())

    def _due(self) -> list[Lease]:
        """The leases held here that have used a third of their term."""
        now = time.time()
        with self._lock:
            held = list(self._held.values())
        return [lease for lease in held if lease.expires - now <= self.lease_term * 2 / 3]


def _restore(
    conninfo: str, schema: str, lease_term: float, connect_timeout: float
) -> PostgresStore:
    return PostgresStore(
        conninfo, schema=schema, lease_term=lease_term, connect_timeout=connect_timeout
    )


def _lock_key(schema: str) -> int:
    """The advisory lock that serializes creating and migrating `schema`."""
    digest = hashlib.sha256(f"agentgraph schema {schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _migrate(conn: psycopg.Connection[Any], schema: str) -> None:
    """Create the schema's tables, or bring them up to date, under an advisory lock."""
    sql = _psycopg().sql
    name = sql.Identifier(schema)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(schema),))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(name))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version "
            "(one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), version INTEGER NOT NULL)"
        )
        row = conn.execute("SELECT version FROM schema_version").fetchone()
        version = 0 if row is None else int(row[0])
        if version > len(MIGRATIONS):
            raise CheckpointError(
                f"schema {schema!r} is at version {version}, written by a newer agentgraph; "
                f"this one knows versions up to {len(MIGRATIONS)}"
            )
        for script in MIGRATIONS[version:]:
            conn.execute(script)
        conn.execute(
            "INSERT INTO schema_version (version) VALUES (%s) "
            "ON CONFLICT (one) DO UPDATE SET version = excluded.version",
            (len(MIGRATIONS),),
        )
