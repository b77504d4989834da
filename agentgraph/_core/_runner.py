"""`GraphRunner` runs graphs: fresh, resumed from a checkpoint, or replayed from one.

Its methods check what they are given (`_runner_checks.py`), open the run's
journal, compose the run's stack of layers (`_layers.py`) and drive the run up
to the root graph's loop (`Runtime.run_graph`); how a run that did not finish
is reported, and the stream a caller enters, are in `_runner_drive.py`.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import attrs

from ._context import AgentContext
from ._dispatch import Dispatch, Sink, wanted
from ._errors import CheckpointError, GraphCancelled, GraphTimeout, RunError, UsageError
from ._events import (
    CustomEvent,
    Event,
    NodeFinished,
    NodeStarted,
    RouteChosen,
    RunFinished,
    RunStarted,
)
from ._gate import GateLayer, ModelGate
from ._graph import Graph
from ._journal import Journal, JournalSource, RemoteJournal
from ._json import Types
from ._layer_events import EventsLayer
from ._layer_journal import JournalLayer, RemoteJournalLayer
from ._layer_limits import LimitsLayer
from ._layers import GuardLayers, Stack
from ._node import Node
from ._retry import RetryPolicy
from ._run_state import Emit, _Run
from ._runner_checks import (
    _callbacks,
    _check_sink_errors,
    _guards,
    _layers,
    _maybe_async,
    _running_loop,
    _sinks,
    _source,
)
from ._runner_checks import _check_input as _check_input
from ._runner_checks import as_graph as as_graph
from ._runner_drive import EventStream, report_end, report_interrupt
from ._runtime import Interrupt, placed
from ._runtime import RunHandle as RunHandle
from ._runtime import Runtime as Runtime
from ._runtime import StepCallback as StepCallback
from ._runtime import new_run_id as new_run_id
from ._usage import Meter, UsageLimits
from ._versions import GraphVersions

if TYPE_CHECKING:
    from anyio.abc import ObjectReceiveStream


__all__ = (
    "NO_ANSWER",
    "GraphRunner",
    "RunHandle",
    "Runtime",
    "Sink",
    "StepCallback",
    "new_run_id",
)

In = TypeVar("In")
Out = TypeVar("Out")


class _NoAnswer:
    def __repr__(self) -> str:
        return "NO_ANSWER"


NO_ANSWER: Any = _NoAnswer()
"""`resume`'s default: no answer given (None is an answer)."""


class _AnyHead(enum.Enum):
    ANY = "any"


ANY_HEAD: Literal[_AnyHead.ANY] = _AnyHead.ANY
"""`expect_head=` not given: a thread's turn continues from whatever its head is."""
Head = str | None | Literal[_AnyHead.ANY]


@attrs.frozen(slots=True)
class GraphRunner:
    """Runs graphs under one policy: retries, a step cap, a timeout and step callbacks.

    A runner is immutable and may serve any number of runs at once; change a
    setting with `evolve`, which returns a new runner:
    `runner.evolve(max_steps=50)`.

    Args:
        retry: the policy for nodes that set none; transient errors only by default.
        max_steps: node executions allowed per run, nested ones included.
        timeout: seconds for the whole run; `GraphTimeout` when it elapses.
        on_step: a callback, or several, called after every step, with the context
            it returned; a subgraph's call comes after those of the steps inside it.
        sinks: callables (sync or async) that receive the events of every run:
            every event, or only those of the classes in the sink's `wants`
            attribute (a set of event classes) when it has one.
        sink_errors: `"detach"` (default) logs a sink's first error once and stops
            calling that sink for the rest of the run, which goes on; `"raise"`
            lets the error end the run.
        usage_limits: what each run may spend on model calls (`UsageLimits`);
            `UsageLimitExceeded`, with the last context, when a call would pass it.
        types: classes a resumed or replayed run may decode from its record,
            beyond agentgraph's own and those the graph's nodes declare
            (`Node.data_types`, `GraphBuilder(types=...)`).
        model_gate: admits every model call before it is sent (`ModelGate`),
            such as rate limits shared by many processes.
        guards: input, output and tool guards for every model and tool call
            of the run (`agentgraph.guards.Guards`); none by default.
        versions: the graph versions `resume` may continue a run on, and what it
            does with a run that started on another version (`GraphVersions`);
            None resumes on the graph given, after its migrations (`"latest"`).
        layers: your own layers around every effect of every run (`Layer`),
            outermost first: they see model calls, streams, tool calls,
            embeddings, `once` and `interrupt`, of nested graphs and fan-outs
            alike. A layer with `performed = True` stands below the journal.
    """

    retry: RetryPolicy = attrs.field(factory=RetryPolicy, kw_only=True)
    max_steps: int = attrs.field(default=1000, kw_only=True)
    timeout: float | None = attrs.field(default=None, kw_only=True)
    on_step: tuple[StepCallback, ...] = attrs.field(default=(), converter=_callbacks, kw_only=True)
    sinks: tuple[Sink, ...] = attrs.field(default=(), converter=_sinks, kw_only=True)
    sink_errors: Literal["detach", "raise"] = attrs.field(
        default="detach", validator=_check_sink_errors, kw_only=True
    )
    types: Types = attrs.field(factory=Types, kw_only=True)
    usage_limits: UsageLimits | None = attrs.field(default=None, kw_only=True)
    model_gate: ModelGate | None = attrs.field(default=None, kw_only=True)
    guards: GuardLayers | None = attrs.field(default=None, converter=_guards, kw_only=True)
    versions: GraphVersions | None = attrs.field(default=None, kw_only=True)
    layers: tuple[Any, ...] = attrs.field(default=(), converter=_layers, kw_only=True)
    _stacks: dict[tuple[bool, int], Stack] = attrs.field(init=False, repr=False, eq=False)
    _marked: tuple[tuple[StepCallback, bool], ...] = attrs.field(init=False, repr=False, eq=False)
    _kinds: dict[type[Any], tuple[Sink, ...]] = attrs.field(init=False, repr=False, eq=False)
    _heard: tuple[bool, bool, bool, bool, bool, bool] = attrs.field(
        init=False, repr=False, eq=False
    )

    def __attrs_post_init__(self) -> None:
        marked = tuple((cb, _maybe_async(cb)) for cb in self.on_step)
        object.__setattr__(self, "_marked", marked)
        # Which sinks take each kind of event, worked out once for every run: the
        # kinds, whether any sink picks, any event at all, and each step event.
        object.__setattr__(self, "_kinds", {})
        sinks = self.sinks
        heard = (
            any(getattr(sink, "wants", None) is not None for sink in sinks),
            any(getattr(sink, "wants", None) != frozenset() for sink in sinks),
            bool(wanted(sinks, NodeStarted)),
            bool(wanted(sinks, NodeFinished)),
            bool(wanted(sinks, RouteChosen)),
            bool(wanted(sinks, CustomEvent)),
        )
        object.__setattr__(self, "_heard", heard)
        object.__setattr__(self, "_stacks", {})

    def _stack(self, listened: bool, journal: Journal | None) -> Stack:
        """The layers of a run with (or without) listeners and this kind of journal,
        composed once per runner and kind (the order is `_layers.py`'s)."""
        kind = 0 if journal is None else 2 if isinstance(journal, RemoteJournal) else 1
        stack = self._stacks.get((listened, kind))
        if stack is None:
            stack = self._stacks[listened, kind] = Stack(self._composed(listened, kind))
        return stack

    def _composed(self, listened: bool, kind: int) -> list[Any]:
        around: tuple[Any, ...] = ()
        beside: tuple[Any, ...] = ()
        results: tuple[Any, ...] = ()
        if self.guards is not None:
            around, beside, results = self.guards.layers()
        mine = [layer for layer in self.layers if not getattr(layer, "performed", False)]
        below = [layer for layer in self.layers if getattr(layer, "performed", False)]
        journal = () if kind == 0 else (RemoteJournalLayer() if kind == 2 else JournalLayer(),)
        gate = () if self.model_gate is None else (GateLayer(self.model_gate),)
        events = (EventsLayer(),) if listened else ()
        return [
            *around,
            LimitsLayer(),
            *events,
            *beside,
            *mine,
            *journal,
            *results,
            *below,
            *gate,
        ]

    def evolve(self, **changes: Any) -> GraphRunner:
        """A copy of this runner with `changes` (any of the constructor's arguments)."""
        return attrs.evolve(self, **changes)

    async def run(
        self,
        graph: Node[In, Out],
        ctx: AgentContext[In],
        *,
        handle: RunHandle | None = None,
        store: JournalSource | None = None,
        run_id: str | None = None,
        thread_id: str | None = None,
        compaction: Any = None,
        expect_head: Head = ANY_HEAD,
    ) -> AgentContext[Out]:
        """Run `graph` on `ctx` and return the context that reached finish.

        The run's id is `run_id`, or a new one (see `handle.run_id` and
        `RunStarted.run_id`). With a checkpoint `store`, every completed step
        is recorded under that id, so the run can be resumed, replayed and forked.

        With a `thread_id` (and a store), the run is the next turn of that
        thread: it starts from the thread's last context plus `ctx` (its input,
        its messages after the thread's), and when it finishes the thread goes
        on from its final context. `compaction` (`checkpoint.Compaction`)
        keeps the conversation within a token budget. A run on a thread that
        another run holds is refused with `ThreadBusy`. `expect_head` (the
        run id of the thread's head when `ctx` was made from it; None: the
        thread had none) refuses the turn, with `ThreadBusy` too, when
        another turn moved the head since.
        """
        graph = as_graph(graph)
        _check_input(ctx)
        try:
            if store is None and thread_id is None and compaction is None:
                # Nothing to open, and the id is made only if something asks for it.
                return await self._drive(graph, ctx, handle, None, run_id or None, None)
            rid = run_id or new_run_id()
            journal = await self._open(graph, ctx, store, rid, thread_id, compaction, expect_head)
            start = ctx if journal is None or thread_id is None else journal.initial
            return await self._drive(graph, start, handle, None, rid, journal)
        except RunError as exc:
            # The runner's frames are not where the mistake is (the error's cause keeps
            # the frames that raised it): the traceback starts at the caller's await.
            raise exc.with_traceback(None)  # noqa: B904

    async def _open(
        self,
        graph: Graph[Any, Any],
        ctx: AgentContext[Any],
        store: JournalSource | None,
        run_id: str,
        thread_id: str | None,
        compaction: Any,
        expect_head: Head = ANY_HEAD,
    ) -> Journal | None:
        """The run's journal: none, a new run's, or a thread's next turn's."""
        if thread_id is None:
            if compaction is not None:
                raise UsageError("compaction= applies to a thread: pass thread_id= too")
            return None if store is None else await _source(store).open_run(graph, ctx, run_id)
        opener = getattr(store, "open_thread", None)
        if opener is None:
            raise UsageError(
                "a run on a thread needs a checkpoint store that keeps threads: pass "
                "store=MemoryStore(), SQLiteStore(...) or PostgresStore(...)"
            )
        types = self.types.with_types(*graph.data_types())
        # Only a caller that read the thread asks for a head, so a store of its
        # own making need not know the keyword otherwise.
        more = {} if expect_head is ANY_HEAD else {"expect_head": expect_head}
        journal: Journal = await opener(
            graph, ctx, run_id, thread_id, compaction=compaction, types=types, **more
        )
        return journal

    async def resume(
        self,
        graph: Node[In, Out],
        run_id: str,
        store: JournalSource,
        *,
        answer: Any = NO_ANSWER,
        handle: RunHandle | None = None,
    ) -> AgentContext[Out]:
        """Continue a recorded run from its last committed step and return its final context.

        No committed step runs again. `answer` answers the question of an
        `Interrupted` run. Raises `ResumeError` when the record does not fit
        `graph` or an unsafe tool call was in flight when the run stopped.
        """
        graph = as_graph(graph)
        types = self.types.with_types(*graph.data_types())
        # Only a runner that keeps versions passes them, so a store of its own
        # making need not know the keyword otherwise.
        more = {} if self.versions is None else {"versions": self.versions}
        journal = await _source(store).open_resume(graph, run_id, answer, types, **more)
        # Under "pinned", the journal holds the version the run started on.
        picked: Graph[In, Out] | None = getattr(journal, "graph", None)
        chosen = graph if picked is None else picked
        return await self._drive(chosen, journal.initial, handle, None, run_id, journal)

    async def replay(
        self,
        graph: Node[In, Out],
        run_id: str,
        store: JournalSource,
        *,
        handle: RunHandle | None = None,
    ) -> AgentContext[Out]:
        """Run a recorded run again with every model call, tool call and answer from the record.

        Nothing is written and neither models, embedders nor tools are called.
        Every committed context must equal the recorded one, and every model
        request the recorded request; otherwise `ReplayDiverged` shows the
        difference.
        """
        graph = as_graph(graph)
        types = self.types.with_types(*graph.data_types())
        journal = await _source(store).open_replay(graph, run_id, types)
        return await self._drive(graph, journal.initial, handle, None, run_id, journal)

    def stream(
        self,
        graph: Node[In, Out],
        ctx: AgentContext[In],
        *,
        handle: RunHandle | None = None,
        store: JournalSource | None = None,
        run_id: str | None = None,
        thread_id: str | None = None,
        compaction: Any = None,
    ) -> AbstractAsyncContextManager[ObjectReceiveStream[Event]]:
        """Run `graph` in a task and yield its events as they happen.

        ```python
        async with runner.stream(graph, ctx) as events:
            async for event in events:
                ...
        ```
        The first event is `RunStarted` (with the run's id), the last
        `RunFinished`. A failed run re-raises its error when the block exits;
        leaving the block early cancels the run. `async for` straight over
        `runner.stream(...)` raises `UsageError`: the block is what owns the run.
        """
        opening = (store, run_id, thread_id, compaction)
        return EventStream(self._stream(graph, ctx, handle, opening))

    def run_sync(
        self, graph: Node[In, Out], ctx: AgentContext[In], *, backend: str = "asyncio"
    ) -> AgentContext[Out]:
        """Run from synchronous code, in a new event loop (not from inside a running one)."""
        running = _running_loop()
        if running is not None:
            raise UsageError(
                f"run_sync() was called inside a running {running} event loop, which cannot "
                "run a second one: in async code use `await runner.run(graph, ctx)`"
            )
        try:
            return anyio.run(self.run, graph, ctx, backend=backend)
        except RunError as exc:
            # The event loop's and the runner's frames are not where the mistake is (the
            # error's cause keeps the frames that raised it): the traceback starts here.
            raise exc.with_traceback(None)  # noqa: B904

    @asynccontextmanager
    async def _stream(
        self,
        graph: Node[In, Out],
        ctx: AgentContext[In],
        handle: RunHandle | None,
        opening: tuple[JournalSource | None, str | None, str | None, Any],
    ) -> AsyncIterator[ObjectReceiveStream[Event]]:
        store, run_id, thread_id, compaction = opening
        graph = as_graph(graph)
        _check_input(ctx)
        send, receive = anyio.create_memory_object_stream[Event](0)
        failure: list[BaseException] = []
        rid = run_id or new_run_id()

        async def emit(event: Event) -> None:
            # When the reader has left, the run goes on until the block cancels it.
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await send.send(event)

        async def drive() -> None:
            async with send:
                try:
                    journal = await self._open(graph, ctx, store, rid, thread_id, compaction)
                    start = ctx if journal is None or thread_id is None else journal.initial
                    await self._drive(graph, start, handle, emit, rid, journal)
                except Exception as error:
                    failure.append(error)

        async with anyio.create_task_group() as tg:
            tg.start_soon(drive)
            async with receive:
                yield receive
            tg.cancel_scope.cancel()
        if failure:
            raise failure[0]

    async def _drive(
        self,
        graph: Graph[In, Out],
        ctx: AgentContext[In],
        handle: RunHandle | None,
        emit: Emit | None,
        run_id: str | None,
        journal: Journal | None,
    ) -> AgentContext[Out]:
        """Run `graph`; every way out is reported to the sinks.

        The run gets a cancel scope of its own when something besides its
        caller can end it (a handle or a timeout); otherwise only the
        caller's cancellation can, and the scope would be pure cost.
        """
        scoped = handle is not None or self.timeout is not None
        handle = handle or RunHandle()
        run = self._start(ctx, handle, emit, run_id, journal)
        run.root = graph
        try:
            if not scoped:
                done, _ = await self._guarded(graph, ctx, handle, run, None)
                assert done is not None  # without a scope of its own, a run returns or raises
                return done
            out: AgentContext[Out] | None = None
            teardown: Exception | None = None
            with anyio.CancelScope() as scope:
                handle._scope = scope
                if handle.cancelled:
                    scope.cancel()
                if self.timeout is not None:
                    scope.deadline = anyio.current_time() + self.timeout
                out, teardown = await self._guarded(graph, ctx, handle, run, scope)
            handle._scope = None
            if out is None:
                last = handle.context if handle.context is not None else ctx
                ended: Exception = (
                    GraphCancelled(context=last, step=handle.step)
                    if handle.cancelled
                    else GraphTimeout(context=last, step=handle.step, timeout=self.timeout or 0.0)
                )
                await report_end(run, ended)
                raise ended from teardown
            return out
        finally:
            if journal is not None:
                journal.close()

    def _start(
        self,
        ctx: AgentContext[Any],
        handle: RunHandle,
        emit: Emit | None,
        run_id: str | None,
        journal: Journal | None,
    ) -> _Run:
        """The run's shared state, with the handle pointing at its first context."""
        handle.context, handle.step = ctx, 0
        if journal is not None:
            handle.context, handle.step = journal.resumed_at or (ctx, 0)
        ids = handle._ids = [run_id]
        run = _Run(
            ids,
            self.retry,
            self.max_steps,
            self._marked,
            None,
            handle,
            self.timeout is not None,
            journal,
            self.usage_limits,
            self.model_gate,
            self.guards,
        )
        if emit is not None or self.sinks:
            picky, anything, started, finished, routed, custom = self._heard
            dispatch = Dispatch(
                self.sinks,
                emit,
                fail=self.sink_errors == "raise",
                by_kind=self._kinds,
                picky=picky,
            )
            deliver = dispatch.deliver
            streamed = emit is not None  # a stream reads every event
            run.emit = dispatch.emit if streamed or anything else None
            run.custom = dispatch.emit if streamed or custom else None
            # The events of every step are built only when someone takes them.
            run.started = deliver if streamed or started else None
            run.finished = deliver if streamed or finished else None
            run.routed = deliver if streamed or routed else None
        run.stack = self._stack(run.emit is not None, journal)
        return run

    async def _guarded(
        self,
        graph: Graph[In, Out],
        ctx: AgentContext[In],
        handle: RunHandle,
        run: _Run,
        scope: anyio.CancelScope | None,
    ) -> tuple[AgentContext[Out] | None, Exception | None]:
        """The run itself, inside its scope (if it has one): announce it, run the root
        graph, make its record durable, and report how it ended.

        Returns the final context, or None and the error its steps raised while
        they were torn down when the run's own scope ended it (cancelled or timed out).
        """
        try:
            if run.emit is not None:
                thread = getattr(run.journal, "thread_id", None)
                first = handle.context or ctx
                await run.emit(RunStarted(graph.name, first, run.run_id, graph.agent, thread))
            meters = () if run.limits is None else (Meter(run.limits),)
            out = await Runtime(run, (graph.name,), 0, meters=meters).run_graph(graph, ctx)
            if run.journal is not None:
                try:
                    await run.journal.finish()
                except CheckpointError as error:
                    placed(error, out, run.steps, (graph.name,))
                    raise
        except Interrupt as signal:
            raise await report_interrupt(run, signal) from None
        except anyio.get_cancelled_exc_class():
            if scope is None or not (scope.cancel_called or handle.cancelled):
                # The caller's own scope was cancelled: tell the sinks, then let
                # the native cancellation through untouched.
                last = handle.context if handle.context is not None else ctx
                await report_end(run, GraphCancelled(context=last, step=handle.step))
            raise
        except Exception as error:
            if scope is None or not (scope.cancel_called or handle.cancelled):
                await report_end(run, error)
                raise
            # The run was being cancelled or timed out: an error raised while
            # its steps were torn down is a consequence, not the outcome.
            return None, error
        if run.emit is not None:
            await run.emit(RunFinished(out, run.steps))
        return out, None
