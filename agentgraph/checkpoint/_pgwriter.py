"""The writer thread of `PostgresStore`: it gathers what the event loops queue, and
commits each batch in one transaction.

A batch's records, blobs, lease takes, releases and due renewals go in
together: the lease rows are locked and read in a first exchange with the
server, and the lease changes, the records and the COMMIT sent in a second
(see `_pglease` and `_pgsql`). Reads and deletions queued in the batch run
after the commit, each in a transaction of its own. Whoever waits on the
batch is then woken on their own event loop (`_wake`).
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

from .._core._errors import CheckpointError
from ._lease import Lease, RunBusy
from ._pglease import LeaseTake, Settled, settle
from ._pgsql import commit, commit_alone
from ._records import Record
from ._store import BlobWrite, LeaseRelease, WriterStore
from ._wake import Waiter, wake
from ._writer import gather

if TYPE_CHECKING:
    import psycopg

__all__ = ("Call", "PostgresWriter")

_T = TypeVar("_T")


@attrs.define(eq=False)
class Call(Generic[_T]):
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
    | Call[Any]
    | Waiter
    | threading.Event
    | None
)


class PostgresWriter(WriterStore):
    """The writer thread's side of `PostgresStore` (`_work` is the thread's target).

    A subclass sets `lease_term` and implements `_connect`, which opens the
    connection the thread uses.
    """

    lease_term: float

    def __init__(self, label: str, thread_name: str) -> None:
        super().__init__(label, thread_name)
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()

    @abstractmethod
    def _connect(self) -> psycopg.Connection[Any]:
        """A new connection to the store's database, its schema in place."""

    def _work(self) -> None:
        conn: psycopg.Connection[Any] | None = None
        try:
            conn = self._connect()
        except Exception as exc:  # reported by the next write, flush or call
            self._stop(exc)
        try:
            while True:
                batch = gather(self._queue, self._renew_in(), self._urgent)
                if conn is not None and self._error is None:
                    try:
                        self._store(conn, batch)
                    except Exception as exc:
                        self._stop(exc)
                self._committed(batch)
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
            if isinstance(item, LeaseTake | Call):
                if not item.waiter.answered:
                    item.waiter.answer(error=self._stopped())
                waiters.append(item.waiter)
            elif isinstance(item, Waiter):
                waiters.append(item)
            elif isinstance(item, threading.Event):
                item.set()
        wake(waiters)

    def _drain(self) -> None:
        """Answer whatever was queued after the writer stopped: nobody waits forever."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            self._answer([item])

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
            if isinstance(item, Call):
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
        read; then the lease changes, the records and the COMMIT (when the database
        refuses a write, a second transaction inserts each write alone)."""
        renewals = self._due()
        if not (writes or blobs or releases or takes or renewals):
            return
        written = {r.run_id for w in writes for r in w}
        with self._lock:
            fences = {run: f for run, f in self._fences.items() if run in written}
        renewed_until = time.time() + self.lease_term

        def begin() -> Settled:
            conn.execute("BEGIN")
            return settle(
                conn,
                fences=fences,
                releases=releases,
                takes=takes,
                renewals=renewals,
                term=self.lease_term,
            )

        with conn.pipeline() as pipeline:
            try:
                settled = begin()
                refused = commit(conn, writes, blobs, settled.lost, pipeline.sync)
                if refused is None:
                    # The database refused a write: all again, each alone. psycopg's
                    # rollback also forgets the statements it prepared, those the
                    # server skipped after the refusal included.
                    conn.rollback()
                    settled = begin()
                    refused = commit_alone(conn, writes, blobs, settled.lost, pipeline.sync)
            except BaseException:
                if not (conn.broken or conn.closed):
                    with contextlib.suppress(Exception):
                        pipeline.sync()  # out of the aborted state the error left
                    conn.rollback()
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

    def _run_call(self, conn: psycopg.Connection[Any], call: Call[Any]) -> None:
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
