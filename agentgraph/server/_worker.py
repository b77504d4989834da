"""Workers: claim queued runs and run them with `GraphRunner` against the checkpoint store.

A `Worker` lives on a thread of its own with its own event loop, so graph
code never runs on the API's loop and a blocking node delays only the runs
of its worker. It claims runs up to its concurrency, renews its claims while
they go on, and watches for cancels. Each step's `values`, `updates` and
`messages` go to the run's event log in the store; the run's end sets its
status and its thread's. A run whose claim lapsed (its worker died) is
claimed again and resumed from its last committed step.

Stopping (`stop`) ends claiming at once; runs going on get `grace` seconds
to finish and are then left to another worker, their claims lapsing.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.to_thread

from .._context import AgentContext
from .._errors import GraphCancelled, GraphTimeout, Interrupted
from .._events import StepInfo
from .._graph import Graph
from .._node import Node
from .._runner import GraphRunner, RunHandle
from ..checkpoint._lease import LEASE_TERM
from ..checkpoint._postgres import PostgresStore
from ..checkpoint._sqlite import SQLiteStore
from ..tracing._records import plain
from ._live import LiveEvents
from ._mapping import context_from_input, interrupt_id, values_of
from ._queue import CLAIM_TERM, QueuedRun, RunQueue
from ._signals import Signal

__all__ = ("Worker",)

_POLL = 0.5
"""Seconds an idle worker waits between looks at the queue when nothing wakes it."""
_WATCH = 0.05
"""Seconds between looks for cancels of the runs going on."""


class _Emitter:
    """Turns a run's steps into its stored events."""

    def __init__(self, queue: RunQueue, run: QueuedRun, shown: int) -> None:
        self.queue = queue
        self.run = run
        self.shown = shown
        """How many of the thread's messages the clients have seen already."""
        self.modes = frozenset(run.kwargs.get("stream_mode") or ())
        self.live = LiveEvents(
            run.run_id, self.emit, events="events" in self.modes, partials="messages" in self.modes
        )
        """The runtime's events the run's stream modes ask for, as a sink."""
        self._writing = anyio.Lock()

    def messages(self, fresh: list[Any], meta: dict[str, Any]) -> list[tuple[str, Any]]:
        """`fresh` messages as `messages` (tuple) events, and framed when `messages` is asked."""
        events: list[tuple[str, Any]] = [("messages", [message, meta]) for message in fresh]
        if "messages" in self.modes:
            for message in fresh:
                events.append(("messages/metadata", {message["id"]: {"metadata": meta}}))
                events.append(("messages/complete", [message]))
        return events

    async def emit(self, events: list[tuple[str, Any]]) -> None:
        # One write at a time: a run's events are numbered on from the last one stored.
        async with self._writing:
            await anyio.to_thread.run_sync(self.queue.add_events, self.run.run_id, events)

    async def step(self, step: StepInfo, node: Node[Any, Any], ctx: AgentContext[Any]) -> None:
        if step.depth != 0:
            return
        thread_id = self.run.thread_id
        values = values_of(ctx, thread_id)
        fresh = values["messages"][self.shown :]
        self.shown = len(values["messages"])
        meta = {
            "langgraph_node": node.name,
            "langgraph_step": step.index,
            "run_id": self.run.run_id,
        }
        events: list[tuple[str, Any]] = [
            ("values", values),
            ("updates", {node.name: {"messages": fresh}}),
        ]
        events.extend(self.messages(fresh, meta))
        await self.emit(events)


class Worker:
    """Runs queued runs of `graphs` from the queue at `path`, on a thread of its own."""

    def __init__(
        self,
        path: str,
        graphs: Mapping[str, Graph[Any, Any]],
        *,
        runner: GraphRunner | None = None,
        concurrency: int = 10,
        run_timeout: float | None = None,
        grace: float = 30.0,
        name: str | None = None,
        claim_term: float = CLAIM_TERM,
        schema: str = "agentgraph",
    ) -> None:
        self.path = path
        self.graphs = dict(graphs)
        self.runner = runner or GraphRunner()
        self.concurrency = concurrency
        self.run_timeout = run_timeout
        self.grace = grace
        self.claim_term = claim_term
        self.schema = schema
        self.name = name or f"worker-{uuid.uuid4().hex[:12]}"
        self._wake = threading.Event()
        self._woken: Signal | None = None
        """Pokes the claim loop while it waits; set while the loop runs."""
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._handles: dict[str, RunHandle] = {}
        self._drained: anyio.Event | None = None
        """Set when the last run ends, once the worker is stopping."""
        self.error: BaseException | None = None

    def start(self) -> None:
        """Start the worker's thread and loop."""
        self._thread = threading.Thread(target=self._main, name=self.name, daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Look at the queue now (a run was queued, or one of this worker's ended)."""
        self._wake.set()
        woken = self._woken
        if woken is not None:
            with contextlib.suppress(RuntimeError):  # the worker's loop has just closed
                woken.poke()

    def stop(self, *, wait: bool = True) -> None:
        """Stop claiming; runs going on get the grace period, then are left to others."""
        self._stopping.set()
        self.wake()
        if wait and self._thread is not None:
            self._thread.join()

    def _main(self) -> None:
        try:
            anyio.run(self._serve)
        except BaseException as exc:  # reported to whoever stops the worker
            self.error = exc

    async def _serve(self) -> None:
        queue = RunQueue(self.path, schema=self.schema)
        # The run's checkpoint lease lapses before the claim, so a run claimed again can resume.
        term = min(LEASE_TERM, self.claim_term * 2 / 3)
        store: Any
        if queue.postgres:
            store = PostgresStore(self.path, schema=self.schema, lease_term=term)
            listener = threading.Thread(
                target=queue.listen, args=(self.wake, self._stopping), daemon=True
            )
            listener.start()
        else:
            store = SQLiteStore(self.path, lease_term=term)
            listener = None
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._watch, queue)
                await self._claim_loop(queue, store, tasks)
                if self._handles:
                    self._drained = anyio.Event()
                    with anyio.move_on_after(self.grace):
                        await self._drained.wait()
                tasks.cancel_scope.cancel()
        finally:
            self._stopping.set()
            with anyio.CancelScope(shield=True):
                await store.aclose()
                if listener is not None:
                    await anyio.to_thread.run_sync(listener.join)
            queue.close()

    async def _claim_loop(self, queue: RunQueue, store: Any, tasks: Any) -> None:
        self._woken = woken = Signal()
        try:
            while not self._stopping.is_set():
                self._wake.clear()
                free = self.concurrency - len(self._handles)
                claimed = await anyio.to_thread.run_sync(self._claim, queue, free) if free else []
                for run in claimed:
                    handle = self._handles[run.run_id] = RunHandle()
                    tasks.start_soon(self._execute, queue, store, run, handle)
                if claimed or self._wake.is_set():
                    continue
                await woken.wait(_POLL)
        finally:
            self._woken = None

    def _claim(self, queue: RunQueue, count: int) -> list[QueuedRun]:
        return queue.claim(self.name, count, term=self.claim_term)

    def _renew(self, queue: RunQueue, run_ids: tuple[str, ...]) -> None:
        queue.renew(self.name, run_ids, term=self.claim_term)

    async def _watch(self, queue: RunQueue) -> None:
        """Cancel the runs a client asked to cancel, and renew this worker's claims."""
        since_renewal = 0.0
        while True:
            await anyio.sleep(_WATCH)
            running = tuple(self._handles)
            if not running:
                continue
            for run_id in await anyio.to_thread.run_sync(queue.cancels, running):
                handle = self._handles.get(run_id)
                if handle is not None:
                    handle.cancel()
            since_renewal += _WATCH
            if since_renewal >= self.claim_term / 3:
                since_renewal = 0.0
                await anyio.to_thread.run_sync(self._renew, queue, running)

    async def _execute(
        self, queue: RunQueue, store: Any, run: QueuedRun, handle: RunHandle
    ) -> None:
        try:
            await _Execution(self, queue, store, run, handle).go()
        finally:
            del self._handles[run.run_id]
            if not self._handles and self._drained is not None:
                self._drained.set()
            self.wake()  # a place is free: claim the next run now


class _Execution:
    """One claimed run, from its first context (or its resume) to its end in the queue."""

    def __init__(
        self, worker: Worker, queue: RunQueue, store: Any, run: QueuedRun, handle: RunHandle
    ) -> None:
        self.worker = worker
        self.queue = queue
        self.store = store
        self.run = run
        self.handle = handle

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args)

    async def go(self) -> None:
        run, queue = self.run, self.queue
        graph = self.worker.graphs[run.graph_id]
        thread = await self._call(queue.thread, run.thread_id)
        shown = len(thread.state.get("messages", [])) if thread is not None else 0
        emitter = _Emitter(queue, run, shown)
        runner = self.worker.runner.evolve(
            on_step=(*self.worker.runner.on_step, emitter.step),
            sinks=(
                (*self.worker.runner.sinks, emitter.live)
                if emitter.live.wants
                else self.worker.runner.sinks
            ),
            timeout=self.worker.run_timeout,
        )
        try:
            try:
                out = await self._start(runner, graph, thread)
            finally:
                # The run's leases (its own and its thread's) are given back through the
                # store's writer: once committed, the thread's next run, claimed as soon as
                # this one is finished in the queue, finds the thread free.
                await self.store.flush(self.run.run_id)
        except Interrupted as stopped:
            await self._interrupted(emitter, stopped)
        except GraphCancelled:
            # The thread keeps the values of its last finished turn: a cancelled
            # turn never became the thread's head.
            await self._call(queue.finish, run.run_id, run.thread_id, "interrupted", {})
            cancels = await self._call(queue.cancels, [run.run_id])
            if cancels.get(run.run_id) == "rollback":
                await self._call(queue.delete_run, run.run_id)
        except GraphTimeout as timeout:
            await emitter.emit([("error", _error(timeout))])
            await self._call(queue.finish, run.run_id, run.thread_id, "timeout", {})
        except Exception as error:
            await emitter.emit([("error", _error(error))])
            await self._call(queue.finish, run.run_id, run.thread_id, "error", {"status": "error"})
        else:
            values = values_of(out, run.thread_id)
            changes: dict[str, Any] = {"state": values, "interrupts": [], "waiting_run": None}
            await self._call(queue.finish, run.run_id, run.thread_id, "success", changes)
        if run.kwargs.get("on_completion") == "delete":
            await self._call(queue.forget_thread, run.thread_id)

    async def _start(self, runner: GraphRunner, graph: Graph[Any, Any], thread: Any) -> Any:
        run, store = self.run, self.store
        command = run.kwargs.get("command") or {}
        # A run started afresh runs as the agentgraph run of its own id, unrecorded.
        graph_run = run.graph_run or run.run_id
        if run.attempt > 1 and await store.load(graph_run) is not None:
            # Claimed again after its worker stopped: go on from the last committed step.
            return await runner.resume(graph, graph_run, store, handle=self.handle)
        if "resume" in command and thread is not None and thread.waiting_run:
            await self._call(self.queue.set_graph_run, run.run_id, thread.waiting_run)
            return await runner.resume(
                graph, thread.waiting_run, store, answer=command["resume"], handle=self.handle
            )
        ctx = context_from_input(run.kwargs.get("input"))
        return await runner.run(
            graph,
            ctx,
            handle=self.handle,
            store=store,
            run_id=run.run_id,
            thread_id=run.thread_id,
        )

    async def _interrupted(self, emitter: _Emitter, stopped: Interrupted) -> None:
        run = self.run
        values = values_of(stopped.context, run.thread_id)
        interrupts = [
            {"id": interrupt_id(stopped.run_id, stopped.step), "value": plain(stopped.question)}
        ]
        fresh = values["messages"][emitter.shown :]
        await emitter.emit(
            [
                ("updates", {"__interrupt__": interrupts}),
                ("values", {**values, "__interrupt__": interrupts}),
                *emitter.messages(fresh, {"run_id": run.run_id}),
            ]
        )
        changes = {
            "status": "interrupted",
            "state": values,
            "interrupts": interrupts,
            "waiting_run": stopped.run_id,
        }
        await self._call(self.queue.finish, run.run_id, run.thread_id, "success", changes)


def _error(error: BaseException) -> dict[str, Any]:
    return {"error": type(error).__name__, "message": str(error)}
