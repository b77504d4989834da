"""Workers: claim queued runs and run them with `GraphRunner` against the checkpoint store.

A `Worker` lives on a thread of its own with its own event loop, so graph
code never runs on the API's loop and a blocking node delays only the runs
of its worker. It claims runs up to its concurrency, renews its claims while
they go on, and cancels a run as soon as its cancel is announced (`RunQueue.listen`:
LISTEN/NOTIFY on PostgreSQL, a signal within the process on SQLite); a slow look
at the queue's cancel marks stands in for an announcement lost. Each step's `values`, `updates` and
`messages` go to the run's event log in the store; the run's end sets its
status and its thread's. A run whose claim lapsed (its worker died) is
claimed again and resumed from its last committed step.

Stopping (`stop`) ends claiming at once; runs going on get `grace` seconds
to finish and are then left to another worker, their claims lapsing.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from .._core._errors import GraphCancelled, GraphTimeout, Interrupted
from .._core._errors_threads import ThreadMoved
from .._core._graph import Graph
from .._core._runner import GraphRunner, RunHandle
from ..checkpoint._lease import LEASE_TERM
from ..checkpoint._postgres import PostgresStore
from ..checkpoint._sqlite import SQLiteStore
from ..checkpoint._upgrades import resume_problem
from ..tracing._records import plain
from ._emitter import RunEmitter
from ._flow import FlowLimits
from ._heartbeats import Heartbeat
from ._logs import LOG, run_extra
from ._mapping import interrupt_id, run_context, takes_text
from ._metrics import claim_waits
from ._queue import CLAIM_TERM, QueuedRun, RunQueue
from ._retention import SWEEP, Retention
from ._scheduler import Scheduler
from ._signals import Signal
from ._turns import Turns, closed_calls, run_checkpoint
from ._versions import claimable, run_graph, run_versions
from ._webhook_settings import WebhookSettings
from ._webhooks import deliver_webhooks

__all__ = ("Worker",)

_POLL = 0.5
"""Seconds an idle worker waits between looks at the queue when nothing wakes it."""
CANCEL_POLL = 1.0
"""Seconds between looks at the queue for cancels of the runs going on, should an
announcement of one be lost (a listener reconnecting, a cancel from another SQLite process)."""


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
        cancel_poll: float = CANCEL_POLL,
        schema: str = "agentgraph",
        webhooks: WebhookSettings | None = None,
        limits: FlowLimits | None = None,
        on_claimed: Callable[[Sequence[float]], None] | None = None,
        run_retention: float | None = None,
        sweep_every: float = SWEEP,
    ) -> None:
        self.path = path
        self.limits = limits or FlowLimits()
        """The limits its claims keep to (`FlowLimits`): give every worker the same."""
        self.on_claimed = on_claimed
        """Called with the seconds each run first claimed waited once due (metrics)."""
        self.run_retention = run_retention
        """Seconds an ended run is kept (None: kept with its thread), see `Retention`."""
        self.sweep_every = sweep_every
        """Seconds between sweeps of expired threads and old runs."""
        self.webhooks = webhooks or WebhookSettings()
        self.graphs = dict(graphs)
        self.runner = runner or GraphRunner()
        self.concurrency = concurrency
        self.run_timeout = run_timeout
        self.grace = grace
        self.claim_term = claim_term
        self.cancel_poll = cancel_poll
        self.schema = schema
        self.name = name or f"worker-{uuid.uuid4().hex[:12]}"
        self.claims = claimable(self.graphs, self.runner.versions)
        """The runs this worker claims: those of graph versions it can resume."""
        self._wake = threading.Event()
        self._woken: Signal | None = None
        """Pokes the claim loop while it waits; set while the loop runs."""
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._handles: dict[str, RunHandle] = {}
        self._loop: anyio.lowlevel.EventLoopToken | None = None
        """The worker's event loop, for cancels announced on the listener's thread."""
        self._unheld: collections.deque[str] = collections.deque(maxlen=256)
        """The latest cancels announced for runs this worker does not run, should one of
        them be a run it has just claimed and not yet started."""
        self._drained: anyio.Event | None = None
        """Set when the last run ends, once the worker is stopping."""
        self.error: BaseException | None = None
        self.scheduler = Scheduler(path, name=self.name, schema=schema)
        """Fires the crons' ticks as runs, beside the claim loop."""

    def start(self) -> None:
        """Start the worker's thread and loop."""
        self._thread = threading.Thread(target=self._main, name=self.name, daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Look at the queue and the crons now (a run was queued, or a cron changed)."""
        self._look()
        self.scheduler.wake()

    def _look(self) -> None:
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
        else:
            store = SQLiteStore(self.path, lease_term=term)
        heartbeat = await anyio.to_thread.run_sync(Heartbeat, queue, self.name)
        retention = await anyio.to_thread.run_sync(Retention, queue)
        self._loop = anyio.lowlevel.current_token()
        listener = threading.Thread(
            target=queue.listen, args=(self.wake, self._announced, self._stopping), daemon=True
        )
        listener.start()
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._renew_claims, queue)
                tasks.start_soon(self._poll_cancels, queue)
                tasks.start_soon(self.scheduler.serve, queue, self._stopping, self._look)
                tasks.start_soon(deliver_webhooks, queue, self.webhooks, self.name)
                tasks.start_soon(heartbeat.serve, lambda: len(self._handles))
                tasks.start_soon(retention.serve, store, self.run_retention, self.sweep_every)
                await self._claim_loop(queue, store, tasks)
                if self._handles:
                    self._drained = anyio.Event()
                    with anyio.move_on_after(self.grace):
                        await self._drained.wait()
                tasks.cancel_scope.cancel()
        finally:
            self._stopping.set()
            with anyio.CancelScope(shield=True):
                with contextlib.suppress(Exception):  # the database may be what failed
                    await anyio.to_thread.run_sync(heartbeat.stopped)
                await store.aclose()
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
                    if run.cancel is not None or run.run_id in self._unheld:
                        handle.cancel()
                    tasks.start_soon(self._execute, queue, store, run, handle)
                if claimed or self._wake.is_set():
                    continue
                await woken.wait(_POLL)
        finally:
            self._woken = None

    def _claim(self, queue: RunQueue, count: int) -> list[QueuedRun]:
        claimed = queue.claim(
            self.name, count, term=self.claim_term, only=self.claims, limits=self.limits
        )
        if claimed and self.on_claimed is not None:
            self.on_claimed(claim_waits(queue, claimed))
        for run in claimed:
            LOG.info("run claimed", extra=run_extra(run, worker=self.name, attempt=run.attempt))
        return claimed

    def _renew(self, queue: RunQueue, run_ids: tuple[str, ...]) -> None:
        queue.renew(self.name, run_ids, term=self.claim_term)

    def _announced(self, run_id: str) -> None:
        """Cancel `run_id` now if this worker runs it (called on the listener's thread)."""
        if self._loop is None:
            return
        with contextlib.suppress(RuntimeError):  # the worker's loop has ended
            anyio.from_thread.run_sync(self._cancel_announced, run_id, token=self._loop)

    def _cancel_announced(self, run_id: str) -> None:
        if run_id in self._handles:
            self._cancel(run_id)
        else:
            self._unheld.append(run_id)

    def _cancel(self, run_id: str) -> None:
        handle = self._handles.get(run_id)
        if handle is not None:
            handle.cancel()

    async def _poll_cancels(self, queue: RunQueue) -> None:
        """Cancel the runs marked cancelled whose announcement did not arrive."""
        while True:
            await anyio.sleep(self.cancel_poll)
            running = tuple(self._handles)
            if running:
                for run_id in await anyio.to_thread.run_sync(queue.cancels, running):
                    self._cancel(run_id)

    async def _renew_claims(self, queue: RunQueue) -> None:
        """Renew this worker's claims on its runs, three times a claim's term."""
        while True:
            await anyio.sleep(self.claim_term / 3)
            running = tuple(self._handles)
            if running:
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
            self._look()  # a place is free: claim the next run now


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
        self.turns: Turns
        self.emitter: RunEmitter
        self.start: Any = None
        """The thread's checkpoint the run goes on from."""
        self.graph_run = run.graph_run or run.run_id
        """The agentgraph run this run runs."""

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args)

    async def go(self) -> None:
        run, queue = self.run, self.queue
        current = self.worker.graphs[run.graph_id]
        versions = run_versions(run, self.worker.runner, current)
        graph = run_graph(run, current, versions)
        thread = await self._call(queue.thread, run.thread_id)
        emitter = self.emitter = await RunEmitter.open(
            queue, run, thread, typed=not takes_text(graph.input_type)
        )
        runner = self.worker.runner.evolve(
            on_step=(*self.worker.runner.on_step, emitter.step),
            sinks=(
                (*self.worker.runner.sinks, emitter.live)
                if emitter.live.wants
                else self.worker.runner.sinks
            ),
            timeout=self.worker.run_timeout,
            versions=versions,
        )
        self.turns = Turns(queue, self.store, runner.types.with_types(*graph.data_types()))
        refused = await self._refused(runner, graph, thread)
        if refused is not None:
            await emitter.emit([("error", {"error": "ResumeError", "message": refused})])
            await self._end("error", {"status": "error"})
            return
        try:
            try:
                out = await self._start(runner, graph, thread)
            except BaseException:
                # The run's leases (its own and its thread's) are given back through the
                # store's writer: once committed, the thread's next run, claimed as soon as
                # this one is finished in the queue, finds the thread free. A run that
                # finished gave them back with its last records, and waited for those.
                await self.store.flush(self.run.run_id)
                raise
        except Interrupted as stopped:
            await self._interrupted(emitter, stopped)
        except GraphCancelled as cancelled:
            await self._cancelled(emitter, cancelled)
        except GraphTimeout as timeout:
            await emitter.emit([("error", _error(timeout))])
            await self._end("timeout", {})
        except Exception as error:
            LOG.warning(
                "run failed",
                exc_info=error,
                extra=run_extra(run, worker=self.worker.name, error=type(error).__name__),
            )
            await emitter.emit([("error", _error(error))])
            await self._end("error", {"status": "error"})
        else:
            values = emitter.values(out)
            changes: dict[str, Any] = {"state": values, "interrupts": [], "waiting_run": None}
            checkpoint = self._checkpoint(values, emitter, head=self.graph_run)
            await self._end("success", changes, checkpoint)
        if run.kwargs.get("on_completion") == "delete":
            await self._call(queue.forget_thread, run.thread_id)
            await self._call(self.turns.history.delete, run.thread_id)
            # Its turns in the checkpoint store go at the next sweep.
            await self._call(Retention(queue).forget, run.thread_id)

    async def _end(
        self, status: str, changes: dict[str, Any], checkpoint: dict[str, Any] | None = None
    ) -> None:
        """Finish the run in the queue with its thread's `checkpoint`, in one transaction;
        a run a client asked to roll back is deleted instead, whatever it reached (its
        end, an interrupt), and its thread set back to the checkpoint before it (the
        thread's next run makes that the agentgraph head again)."""
        run = self.run
        end = functools.partial(
            self.turns.history.end, run.run_id, run.thread_id, status, changes, checkpoint
        )
        await self._call(end)
        LOG.info("run ended", extra=run_extra(run, worker=self.worker.name, status=status))

    def _checkpoint(self, values: dict[str, Any], emitter: RunEmitter, **more: Any) -> Any:
        """The thread's checkpoint for the run's end or its interrupt."""
        return run_checkpoint(self.run, self.start, values, node=emitter.node, **more)

    def _resumes(self, thread: Any) -> str | None:
        """The stored run this run resumes, if it resumes one (see `_start`)."""
        run = self.run
        if run.graph_run is not None:
            return run.graph_run
        command = run.kwargs.get("command") or {}
        if "resume" in command and thread is not None and thread.waiting_run:
            return str(thread.waiting_run)
        return None

    async def _refused(
        self, runner: GraphRunner, graph: Graph[Any, Any], thread: Any
    ) -> str | None:
        """Why this worker cannot resume the run's stored run, or None (also for a new run).

        The claim took only a version this worker has; what is left is what
        the stored run needs of it (its nodes, its migrations). Recording the
        version the run goes on at is done here too, so its next resume is
        claimed by a worker that has that version.
        """
        run = self.run
        ran_on = run.graph_version if run.resume_policy == "pinned" else graph.version
        resumed = self._resumes(thread)
        if resumed is not None and await self.store.load(resumed) is not None:
            problem = await resume_problem(
                graph, resumed, self.store, versions=runner.versions, types=runner.types
            )
            if problem is not None:
                return f"run {resumed!r} cannot be resumed on this server: {problem}"
        if ran_on != run.graph_version:
            await self._call(self.queue.set_graph_version, run.run_id, ran_on)
        return None

    async def _start(self, runner: GraphRunner, graph: Graph[Any, Any], thread: Any) -> Any:
        run, store = self.run, self.store
        command = run.kwargs.get("command") or {}
        self.start = start = await self.turns.start_of(run)
        if start is not None:  # a run from an earlier checkpoint has seen fewer messages
            self.emitter.start_from(start.values)
        if run.graph_run is not None and await store.load(run.graph_run) is not None:
            # Claimed again after its worker stopped: go on from the last committed step.
            return await runner.resume(graph, run.graph_run, store, handle=self.handle)
        if "resume" in command and start is not None and start.waiting is not None:
            self.graph_run = await self.turns.answering(run.thread_id, start)
            await self._call(self.queue.set_graph_run, run.run_id, self.graph_run)
            return await runner.resume(
                graph, self.graph_run, store, answer=command["resume"], handle=self.handle
            )
        await self._call(self.queue.set_graph_run, run.run_id, run.run_id)
        ctx = run_context(run.kwargs, graph.input_type)
        go = functools.partial(
            runner.run,
            graph,
            ctx,
            handle=self.handle,
            store=store,
            run_id=run.run_id,
            thread_id=run.thread_id,
        )
        if start is None or start.head is not None:
            # Most runs go on from the turn the thread's head already is: the turn checks
            # that as it opens, and only a thread whose head is elsewhere is set first.
            try:
                return await go(expect_head=None if start is None else start.head)
            except ThreadMoved:
                pass
        await self.turns.go_on_from(run.thread_id, start)
        return await go()

    async def _cancelled(self, emitter: RunEmitter, cancelled: GraphCancelled) -> None:
        """End a cancelled run `interrupted`.

        Cancelled with `action="interrupt"` (a client's cancel, a double text's
        `interrupt`) after one of its steps finished, its last finished context
        becomes the thread's values and the next run goes on from it, as
        LangGraph's server keeps the steps of an interrupted run; tool calls it
        made without their results get error results saying so (what
        `repair_transcript` records), so the next model request is a valid
        conversation. Otherwise the thread keeps its values (and a question
        still waiting): a rolled back run is deleted as it ends.
        """
        run_id = self.run.run_id
        action = (await self._call(self.queue.cancels, (run_id,))).get(run_id)
        if action != "interrupt" or not emitter.stepped:
            await self._end("interrupted", {})
            return
        values = emitter.values(closed_calls(cancelled.context))
        changes: dict[str, Any] = {"state": values, "interrupts": [], "waiting_run": None}
        await self._end("interrupted", changes, self._checkpoint(values, emitter, head=None))

    async def _interrupted(self, emitter: RunEmitter, stopped: Interrupted) -> None:
        values = emitter.values(stopped.context)
        interrupts = [
            {"id": interrupt_id(stopped.run_id, stopped.step), "value": plain(stopped.question)}
        ]
        fresh = emitter.fresh(values)
        await emitter.emit(
            [
                ("updates", {"__interrupt__": interrupts}),
                ("values", {**values, "__interrupt__": interrupts}),
                *emitter.messages(fresh, {"tags": [], **emitter.meta}),
            ]
        )
        waiting = await self.turns.waiting_now(stopped.run_id)
        checkpoint = self._checkpoint(
            values, emitter, head=None, waiting=waiting, interrupts=interrupts
        )
        changes = {
            "status": "interrupted",
            "state": values,
            "interrupts": interrupts,
            "waiting_run": stopped.run_id,
        }
        await self._end("success", changes, checkpoint)


def _error(error: BaseException) -> dict[str, Any]:
    return {"error": type(error).__name__, "message": str(error)}
