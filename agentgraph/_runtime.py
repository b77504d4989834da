"""`Runtime`: one run as its nodes see it, the one graph loop, and the step every node runs as.

`GraphRunner` (in `_runner.py`) starts runs; everything a running step touches
lives here: the step counter, retries, cancellation checks, step events, the
effects nodes have on the world, and the hooks of the run's journal (the
durability protocol in `_journal.py`).
"""

from __future__ import annotations

import inspect
import itertools
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from time import perf_counter
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, cast

import anyio
import anyio.lowlevel
import attrs
import orjson

from ._clip import MAX_RESULT_CHARS
from ._context import AgentContext
from ._errors import (
    CheckpointError,
    NodeFailed,
    NodeTimeout,
    RunError,
    StepLimitExceeded,
    UsageLimitExceeded,
)
from ._events import (
    Embedded,
    Event,
    ModelRequested,
    ModelResponded,
    ModelStreamed,
    NodeFailedEvent,
    NodeFinished,
    NodeStarted,
    RetryScheduled,
    RouteChosen,
    StepInfo,
    ToolFinished,
)
from ._failure import Attempt, root_error
from ._gate import ModelGate, provider_of
from ._journal import EmbedCall, Journal, ModelCall, OnceCall, ToolAnswer, ToolsCall
from ._json import to_data
from ._node import FunctionNode
from ._retry import RetryPolicy
from ._usage import Meter, OverLimit, UsageLimits
from .llm._embedder import Embedder
from .llm._messages import ToolCall
from .llm._model import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)

if TYPE_CHECKING:
    from ._graph import Graph
    from ._node import Node
    from .guards._guard import Guards
    from .memory import JournaledMemory, Memory
    from .tools._tool import Tool

__all__ = ("Emit", "Interrupt", "RunHandle", "Runtime", "StepCallback", "tool_runtime")

In = TypeVar("In")
Out = TypeVar("Out")
T = TypeVar("T")

_new_tuple = tuple.__new__

StepCallback = Callable[[StepInfo, "Node[Any, Any]", AgentContext[Any]], Awaitable[None] | None]
"""`on_step(step, node, ctx)`: called after each node; may be sync or async."""

Emit = Callable[[Event], Awaitable[None]]
Deliver = Callable[[Event], Awaitable[None] | None]
"""Hands an event to the sinks that take it: None when all did at once, else what to await."""


_TOOL_RUNTIME: ContextVar[Runtime | None] = ContextVar("agentgraph_tool_runtime", default=None)


def tool_runtime() -> Runtime | None:
    """The runtime running the current tool call through `Runtime.call_tools`, else None.

    For a tool that must ask the run something in the middle of its call (an
    MCP server's question): it asks with `interrupt` and records what it needs
    to pick the call up again with `once`. Tool functions take only their
    arguments, so the runtime travels with the task, as the call's context.
    """
    return _TOOL_RUNTIME.get()


class Interrupt(BaseException):
    """Unwinds a node that asked for outside input (see `Runtime.interrupt`).

    A BaseException, like cancellation, so that a node's own `except Exception`
    and the retry machinery let it pass; the runner turns it into `Interrupted`.
    """

    def __init__(
        self, question: Any, context: AgentContext[Any], step: int, path: tuple[str, ...]
    ) -> None:
        self.question = question
        self.context = context
        self.step = step
        self.path = path
        self.tool_call: ToolCall | None = None
        """The tool call that asked, when a tool asked in the middle of its call."""
        super().__init__(question)


class RunHandle:
    """A handle on a run: cancel it, and read the last completed context at any time.

    Create one, pass it to `GraphRunner.run(..., handle=...)` and call
    `cancel()` from anywhere; the run then ends with `GraphCancelled`.
    """

    __slots__ = ("_cancelled", "_ids", "_scope", "context", "step")

    def __init__(self) -> None:
        self.context: AgentContext[Any] | None = None
        self.step = 0
        self._ids: list[str | None] | None = None  # the run's id, shared with the run
        self._scope: anyio.CancelScope | None = None
        self._cancelled = False

    @property
    def run_id(self) -> str | None:
        """The run's id (given to `run`, or made when it starts); None before it starts."""
        ids = self._ids
        if ids is None:
            return None
        if ids[0] is None:
            ids[0] = new_run_id()
        return ids[0]

    @run_id.setter
    def run_id(self, value: str | None) -> None:
        self._ids = [value]

    def cancel(self) -> None:
        """End the run at its next checkpoint of cancellation (any await)."""
        self._cancelled = True
        if self._scope is not None:
            self._scope.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancelled


class _RunIds:
    """Run ids: 16 random hex digits per process, then a counter (32 hex digits in all).

    As unique as a random UUID across processes and machines, at a tenth of its
    cost, which matters for short runs; a forked child draws its own prefix.
    """

    def __init__(self) -> None:
        self.reset()
        os.register_at_fork(after_in_child=self.reset)

    def reset(self) -> None:
        self.prefix = os.urandom(8).hex()
        self.count = itertools.count()

    def __call__(self) -> str:
        return f"{self.prefix}{next(self.count):016x}"


new_run_id = _RunIds()
"""A fresh run id."""


class _Run:
    """What every level of one run shares: the step counter, policy and listeners."""

    __slots__ = (
        "_ids",
        "emit",
        "finished",
        "gate",
        "guards",
        "handle",
        "journal",
        "limits",
        "max_steps",
        "on_step",
        "retry",
        "routed",
        "started",
        "steps",
        "watch",
    )

    def __init__(  # positional: one is built for every run
        self,
        ids: list[str | None],
        retry: RetryPolicy,
        max_steps: int,
        on_step: tuple[tuple[StepCallback, bool], ...],
        emit: Emit | None,
        handle: RunHandle,
        watch: bool,
        journal: Journal | None,
        limits: UsageLimits | None = None,
        gate: ModelGate | None = None,
        guards: Guards | None = None,
    ) -> None:
        self.limits = limits
        self.gate = gate
        self.guards = guards
        # A one-item list the handle shares: the id is drawn by whichever asks first,
        # and the run and its handle hold no reference to each other (no cycle to collect).
        self._ids = ids
        self.steps = 0
        self.watch = watch
        self.retry = retry
        self.max_steps = max_steps
        self.on_step = on_step
        self.emit = emit
        # The step events' own deliveries, None when nobody takes that kind.
        self.started: Deliver | None = None
        self.finished: Deliver | None = None
        self.routed: Deliver | None = None
        self.handle = handle
        self.journal = journal

    @property
    def run_id(self) -> str:
        """The run's id: the one given, or a new one made when something first asks
        (a run with no store, sink or reader never needs one)."""
        ids = self._ids
        found = ids[0]
        if found is None:
            found = ids[0] = new_run_id()
        return found


class Runtime:
    """One node's view of its run: its path and depth, its effects, and nested steps.

    Graphs and combinators use `execute` to run child nodes as steps of the same
    run; ready-made nodes use `emit` to add their own records to the trace.
    Everything a node does outside its context goes through the runtime:
    `call_model`, `stream_model`, `embed`, `call_tools`, `once` and `interrupt`.
    They emit the run's events and, in a run with a journal (a checkpoint
    store), record their results, so a resumed or replayed step gets them back
    instead of doing the work again.

    Attributes:
        path: node names from the root graph down to this node.
        depth: how many graphs this node is nested in (0 for the run itself).
        index: the run-wide number of this node's step.
        fanout: True inside a concurrent branch (`parallel`, `map_each`).
        journal_state: the run journal's own record of this step (None without one).
    """

    __slots__ = (
        "_run",
        "depth",
        "fanout",
        "index",
        "journal_state",
        "meters",
        "node_retry",
        "path",
    )

    def __init__(
        self,
        run: _Run,
        path: tuple[str, ...],
        depth: int,
        index: int = 0,
        fanout: bool = False,
        node_retry: RetryPolicy | None = None,
        meters: tuple[Meter, ...] = (),
    ) -> None:
        self._run = run
        self.path = path
        self.depth = depth
        self.index = index
        self.fanout = fanout
        self.node_retry = node_retry
        self.meters = meters
        self.journal_state: Any = None

    @property
    def step(self) -> int:
        """The run-wide number of this node's step (0 for the run itself).

        Concurrent branches each see their own number, so records they emit
        name the right step.
        """
        return self.index

    @property
    def journal(self) -> Journal | None:
        """The run's journal; None when the run has no checkpoint store."""
        return self._run.journal

    @property
    def run_id(self) -> str:
        """The run's id: the one on `RunStarted`, the handle, the store and every sink."""
        return self._run.run_id

    @property
    def thread_id(self) -> str | None:
        """The thread this run is a turn of (`GraphRunner.run(..., thread_id=...)`), or None."""
        thread: str | None = getattr(self._run.journal, "thread_id", None)
        return thread

    @property
    def steps(self) -> int:
        """How many steps the run has started so far."""
        return self._run.steps

    async def emit(self, event: Event) -> None:
        """Send an event to the run's stream, if anyone is listening."""
        if self._run.emit is not None:
            await self._run.emit(event)

    # -- effects ----------------------------------------------------------------------------
    async def call_model(self, model: ChatModel, request: ChatRequest) -> ChatResponse:
        """Send `request` to `model`, reporting the request and the response as events.

        In a run with a journal the response is recorded; a resumed or
        replayed step gets the recorded response to the same request instead.
        In a run with guards (`agentgraph.guards`) the request and the answer
        are shown to them.
        """
        guards = self._run.guards
        if guards is not None and (guards.input or guards.output):
            from .guards._effects import guarded_model

            return await guarded_model(self, model, request)
        name = request.model or model.name
        for meter in self.meters:
            meter.before(name)
        if self._run.emit is not None:  # the event is built only for a listener
            await self._run.emit(_requested(self, model, name, request))
        started = perf_counter()
        journal, gate = self._run.journal, self._run.gate
        call = ModelCall(model, request) if gate is None else _GatedCall(model, request, gate, name)
        if journal is None:
            response = await call()
        else:
            response = await journal.model(self, request, call)
        for meter in self.meters:
            meter.after(name, response.usage)
        if self._run.emit is not None:
            elapsed = perf_counter() - started
            await self._run.emit(ModelResponded(self.index, self.path, name, response, elapsed))
        return response

    @asynccontextmanager
    async def stream_model(
        self, model: ChatModel, request: ChatRequest
    ) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        """Stream `request` from `model`: deltas, then one `ResponseDone`.

        ```python
        async with rt.stream_model(model, request) as events:
            async for event in events:
                ...
        ```
        Recorded like `call_model`: a resumed or replayed step streams the
        recorded response again (its text, reasoning and tool calls as single
        deltas) without calling the model.
        """
        guards = self._run.guards
        if guards is not None and (guards.input or guards.output):
            from .guards._effects import guarded_stream

            async with guarded_stream(self, model, request) as checked:
                yield checked
            return
        name = request.model or model.name
        for meter in self.meters:
            meter.before(name)
        if self._run.emit is not None:  # the event is built only for a listener
            await self._run.emit(_requested(self, model, name, request))
        started = perf_counter()
        journal = self._run.journal
        key, recorded = ("", None) if journal is None else journal.recorded_model(self, request)
        if recorded is None and journal is not None and getattr(journal, "remote", False):
            # Effects run elsewhere: the call is made as one request, streamed as recorded.
            recorded = await journal.model(self, request, ModelCall(model, request))
            key = ""
        gate = self._run.gate
        tell = None if self._run.emit is None else self._streamed
        if recorded is not None:
            watched = _Watched(_Replayed(recorded), tell)
            yield watched
        elif gate is None:
            async with model.stream(request) as events:
                watched = _Watched(events, tell)
                yield watched
        else:
            provider = provider_of(model)
            await gate.admit(provider, name, request)
            try:
                async with model.stream(request) as events:
                    watched = _Watched(events, tell)
                    yield watched
            except Exception as error:
                gate.settle(provider, name, request, None, error)
                raise
            done = watched.response
            gate.settle(provider, name, request, None if done is None else done.usage, None)
        response = watched.response
        if response is not None:
            if journal is not None and recorded is None:
                journal.record_model(self, key, request, response)
            for meter in self.meters:
                meter.after(name, response.usage)
            if self._run.emit is not None:
                elapsed = perf_counter() - started
                await self._run.emit(ModelResponded(self.index, self.path, name, response, elapsed))

    async def _streamed(self, text: str) -> None:
        await self.emit(ModelStreamed(self.index, self.path, text))

    async def embed(self, embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
        """Embed `texts`; recorded in a run with a journal, like a model call."""
        journal = self._run.journal
        started = perf_counter()
        if journal is None:
            vectors = await embedder.embed(texts)
        else:
            vectors = await journal.value(self, "embed", EmbedCall(embedder, texts))
        if self._run.emit is not None:
            name = getattr(embedder, "model", None) or type(embedder).__name__
            size = len(vectors[0]) if vectors else embedder.dimensions
            done = Embedded(
                self.index, self.path, str(name), len(texts), size, perf_counter() - started
            )
            await self._run.emit(done)
        return vectors

    async def call_tools(
        self,
        tools: Sequence[Tool[..., Any]],
        calls: Sequence[ToolCall],
        *,
        limit: int = 8,
        timeout: float | None = None,  # noqa: ASYNC109 - a per-call limit, passed on
        context: AgentContext[Any] | None = None,
        max_result_chars: int | None = MAX_RESULT_CHARS,
    ) -> list[ToolAnswer]:
        """Run `calls` with `tools` only (see `run_tool_calls`); answers in call order.

        Each answer is reported as a `ToolFinished` event. In a run with a
        journal, answers are recorded as the model reads them (clipped to
        `max_result_chars`, `MAX_RESULT_CHARS` unless given), so a resumed or
        replayed step gets exactly those; a call to a tool that is not safe to
        retry is made durable before it runs (finding it in flight on resume
        is a `ResumeError`).
        """

        from .tools._execute import run_tool_calls  # loaded with the first tool call

        async def run(pending: Sequence[ToolCall]) -> list[ToolAnswer]:
            token = _TOOL_RUNTIME.set(self)
            try:
                outcomes = await run_tool_calls(
                    tools,
                    pending,
                    limit=limit,
                    timeout=timeout,
                    context=context,
                    max_result_chars=max_result_chars,
                    runtime=self,
                )
            finally:
                _TOOL_RUNTIME.reset(token)
            return [(o.call, o.message, o.duration) for o in outcomes]

        refused: dict[int, ToolAnswer] | None = None
        guards = self._run.guards
        if guards is not None and guards.tools and calls:
            from .guards._effects import checked_calls, merged

            asked = calls
            calls, refused = await checked_calls(self, guards, calls)
        journal = self._run.journal
        if not calls:
            answers: list[ToolAnswer] = []
        elif journal is None:
            answers = await run(calls)
        else:
            unsafe = frozenset(t.name for t in tools if not t.retry_safe)
            effect = ToolsCall(tools, limit, timeout, context, run, max_result_chars)
            answers = await journal.tools(self, calls, unsafe, effect)
        if refused:
            answers = merged(asked, answers, refused)
        emit = self._run.emit
        if emit is not None:  # the events are built only for a listener
            for call, message, duration in answers:
                await emit(ToolFinished(self.index, self.path, call, message, duration))
        return answers

    def memory(self, memory: Memory) -> JournaledMemory:
        """`memory` (an `agentgraph.memory` store) as this step sees it: every call an effect.

        A resumed or replayed step is served what the run read, a replay writes
        nothing, and a write is applied once even across a crash and resume
        (see `agentgraph.memory.journaled`).
        """
        from .memory._journaled import journaled  # loaded with the first memory call

        return journaled(memory, self)

    async def once(self, name: str, fn: Callable[..., T | Awaitable[T]], *args: Any) -> T:
        """Call `fn(*args)` (sync or async) once per run and remember the result.

        The one call for a node's own I/O: with a checkpoint store the result
        is recorded, so a resumed or replayed step gets it back without
        calling `fn` again; it must be data the context could hold. Without a
        store, `fn` is simply called.
        """

        journal = self._run.journal
        if journal is None:
            result = fn(*args)
            if inspect.isawaitable(result):
                result = await result
            return cast("T", result)
        return cast("T", await journal.value(self, name, OnceCall(fn, args)))

    async def interrupt(self, question: Any) -> Any:
        """Ask for outside input: the run stops with `Interrupted` carrying `question`.

        `GraphRunner.resume(..., answer=...)` runs this node again, and this call
        then returns the answer. Work before it that went through the runtime
        (model calls, tools, `once`) is served from the record, not done again.
        Needs a checkpoint store; `question` must be data the context could hold.
        """
        journal = self._run.journal
        if journal is None:
            raise RuntimeError(
                "interrupt() needs a checkpoint store to resume from: run with store=..."
            )
        return await journal.interrupt(self, question)

    # -- steps ------------------------------------------------------------------------------
    async def run_graph(self, graph: Graph[In, Out], ctx: AgentContext[In]) -> AgentContext[Out]:
        """Run `graph`'s nodes from start to finish as steps one level below this node.

        The only graph loop: a run with a journal resumes where its record ends
        and commits each step once its graph chose the next node.
        """
        run = self._run
        journal = run.journal
        source: Node[Any, Any] = graph.start
        target: Node[Any, Any] | None = None
        current: AgentContext[Any] = ctx
        local = 0
        step = self.index  # the step whose output is being routed (the graph's own at first)
        first = graph.first
        resumed = self._enter(graph)
        if resumed is not None:
            target, current, local, run.steps = resumed
        while True:
            if target is None:
                target = first.get(source)
                if target is not None:
                    position = 0
                else:
                    routed = graph.route(source, current, step, self.path)
                    # A router that returned an awaitable leaves the route pending.
                    routed = routed if isinstance(routed, tuple) else await routed.settle()
                    target, position = routed
                if run.routed is not None:
                    dynamic = graph.transitions[source][position].router is not None
                    told = run.routed(
                        RouteChosen(step, self.path, source.name, target.name, position, dynamic)
                    )
                    if told is not None:
                        await told
                if journal is not None and source is not graph.start:
                    self._commit(journal, source, target, current, (step, local))
            if target is graph.finish:
                return current
            local += 1
            step = run.steps + 1  # execute takes this number before it first awaits
            source, target = target, None
            try:
                current = await self.execute(source, current, local)
            except NodeFailed as failed:
                # `current` is still the failed step's input: an error transition goes on from it.
                target, current = await self._failed(graph, source, failed, current, (step, local))

    def _enter(self, graph: Graph[Any, Any]) -> Any:
        """Take on `graph`'s own policies; where a resumed run goes on in it, if it does."""
        if graph.node_retry is not None:
            self.node_retry = graph.node_retry
        if graph.usage_limits is not None:  # a fresh meter each time the graph runs
            self.meters = (*self.meters, Meter(graph.usage_limits))
        journal = self._run.journal
        return None if journal is None else journal.reenter(self, graph)

    async def _failed(
        self,
        graph: Graph[Any, Any],
        source: Node[Any, Any],
        failed: NodeFailed,
        given: AgentContext[Any],
        where: tuple[int, int],
    ) -> tuple[Node[Any, Any], AgentContext[Any]]:
        """Where `source`'s error transitions send a failed step, and with what; else re-raise."""
        route = graph.error_route(source, failed)
        if route is None:
            raise failed
        target, position, failure = route
        step = where[0]
        out = given.with_input(failure)
        run = self._run
        if run.routed is not None:
            chosen = RouteChosen(
                step, self.path, source.name, target.name, position, False, on_error=True
            )
            told = run.routed(chosen)
            if told is not None:
                await told
        if run.journal is not None:
            self._commit(run.journal, source, target, out, where)
        return target, out

    def _commit(
        self,
        journal: Journal,
        source: Node[Any, Any],
        target: Node[Any, Any],
        out: AgentContext[Any],
        where: tuple[int, int],
    ) -> None:
        """Commit `source`'s step (run-wide and local numbers `where`) and where it goes next."""
        step, local = where
        try:
            journal.commit(self, source, target, out, local)
        except CheckpointError as error:  # the step ran; its record is what failed
            placed(error, out, step, (*self.path, source.name))
            raise

    async def execute(
        self,
        node: Node[Any, Out],
        ctx: AgentContext[Any],
        local_index: int,
        *,
        branch: bool = False,
    ) -> AgentContext[Out]:
        """Run `node` as one step: count it, retry it under policy, report it.

        `branch` marks a step run concurrently with siblings (`parallel`,
        `map_each`): it and everything below it leave the run handle alone, so
        a cancelled run reports the last context of its own path.
        """
        run = self._run
        if run.steps >= run.max_steps:
            raise StepLimitExceeded(context=ctx, step=run.steps, path=(*self.path, node.name))
        run.steps += 1
        index = run.steps
        if not index & 63 or run.watch or run.handle._cancelled:
            await _checkpoint(index)
        path = (*self.path, node.name)
        fanout = branch or self.fanout
        # A `@node` function without a timeout is called by the step itself (no
        # wrapper coroutine); if it takes no runtime and the run has no journal, it
        # gets none: its step builds a `Runtime` only if it fails (to retry or report).
        fn = node if type(node) is FunctionNode and node.timeout is None else None
        plain = fn is not None and not fn.wants_runtime and run.journal is None
        rt = None if plain else self._child(node, ctx, index, local_index, path, fanout)
        if run.started is not None:
            told = run.started(
                NodeStarted(index, local_index, self.depth, path, node, ctx, self.index)
            )
            if told is not None:
                await told
        timed = run.on_step or run.finished is not None  # only a step record needs the clock
        started = perf_counter() if timed else 0.0
        try:
            if fn is not None:
                result = fn.fn(ctx, rt) if fn.wants_runtime else fn.fn(ctx)
                if fn.is_async:
                    result = await result
                if not isinstance(result, AgentContext):
                    raise fn.not_a_context(result)
                out: AgentContext[Out] = result
            else:
                assert rt is not None
                out = await (
                    node.run(ctx, rt) if node.timeout is None else _with_timeout(node, ctx, rt)
                )
            attempts = 1
        except Exception as error:  # the slow path: retry or report
            rt = rt or self._child(node, ctx, index, local_index, path, fanout)
            out, attempts = await rt._recover(node, ctx, index, error)
        # Report the step: the handle (on the run's own path), events, callbacks.
        if not fanout:
            run.handle.context = out
            run.handle.step = index
        if timed:
            # Built as a tuple: a step record costs a quarter of an attrs instance.
            info = _new_tuple(
                StepInfo, (index, local_index, self.depth, path, attempts, perf_counter() - started)
            )
            pending = _reported(run, info, node, out)
            if pending is not None:
                await pending
        return out

    def _child(
        self,
        node: Node[Any, Any],
        ctx: AgentContext[Any],
        index: int,
        local: int,
        path: tuple[str, ...],
        fanout: bool,
    ) -> Runtime:
        """The runtime of `node`'s step, entered in the journal if the run has one."""
        run = self._run
        rt = Runtime(run, path, self.depth + 1, index, fanout, self.node_retry, self.meters)
        if run.journal is not None:
            run.journal.enter(self, rt, index, local, ctx)
        return rt

    async def _recover(
        self, node: Node[Any, Out], ctx: AgentContext[Any], index: int, error: Exception
    ) -> tuple[AgentContext[Out], int]:
        run = self._run
        policy = node.retry
        if policy is None and not node.composite:
            policy = self.node_retry or run.retry
        attempts = 1
        try:
            if (
                policy is None
                or not node.retry_safe
                or isinstance(error, StepLimitExceeded | OverLimit | CheckpointError)
            ):
                raise error

            async def on_retry(attempt: int, wait: float, err: BaseException) -> None:
                nonlocal attempts
                attempts = attempt + 1
                if run.emit is not None:
                    await run.emit(RetryScheduled(index, self.path, attempt, wait, err))

            async def again() -> AgentContext[Out]:
                if run.journal is not None:
                    run.journal.new_attempt(self)
                if node.timeout is None:
                    return await node.run(ctx, self)
                return await _with_timeout(node, ctx, self)

            return await _guarded(policy, node, ctx, self.path).call(
                again, error, on_retry=on_retry
            )
        except Exception as final:
            await self._failed_for_good(node, ctx, index, attempts, final)
            raise AssertionError("unreachable: the failure was raised") from None

    async def _failed_for_good(
        self,
        node: Node[Any, Any],
        ctx: AgentContext[Any],
        index: int,
        attempts: int,
        final: Exception,
    ) -> NoReturn:
        """Report a step that failed after its retries, and raise what the run should see."""
        run = self._run
        if isinstance(final, OverLimit):  # the run's limit, not the node's failure
            limit = UsageLimitExceeded(final.reason, context=ctx, step=index, path=self.path)
            if run.emit is not None:
                await run.emit(NodeFailedEvent(index, self.path, attempts, limit))
            raise limit from None
        if run.emit is not None:
            await run.emit(NodeFailedEvent(index, self.path, attempts, final))
        if isinstance(final, RunError):
            raise final
        if isinstance(final, CheckpointError):  # the run's record failed, not the node
            raise placed(final, ctx, index, self.path)
        raise NodeFailed(
            context=ctx, step=index, path=self.path, attempts=attempts, error=final
        ) from final


def placed(
    error: CheckpointError, context: AgentContext[Any], step: int, path: tuple[str, ...]
) -> CheckpointError:
    """`error` saying where the run was when its store failed, unless a deeper step said so."""
    if error.context is None:
        error.context, error.step, error.path = context, step, path
    return error


async def _checkpoint(index: int) -> None:
    """Every 64th step yields, so deadlines (the run's and the caller's) fire even
    when steps never await; other steps of a run that can be cancelled or timed
    out only look for cancellation."""
    if not index & 63:
        await anyio.lowlevel.checkpoint()
    else:
        await anyio.lowlevel.checkpoint_if_cancelled()


def _reported(
    run: _Run, info: StepInfo, node: Node[Any, Any], out: AgentContext[Any]
) -> Awaitable[None] | None:
    """Tell the run's listeners a step finished: its event, then the step callbacks in order.

    None when all were done when they returned, else what is left to await: the
    first callback that returns an awaitable hands it, and the callbacks after
    it, to a coroutine, so steps with only sync listeners never build one.
    """
    callbacks = run.on_step
    if run.finished is not None:
        told = run.finished(NodeFinished(info, node, out))
        if told is not None:
            return _awaited_back(told, callbacks, info, node, out)
    for i, (callback, is_coroutine) in enumerate(callbacks):
        result = callback(info, node, out)
        if result is not None and (is_coroutine or inspect.isawaitable(result)):
            return _awaited_back(result, callbacks[i + 1 :], info, node, out)
    return None


async def _awaited_back(
    first: Awaitable[None],
    rest: tuple[tuple[StepCallback, bool], ...],
    info: StepInfo,
    node: Node[Any, Any],
    out: AgentContext[Any],
) -> None:
    await first
    for callback, is_coroutine in rest:
        result = callback(info, node, out)
        if result is not None and (is_coroutine or inspect.isawaitable(result)):
            await result


@attrs.frozen(slots=True)
class _GatedCall(ModelCall):
    """A model call that `gate` admits before it is sent and hears how it ended.

    A journal that runs effects elsewhere reads `model` and `request` as for any
    call (the gate belongs where the call is made); one that runs them here
    awaits the call, gate and all. A response served from a record is never
    sent, so never admitted.
    """

    gate: ModelGate
    name: str

    async def __call__(self) -> ChatResponse:
        provider = provider_of(self.model)
        await self.gate.admit(provider, self.name, self.request)
        try:
            response = await self.model.request(self.request)
        except Exception as error:
            self.gate.settle(provider, self.name, self.request, None, error)
            raise
        self.gate.settle(provider, self.name, self.request, response.usage, None)
        return response


def _requested(rt: Runtime, model: ChatModel, name: str, request: ChatRequest) -> ModelRequested:
    provider = getattr(model, "provider", "")
    server = getattr(model, "base_url", "")
    return ModelRequested(
        rt.index,
        rt.path,
        name,
        request,
        provider if isinstance(provider, str) else "",
        server if isinstance(server, str) else "",
    )


class _Watched:
    """Passes stream events on, keeping the response of the final `ResponseDone`.

    A class rather than an async generator, so a reader that stops early
    leaves nothing for the garbage collector to finalize.
    """

    __slots__ = ("_events", "_tell", "response")

    def __init__(
        self,
        events: AsyncIterator[StreamEvent],
        tell: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self._events = events
        self._tell = tell
        self.response: ChatResponse | None = None

    def __aiter__(self) -> _Watched:
        return self

    async def __anext__(self) -> StreamEvent:
        event = await self._events.__anext__()
        if isinstance(event, ResponseDone):
            self.response = event.response
        elif self._tell is not None and isinstance(event, TextDelta) and event.text:
            await self._tell(event.text)
        return event


class _Replayed:
    """A recorded response as a stream: reasoning, text and each tool call in one delta."""

    __slots__ = ("_events",)

    def __init__(self, response: ChatResponse) -> None:
        message = response.message
        events: list[StreamEvent] = []
        if message.reasoning:
            events.append(ReasoningDelta(message.reasoning))
        if message.content:
            events.append(TextDelta(message.content))
        for i, call in enumerate(message.tool_calls):
            arguments = orjson.dumps(to_data(call.arguments)).decode()
            events.append(ToolCallDelta(i, call.id, call.name, arguments))
        events.append(ResponseDone(response))
        self._events = iter(events)

    def __aiter__(self) -> _Replayed:
        return self

    async def __anext__(self) -> StreamEvent:
        await anyio.lowlevel.checkpoint()
        try:
            return next(self._events)
        except StopIteration:
            raise StopAsyncIteration from None


def _guarded(
    policy: RetryPolicy, node: Node[Any, Any], ctx: AgentContext[Any], path: tuple[str, ...]
) -> RetryPolicy:
    """`policy` judging a nested failure by its root cause, and never retrying a BaseException.

    Cancellation and `Interrupt` must pass whatever predicate the user wrote.
    A policy's `rule` sees each failed attempt in turn, with its number.
    """
    rule, inner = policy.rule, policy.retry_on
    failed = 0

    def retry_on(error: BaseException) -> bool:
        nonlocal failed
        failed += 1
        if not isinstance(error, Exception) or isinstance(error, OverLimit | CheckpointError):
            return False
        cause = root_error(error)
        if rule is None:
            return inner(cause)
        return rule(Attempt(cause, node.name, path, ctx, failed))

    return attrs.evolve(policy, retry_on=retry_on, rule=None)


async def _with_timeout(
    node: Node[Any, Out], ctx: AgentContext[Any], rt: Runtime
) -> AgentContext[Out]:
    """One attempt within the node's timeout; only our own deadline becomes `NodeTimeout`.

    A `TimeoutError` the node raised itself (a provider timeout its client
    already retried, say) passes through unchanged.
    """
    assert node.timeout is not None
    with anyio.move_on_after(node.timeout) as scope:
        return await node.run(ctx, rt)
    if scope.cancelled_caught:
        raise NodeTimeout(node.name, node.timeout)
    raise AssertionError("a node attempt neither returned nor timed out")  # pragma: no cover
