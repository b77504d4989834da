"""`MemoryStore`, and the one place the package imports the store names from.

The `CheckpointStore` protocol, `StoreBase` and `fork` live in `_base`, the
writer-thread base of the SQLite and PostgreSQL stores in `_writer`; both are
re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio.lowlevel
import attrs

from .._core._context import AgentContext
from .._core._errors import CheckpointError
from ._base import CheckpointStore, StoreBase, blob_digest, fork
from ._base import _storage as _storage
from ._records import Effect, Record, RunLog, RunRecord, StepRecord, ThreadHead, ThreadLog
from ._writer import BlobWrite, LeaseRelease, WriterStore

if TYPE_CHECKING:
    from .._core._graph import Graph

__all__ = (
    "BlobWrite",
    "CheckpointStore",
    "LeaseRelease",
    "MemoryStore",
    "StoreBase",
    "WriterStore",
    "blob_digest",
    "fork",
)


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
        self,
        run_id: str,
        step: int,
        *,
        context: AgentContext[Any] | None = None,
        graph: Graph[Any, Any] | None = None,
    ) -> str:
        """Start a new run from `step` of `run_id` (onto `graph`'s version if given); see `fork`."""
        return await fork(self, run_id, step, context=context, graph=graph)
