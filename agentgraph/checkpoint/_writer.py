"""The base of the stores that commit from a writer thread (SQLite, PostgreSQL).

`write` queues records for the thread and returns; what the stores share is
kept here: the orders a writer thread takes besides records, the leases taken
here, and the writes the database refused, held by run until a flush reports
them.
"""

from __future__ import annotations

import queue
import threading
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread
import attrs

from .._core._context import AgentContext
from .._core._errors import CheckpointError
from ._base import StoreBase, _storage, fork
from ._lease import Lease, LeaseLost, hold, let_go
from ._records import Record, RunRecord, StepRecord, ThreadHead

if TYPE_CHECKING:
    from .._core._graph import Graph

__all__ = ("BlobWrite", "LeaseRelease", "WriterStore", "beside", "gather")

_I = TypeVar("_I")
_R = TypeVar("_R")

_GATHER = 0.005
"""Seconds a writer lets records gather before a commit, unless someone waits on it."""


@attrs.frozen
class LeaseRelease:
    """A writer thread's order to give `lease` back, after the records queued before it."""

    lease: Lease


@attrs.frozen
class BlobWrite:
    """A writer thread's order to store `data` under its `digest`."""

    digest: str
    data: bytes


class WriterStore(StoreBase, ABC):
    """What the stores with a writer thread share: the leases taken here, the writes
    refused by run until a flush reports them, and `flush`, `held` and `fork`.

    `label` names the store in errors ("SQLite store 'runs.db'") and
    `thread_name` its writer thread, which `_start` starts on `_work`; a
    subclass implements `_work` and `_barrier`, which waits until what is
    queued is committed.

    The owners of the leases taken here are registered with this process's
    live owners (`_lease.hold`) from before the take until the release is
    written, the lease is lost, or the store stops (`_stop`): a lease whose
    release could not be written is then free at once for the other stores
    of this process.
    """

    def __init__(self, label: str, thread_name: str) -> None:
        self._label = label
        self._thread_name = thread_name
        self._held: dict[str, Lease] = {}  # the leases taken here, as last renewed
        self._fences: dict[str, int] = {}  # their fences, kept until released: writes check them
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None  # the database failed: no more writes
        self._rejected: dict[str, Exception] = {}  # a write refused, by run, until flushed
        self._closed = False
        self._lock = threading.Lock()
        self._urgent = threading.Event()
        self._owners: Counter[str] = Counter()  # the owners registered by this store
        # What queued records are about (a run, `thread:<id>`, `blob:<digest>`, `new` for
        # a run started or a head moved) until they are committed: a read about something
        # with nothing queued reads at once, beside the writer, not after it.
        self._pending: dict[str, int] = {}
        self._pending_lock = threading.Lock()

    def _queued(self, item: Sequence[Record] | BlobWrite) -> None:
        """Count what `item`, about to be queued, is about (see `_pending`)."""
        keys = _keys(item)
        pending = self._pending
        with self._pending_lock:
            for key in keys:
                pending[key] = pending.get(key, 0) + 1

    def _committed(self, batch: Sequence[Any]) -> None:
        """The writer is done with `batch` (committed, refused, or the store failed)."""
        keys = [
            key
            for item in batch
            if isinstance(item, BlobWrite) or (isinstance(item, Sequence) and item)
            for key in _keys(item)
        ]
        pending = self._pending
        with self._pending_lock:
            for key in keys:
                left = pending.get(key, 0) - 1
                if left > 0:
                    pending[key] = left
                else:
                    pending.pop(key, None)

    def _waits(self, *keys: str) -> bool:
        """Whether a read about `keys` must wait for the writer: something about them is
        queued, or the store stopped (the wait raises why)."""
        if self._error is not None or self._closed:
            return True
        pending = self._pending
        return any(pending.get(key) for key in keys)

    def _claim(self, owner: str) -> None:
        """Register `owner` before its lease is taken: nobody here may think it gone."""
        with self._lock:
            self._owners[owner] += 1
        hold(owner)

    def _unclaim(self, owner: str) -> None:
        """`owner`'s lease was released, lost or never taken."""
        with self._lock:
            if self._owners[owner] <= 0:
                return
            self._owners[owner] -= 1
        let_go(owner)

    def _stop(self, error: BaseException | None = None) -> None:
        """The store closed, or (`error`) its database failed: it holds no lease any more."""
        if error is not None and self._error is None:
            self._error = error
        with self._lock:
            owners, self._owners = self._owners, Counter()
        for owner in owners.elements():
            let_go(owner)

    def _stopped(self) -> CheckpointError:
        """Why the store takes no more writes: its database failed, or it was closed."""
        if self._error is None:
            return CheckpointError(f"{self._label} is closed")
        return CheckpointError(
            f"{self._label} stopped storing records: {type(self._error).__name__}: {self._error}"
        )

    def _raise(self) -> None:
        """Raise `_stopped`, chained to the database's failure if there was one."""
        if self._error is not None:
            raise self._stopped() from self._error
        raise self._stopped()

    @abstractmethod
    def _work(self) -> None:
        """The writer thread's target."""

    def _start(self) -> None:
        with self._lock:
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._work, name=self._thread_name, daemon=True
                )
                self._thread.start()

    @abstractmethod
    async def _barrier(self) -> None:
        """Wait until what is queued is committed."""

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
        if refused is not None and isinstance(refused[1], LeaseLost):
            raise LeaseLost(refused[1].run_id, refused[1].why) from None
        if refused is not None:
            where = f"{self._label} refused records of run {refused[0]!r}"
            raise CheckpointError(f"{where}: {refused[1]}") from refused[1]

    def held(self, run_id: str) -> Lease | None:
        """The lease taken here on `run_id` as last renewed; None if it was lost or released."""
        return self._held.get(run_id)

    async def fork(
        self,
        run_id: str,
        step: int,
        *,
        context: AgentContext[Any] | None = None,
        graph: Graph[Any, Any] | None = None,
    ) -> str:
        """Start a new run from `step` of `run_id`; see `agentgraph.checkpoint.fork`."""
        return await fork(_storage(self), run_id, step, context=context, graph=graph)


async def beside(read: Callable[..., _R], *args: Any) -> _R:
    """`read(*args)` in a worker thread that takes no token of anyio's default limiter:
    runs waiting for a commit hold those tokens, and a read must not queue behind them."""
    return await anyio.to_thread.run_sync(read, *args, limiter=anyio.CapacityLimiter(1))


def _keys(item: Sequence[Record] | BlobWrite) -> Sequence[str]:
    if isinstance(item, BlobWrite):
        return (f"blob:{item.digest}",)
    if len(item) == 1 and type(item[0]) is StepRecord:  # a step's commit: most writes
        return (item[0].run_id,)
    keys = []
    for record in item:
        keys.append(record.run_id)
        if isinstance(record, RunRecord):
            keys.append("new")
            if record.thread is not None:
                keys.append(f"thread:{record.thread}")
        elif isinstance(record, ThreadHead):
            keys += ("new", f"thread:{record.thread}")
    return keys


def gather(
    items: queue.SimpleQueue[_I], timeout: float | None, urgent: threading.Event
) -> list[_I]:
    """A writer's next batch from `items`: what queued up, or nothing after `timeout`.

    Records (a sequence) gather for a moment, cut short by `urgent`: fewer,
    larger transactions, and fewer hand-overs of the GIL to and from the writer.
    """
    try:
        batch = [items.get(timeout=timeout)]
    except queue.Empty:
        return []
    if isinstance(batch[0], Sequence):
        urgent.wait(_GATHER)
    urgent.clear()
    while True:  # group commit: take everything that queued up meanwhile
        try:
            batch.append(items.get_nowait())
        except queue.Empty:
            return batch
