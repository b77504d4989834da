"""The `CheckpointStore` protocol, `StoreBase`, and `fork`.

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
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

import anyio.lowlevel
import attrs

from .._core._context import AgentContext
from .._core._errors import CheckpointError
from .._core._json import NO_TYPES, Types
from .._core._runner import ANY_HEAD, NO_ANSWER, Head, new_run_id
from ._codec import full_context
from ._lease import Lease, RunBusy
from ._records import Record, RunLog, RunRecord, checked, effect_step
from ._resume import open_replay, open_resume, open_run
from ._threads import open_thread
from ._versions import onto, started

if TYPE_CHECKING:
    from .._core._graph import Graph
    from .._core._versions import GraphVersions
    from ._compaction import Compaction
    from ._journal import StoreJournal

__all__ = ("CheckpointStore", "StoreBase", "blob_digest", "fork")


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
        *,
        versions: GraphVersions | None = None,
    ) -> StoreJournal:
        """Continue `run_id` after its last committed step (see `GraphRunner.resume`);
        `versions` chooses the graph version it continues on."""
        return await open_resume(
            graph, run_id, _storage(self), answer=answer, types=types, versions=versions
        )

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


async def fork(
    store: CheckpointStore,
    run_id: str,
    step: int,
    *,
    context: AgentContext[Any] | None = None,
    new_id: str | None = None,
    graph: Graph[Any, Any] | None = None,
) -> str:
    """Copy run `run_id` up to its committed `step` into a new run and return the new id.

    `GraphRunner.resume(graph, new_id, store)` continues the copy from that
    step; `context` replaces the context the step committed. Effects of the
    steps up to that point come along (their model calls and tool results are
    not made again); later ones do not. The original run is left as it was.

    `graph` moves the copy onto another version of the run's graph: first the
    copied steps are replayed on `graph` against the record (model calls,
    tool calls and answers from it, as `GraphRunner.replay` does), and only
    when they run the same is anything written. The copy records that graph's
    version, fingerprint and patches (and the version it was forked from), its
    steps carry the node names of that version (`renamed=`), so it resumes on
    that version and `rt.patched` answers for it. Pass `context` to give it a
    context of that version's shape.

    Raises:
        CheckpointError: the run is unknown, `step` was never committed, or
            `new_id` is taken.
        ReplayDiverged: `graph` ran a copied step otherwise than the record
            (the step and the difference named); nothing was written.
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
    shape = log.run.structure if graph is None else onto(graph, log.run)
    started_record = RunRecord(
        fresh,
        log.run.graph,
        shape,
        log.run.context,
        time.time(),
        parent=run_id,
        parent_step=step,
    )
    steps = [attrs.evolve(r, run_id=fresh) for r in log.steps[: cut + 1]]
    # Effects of steps that had started by the cut; the copy redoes everything after it.
    effects = [
        attrs.evolve(e, run_id=fresh) for e in log.effects if effect_step(e.key) <= last.steps
    ]
    if graph is not None:
        # Imported here: the check replays through a StoreBase of its own.
        from ._fork_check import check_prefix, renamed_steps

        steps = renamed_steps(steps, graph, started(log.run, log.effects).version)
        await check_prefix(store, graph, started_record, steps, effects)
    if context is not None:
        steps[-1] = attrs.evolve(steps[-1], context=full_context(context, store.put_blob))
    store.write((started_record, *steps, *effects))
    await store.flush(run_id=fresh)
    return fresh
