"""What runs in each Ray actor of a batch: many runs at once on one event loop.

The actor imports the graph by the reference its caller gave (`"module:attr"`;
rows carry data only, never the name of code to run), opens its own store
from a picklable factory, and keeps one event loop in a thread for its whole
life, so the store, the rate-limit gate and the concurrency limit serve every
batch it is given.

With a store, a row's run id is fixed by the batch, so a row is run at most
once to the end: a finished run is read back, an interrupted one resumed, and
one whose lease another runner holds is waited for until that lease lapses.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import anyio

from .._core._context import AgentContext
from .._core._errors import CheckpointError, Interrupted, RunBusy, UsageError
from .._core._graph import Graph
from .._core._json import dumps
from .._core._runner import GraphRunner, RunHandle, as_graph
from .._util._redact import masked
from ..checkpoint._codec import decode_context
from ..checkpoint._records import RunLog
from ..checkpoint._resume import decode_contexts
from ..checkpoint._store import CheckpointStore, StoreBase, _storage
from ..llm._messages import Usage

__all__ = ("BatchWorker", "import_graph", "row_result")

StoreFactory = Callable[[], StoreBase]
T = TypeVar("T")


async def _limiter(concurrency: int) -> anyio.CapacityLimiter:
    return anyio.CapacityLimiter(concurrency)


def import_graph(reference: str) -> Graph[Any, Any]:
    """The graph (or node) at `reference`, written `"package.module:attribute"`."""
    module_name, colon, attribute = reference.partition(":")
    if not colon or not module_name or not attribute:
        raise UsageError(
            f"a graph reference reads 'package.module:attribute', not {reference!r}: the "
            "module is imported in every worker and the attribute is the graph"
        )
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise UsageError(
            f"the graph reference {reference!r} names module {module_name!r}, which cannot be "
            f"imported here ({type(error).__name__}: {error}): it must be importable on every "
            "machine of the cluster"
        ) from error
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise UsageError(f"the graph reference {reference!r}: {part!r} is not defined there")
        target = getattr(target, part)
    return as_graph(target)


def row_result(row: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """An output row: the input row's identity with the outcome's columns, all present."""
    out: dict[str, Any] = {
        "index": row["index"],
        "key": row["key"],
        "run_id": row["run_id"],
        "status": "failed",
        "origin": "new",
        "output": None,
        "error_type": None,
        "error": None,
        "input_tokens": 0,
        "output_tokens": 0,
        "requests": 0,
        "steps": 0,
        "seconds": 0.0,
    }
    out.update(fields)
    return out


class _Loop:
    """An asyncio event loop in a daemon thread, for the actor's whole life.

    Not anyio's blocking portal: its thread is not a daemon, so a worker Ray
    stops (a lost node, the end of a batch) would wait for it forever. Ray's
    workers run asyncio, so the runs do too.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="agentgraph-batch", daemon=True
        )
        self.thread.start()

    def call(self, fn: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        """Run `fn(*args)` on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(fn(*args), self.loop).result()


class _Raced(Exception):
    """Another runner started the row's run between our look and our start: look again."""


class BatchWorker:
    """The callable class each actor of the pool holds (see `run_batch`)."""

    def __init__(
        self,
        graph: str,
        runner: GraphRunner,
        store: StoreFactory | None,
        concurrency: int,
        lease_wait: float,
    ) -> None:
        self._graph = import_graph(graph)
        self._runner = runner
        self._types = runner.types.with_types(*self._graph.data_types())
        self._lease_wait = lease_wait
        self._loop = _Loop()
        self._limiter = self._loop.call(_limiter, concurrency)
        self._store = None if store is None else self._open(store)

    @staticmethod
    def _open(factory: StoreFactory) -> StoreBase:
        store = factory()
        if not isinstance(store, StoreBase) or not isinstance(store, CheckpointStore):
            raise UsageError(
                f"the store factory returned {type(store).__name__}, not a checkpoint store "
                "(a StoreBase subclass with write, flush, load and aclose)"
            )
        return store

    def __call__(self, batch: Any) -> Any:
        import pyarrow

        rows = batch.to_pylist()
        results = self._loop.call(self._run_rows, rows)
        return pyarrow.Table.from_pylist(results)

    async def _run_rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = [{}] * len(rows)

        async def one(i: int) -> None:
            async with self._limiter:
                results[i] = await self._row(rows[i])

        async with anyio.create_task_group() as tg:
            for i in range(len(rows)):
                tg.start_soon(one, i)
        return results

    async def _row(self, row: dict[str, Any]) -> dict[str, Any]:
        """One row's outcome; a failure is a row of its own and never fails the batch."""
        started = time.perf_counter()
        try:
            ctx, origin, steps = await self._settle(row)
            output = dumps(ctx.input)
        except Exception as error:
            # A run error carries the last good context: its usage is what the row spent.
            last = getattr(error, "context", None)
            usage = last.usage if isinstance(last, AgentContext) else Usage()
            step = getattr(error, "step", 0)
            return row_result(
                row,
                status="interrupted" if isinstance(error, Interrupted) else "failed",
                error_type=type(error).__name__,
                error=masked(str(error)),
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                requests=usage.requests,
                steps=step if isinstance(step, int) else 0,
                seconds=time.perf_counter() - started,
            )
        usage = ctx.usage
        return row_result(
            row,
            status="finished",
            origin=origin,
            output=output,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            requests=usage.requests,
            steps=steps,
            seconds=time.perf_counter() - started,
        )

    async def _settle(self, row: dict[str, Any]) -> tuple[AgentContext[Any], str, int]:
        """Run, resume or read back the row's run; wait out another runner's lease."""
        if self._store is None:
            return await self._fresh(row, None)
        deadline = time.time() + self._lease_wait
        while True:
            try:
                return await self._attempt(row, self._store)
            except _Raced:
                continue
            except RunBusy as busy:
                if busy.expires > deadline:
                    raise
                await anyio.sleep(min(max(0.05, busy.expires - time.time()), 1.0))

    async def _attempt(
        self, row: dict[str, Any], store: StoreBase
    ) -> tuple[AgentContext[Any], str, int]:
        storage = _storage(store)
        log = await storage.load(row["run_id"])
        if log is None:
            try:
                return await self._fresh(row, store)
            except CheckpointError as error:
                # Only a run id taken before this run started is a race; a store that
                # failed during the run (`.context` set) ends the row like any failure.
                if error.context is not None or await storage.load(row["run_id"]) is None:
                    raise
                raise _Raced() from error
        if self._finished(log):
            return decode_contexts(log, types=self._types)[-1], "stored", log.steps[-1].steps
        handle = RunHandle()
        ctx = await self._runner.resume(self._graph, row["run_id"], store, handle=handle)
        return ctx, "resumed", handle.step

    async def _fresh(
        self, row: dict[str, Any], store: StoreBase | None
    ) -> tuple[AgentContext[Any], str, int]:
        ctx = decode_context(row["input"], None, self._types)
        handle = RunHandle()
        out = await self._runner.run(
            self._graph, ctx, handle=handle, store=store, run_id=row["run_id"]
        )
        return out, "new", handle.step

    def _finished(self, log: RunLog) -> bool:
        """True when the run's last commit left the root graph for its finish."""
        if not log.steps:
            return False
        last = log.steps[-1]
        return last.path == (self._graph.name,) and last.next == self._graph.finish.name
