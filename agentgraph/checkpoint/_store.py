"""The `CheckpointStore` protocol, the in-memory store, and `fork`.

A store receives records from the run as it goes (`write` returns at once, so
a step never waits for storage) and makes them durable in the background;
`flush` is the barrier. The runner flushes before an unsafe tool runs, when a
node asks a question, and when a run ends. A crash loses only records that
were not yet flushed; those steps simply run again on resume, since the store
never claimed them.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

import anyio.lowlevel
import attrs

from .._context import AgentContext
from .._errors import CheckpointError
from .._json import NO_TYPES, Types
from .._runner import ANY_HEAD, NO_ANSWER, Head, new_run_id
from ._codec import full_context
from ._lease import Lease, LeaseLost, RunBusy, hold, let_go
from ._records import (
    Effect,
    Record,
    RunLog,
    RunRecord,
    StepRecord,
    ThreadHead,
    ThreadLog,
    checked,
    effect_step,
)
from ._resume import open_replay, open_resume, open_run
from ._threads import open_thread

if TYPE_CHECKING:
    from .._graph import Graph
    from ._compaction import Compaction
    from ._journal import StoreJournal

__all__ = (
    "BlobWrite",
    "CheckpointStore",
    "LeaseRelease",
    "MemoryStore",
    "StoreBase",
    "blob_digest",
    "fork",
)


@attrs.frozen
class LeaseRelease:
    """A writer thread's order to give `lease` back, after the records queued before it."""

    lease: Lease


@attrs.frozen
class BlobWrite:
    """A writer thread's order to store `data` under its `digest`."""

    digest: str
    data: bytes


@runtime_checkable
class CheckpointStore(Protocol):
    """Where a run's records go.

    Storage: `write` must not block: queue the records and store them in the
    background. Each call's records must become durable together (one
    transaction); several calls may share one. `flush` returns once every
    record written before it is durable, or raises `CheckpointError` if
    storing failed: for a `write` the store rejected (a run id taken twice, a
    lease lost, say), only when `run_id` is that write's run or None. `load`
    returns a run's records in commit order (effects in the order they were
    written, a rewritten effect moving to the end), or None for an unknown run.

    Ownership: `acquire` takes a run's lease for one runner or raises
    `RunBusy`; while held, the store keeps it alive and refuses writes of the
    run from any runner whose lease was taken over (fencing); `held` is the
    store's latest view of a lease it holds (None once lost); `release` gives
    it back.

    Blobs: `put_blob` stores bytes under their SHA-256 digest (write-behind,
    like `write`) and returns the digest; `get_blob` returns them.

    `StoreBase` implements ownership in one process and no blobs, so a store
    of your own needs only the four storage methods to begin with.
    """

    def write(self, records: Sequence[Record]) -> None: ...

    async def flush(self, run_id: str | None = None) -> None: ...

    async def load(self, run_id: str) -> RunLog | None: ...

    async def aclose(self) -> None: ...

    async def acquire(self, run_id: str, *, owner: str) -> Lease: ...

    def held(self, run_id: str) -> Lease | None: ...

    def release(self, lease: Lease) -> None: ...

    def put_blob(self, data: bytes) -> str: ...

    async def get_blob(self, digest: str) -> bytes: ...


# Leases held through `StoreBase`'s own bookkeeping, per store object.
_leases: weakref.WeakKeyDictionary[Any, dict[str, Lease]] = weakref.WeakKeyDictionary()
_leases_lock = threading.Lock()  # stores may be shared by event loops in several threads


class StoreBase:
    """Gives a store the means to record runs (`agentgraph.JournalSource`).

    Subclass it and implement the four storage methods of `CheckpointStore`;
    the runner then records, resumes and replays runs in your store. Leases
    default to this process's own bookkeeping (one runner per run among the
    runners sharing this store object); a store shared between processes
    overrides `acquire`, `held` and `release` with leases kept in its database.
    Used as an async context manager, a store is closed (`aclose`) on leaving.
    """

    async def aclose(self) -> None:
        """Release the store's resources; a store that buffers writes flushes them first."""
        await anyio.lowlevel.checkpoint()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def open_run(
        self, graph: Graph[Any, Any], ctx: AgentContext[Any], run_id: str
    ) -> StoreJournal:
        """Start recording a new run under `run_id`."""
        return await open_run(graph, ctx, _storage(self), run_id)

    async def open_thread(
        self,
        graph: Graph[Any, Any],
        ctx: AgentContext[Any],
        run_id: str,
        thread_id: str,
        *,
        compaction: Compaction | None = None,
        types: Types = NO_TYPES,
        expect_head: Head = ANY_HEAD,
    ) -> StoreJournal:
        """Start recording a turn of `thread_id` (see `GraphRunner.run(..., thread_id=...)`)."""
        return await open_thread(
            graph,
            ctx,
            _storage(self),
            run_id,
            thread_id,
            compaction=compaction,
            types=types,
            expect_head=expect_head,
        )

    async def open_resume(
        self,
        graph: Graph[Any, Any],
        run_id: str,
        answer: Any = NO_ANSWER,
        types: Types = NO_TYPES,
    ) -> StoreJournal:
        """Continue `run_id` after its last committed step (see `GraphRunner.resume`)."""
        return await open_resume(graph, run_id, _storage(self), answer=answer, types=types)

    async def open_replay(
        self, graph: Graph[Any, Any], run_id: str, types: Types = NO_TYPES
    ) -> StoreJournal:
        """Replay `run_id` from its record (see `GraphRunner.replay`)."""
        return await open_replay(graph, run_id, _storage(self), types=types)

    async def acquire(self, run_id: str, *, owner: str) -> Lease:
        """Take `run_id` for `owner`, or raise `RunBusy` naming the runner that has it."""
        await anyio.lowlevel.checkpoint()
        with _leases_lock:
            held = _leases.setdefault(self, {})
            current = held.get(run_id)
            if current is not None:
                raise RunBusy(run_id, current.owner, current.expires)
            lease = held[run_id] = Lease(run_id, owner, 1, math.inf)
        return lease

    def held(self, run_id: str) -> Lease | None:
        """The lease this store holds on `run_id`, if any."""
        with _leases_lock:
            return _leases.get(self, {}).get(run_id)

    def release(self, lease: Lease) -> None:
        """Give `lease` back; nothing happens if it is not the one held."""
        with _leases_lock:
            held = _leases.get(self, {})
            if held.get(lease.run_id) == lease:
                del held[lease.run_id]

    def put_blob(self, data: bytes) -> str:
        """Store `data` by its digest (see `CheckpointStore`); this store keeps no blobs.

        Raises:
            CheckpointError: always; a store of one's own implements blobs to keep files.
        """
        raise CheckpointError(
            f"{type(self).__name__} keeps no blobs: implement put_blob and get_blob"
        )

    async def get_blob(self, digest: str) -> bytes:
        """The bytes stored under `digest`; this store keeps no blobs.

        Raises:
            CheckpointError: always; a store of one's own implements blobs to keep files.
        """
        raise CheckpointError(
            f"{type(self).__name__} keeps no blobs: implement put_blob and get_blob"
        )


class WriterStore(StoreBase, ABC):
    """What the stores with a writer thread share: the leases taken here, the writes
    refused by run until a flush reports them, and `flush`, `held` and `fork`.

    `label` names the store in errors ("SQLite store 'runs.db'"); a subclass
    implements `_barrier`, which waits until what is queued is committed.

    The owners of the leases taken here are registered with this process's
    live owners (`_lease.hold`) from before the take until the release is
    written, the lease is lost, or the store stops (`_stop`): a lease whose
    release could not be written is then free at once for the other stores
    of this process.
    """

    def __init__(self, label: str) -> None:
        self._label = label
        self._held: dict[str, Lease] = {}  # the leases taken here, as last renewed
        self._fences: dict[str, int] = {}  # their fences, kept until released: writes check them
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None  # the database failed: no more writes
        self._rejected: dict[str, Exception] = {}  # a write refused, by run, until flushed
        self._closed = False
        self._lock = threading.Lock()
        self._urgent = threading.Event()
        self._owners: Counter[str] = Counter()  # the owners registered by this store

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
        self, run_id: str, step: int, *, context: AgentContext[Any] | None = None
    ) -> str:
        """Start a new run from `step` of `run_id`; see `agentgraph.checkpoint.fork`."""
        return await fork(_storage(self), run_id, step, context=context)


def blob_digest(data: bytes) -> str:
    """The name a blob is stored under: its SHA-256 digest in hex."""
    return hashlib.sha256(data).hexdigest()


def _storage(store: StoreBase) -> CheckpointStore:
    if not isinstance(store, CheckpointStore):
        missing = [
            name
            for name in ("write", "flush", "load", "aclose")
            if not callable(getattr(store, name, None))
        ]
        raise TypeError(
            f"{type(store).__name__} subclasses StoreBase but lacks the storage methods "
            f"{', '.join(missing)} of CheckpointStore"
        )
    return store


class MemoryStore(StoreBase):
    """Keeps records in memory, encoded exactly as a durable store would keep them.

    For tests and for runs that need replay or interrupts but not crash safety.
    """

    def __init__(self) -> None:
        self._runs: dict[str, RunRecord] = {}
        self._steps: dict[str, list[StepRecord]] = {}
        self._effects: dict[str, dict[tuple[str, str], Effect]] = {}
        self._blobs: dict[str, bytes] = {}
        self._threads: dict[str, ThreadLog] = {}

    def put_blob(self, data: bytes) -> str:
        """Keep `data` under its digest and return the digest."""
        digest = blob_digest(data)
        self._blobs.setdefault(digest, bytes(data))
        return digest

    async def get_blob(self, digest: str) -> bytes:
        """The bytes kept under `digest`; `CheckpointError` when there are none."""
        await anyio.lowlevel.checkpoint()
        try:
            return self._blobs[digest]
        except KeyError:
            raise CheckpointError(f"no blob {digest!r} in the store") from None

    def write(self, records: Sequence[Record]) -> None:
        """Store `records`, all or none: a rejected write raises `CheckpointError` at once."""
        started: set[str] = set()
        for record in records:  # check first, so that a rejected write changes nothing
            if isinstance(record, RunRecord):
                if record.run_id in self._runs or record.run_id in started:
                    raise CheckpointError(f"run {record.run_id!r} is already in the store")
                started.add(record.run_id)
            elif record.run_id not in self._runs and record.run_id not in started:
                raise CheckpointError(f"a record for run {record.run_id!r}, which never started")
        for record in records:
            if isinstance(record, RunRecord):
                self._runs[record.run_id] = record
                self._steps[record.run_id] = []
                self._effects[record.run_id] = {}
                if record.thread is not None:
                    self._add_turn(record)
            elif isinstance(record, ThreadHead):
                self._move_head(record)
            elif isinstance(record, StepRecord):
                self._steps[record.run_id].append(record)
            else:
                effects = self._effects[record.run_id]
                effects.pop((record.key, record.kind), None)  # a rewrite moves to the end
                effects[(record.key, record.kind)] = record

    async def flush(self, run_id: str | None = None) -> None:
        """Nothing to wait for: `write` stored everything, or raised."""
        await anyio.lowlevel.checkpoint()

    async def load(self, run_id: str) -> RunLog | None:
        await anyio.lowlevel.checkpoint()
        run = self._runs.get(run_id)
        if run is None:
            return None
        return RunLog(run, tuple(self._steps[run_id]), tuple(self._effects[run_id].values()))

    @property
    def run_ids(self) -> tuple[str, ...]:
        """Every run in the store, oldest first."""
        return tuple(self._runs)

    def _add_turn(self, record: RunRecord) -> None:
        assert record.thread is not None
        found = self._threads.get(record.thread)
        if found is None:
            found = ThreadLog(record.thread, None, record.created, record.created)
        turn = (record.run_id, record.base)
        self._threads[record.thread] = attrs.evolve(found, runs=(*found.runs, turn))

    def _move_head(self, record: ThreadHead) -> None:
        found = self._threads.get(record.thread)
        if found is not None and found.head == record.base:
            self._threads[record.thread] = attrs.evolve(
                found, head=record.run_id, updated=record.at
            )

    async def load_thread(self, thread_id: str) -> ThreadLog | None:
        """The thread's head and turns, or None for an unknown thread."""
        await anyio.lowlevel.checkpoint()
        return self._threads.get(thread_id)

    async def thread_ids(self) -> tuple[str, ...]:
        """Every thread in the store, oldest first."""
        await anyio.lowlevel.checkpoint()
        return tuple(self._threads)

    async def delete_thread(self, thread_id: str) -> bool:
        """Forget the thread and every run of it; False when there was no such thread."""
        await anyio.lowlevel.checkpoint()
        found = self._threads.pop(thread_id, None)
        if found is None:
            return False
        for run_id, _ in found.runs:
            self._runs.pop(run_id, None)
            self._steps.pop(run_id, None)
            self._effects.pop(run_id, None)
        return True

    async def fork(
        self, run_id: str, step: int, *, context: AgentContext[Any] | None = None
    ) -> str:
        """Start a new run from `step` of `run_id`; see `fork`."""
        return await fork(self, run_id, step, context=context)


async def fork(
    store: CheckpointStore,
    run_id: str,
    step: int,
    *,
    context: AgentContext[Any] | None = None,
    new_id: str | None = None,
) -> str:
    """Copy run `run_id` up to its committed `step` into a new run and return the new id.

    `GraphRunner.resume(graph, new_id, store)` continues the copy from that
    step; `context` replaces the context the step committed. Effects of the
    steps up to that point come along (their model calls and tool results are
    not made again); later ones do not. The original run is left as it was.

    Raises:
        CheckpointError: the run is unknown, `step` was never committed, or
            `new_id` is taken.
    """
    if new_id is not None and await store.load(new_id) is not None:
        raise CheckpointError(f"run {new_id!r} is already in the store: fork to a new id")
    log = await store.load(run_id)
    if log is None:
        raise CheckpointError(f"no run {run_id!r} in the store")
    checked(log)
    cut = next((i for i, r in enumerate(log.steps) if r.step == step), None)
    if cut is None:
        committed = ", ".join(str(r.step) for r in log.steps) or "none"
        raise CheckpointError(
            f"step {step} of run {run_id!r} was never committed (committed steps: {committed})"
        )
    fresh = new_id or new_run_id()
    last = log.steps[cut]
    started = RunRecord(
        fresh,
        log.run.graph,
        log.run.structure,
        log.run.context,
        time.time(),
        parent=run_id,
        parent_step=step,
    )
    steps = [attrs.evolve(r, run_id=fresh) for r in log.steps[:cut]]
    data = full_context(context, store.put_blob) if context is not None else last.context
    steps.append(attrs.evolve(last, run_id=fresh, context=data))
    # Effects of steps that had started by the cut; the copy redoes everything after it.
    effects = [
        attrs.evolve(e, run_id=fresh) for e in log.effects if effect_step(e.key) <= last.steps
    ]
    store.write((started, *steps, *effects))
    await store.flush(run_id=fresh)
    return fresh
