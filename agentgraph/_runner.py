"""`GraphRunner` runs graphs; `Runtime` is one run as its nodes see it."""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from time import perf_counter
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import anyio.lowlevel
import attrs
from anyio.abc import ObjectReceiveStream

from ._context import AgentContext
from ._errors import (
    GraphCancelled,
    GraphTimeout,
    NodeFailed,
    NodeTimeout,
    RunError,
    StepLimitExceeded,
)
from ._events import (
    Event,
    NodeFailedEvent,
    NodeFinished,
    NodeStarted,
    RetryScheduled,
    RouteChosen,
    RunFinished,
    RunStarted,
    StepInfo,
)
from ._retry import RetryPolicy

if TYPE_CHECKING:
    from ._graph import Graph
    from ._node import Node

__all__ = ("GraphRunner", "RunHandle", "Runtime", "Sink", "StepCallback")

In = TypeVar("In")
Out = TypeVar("Out")

StepCallback = Callable[[StepInfo, "Node[Any, Any]", AgentContext[Any]], Awaitable[None] | None]
"""`on_step(step, node, ctx)`: called after each node; may be sync or async."""

Emit = Callable[[Event], Awaitable[None]]

Sink = Callable[[Event], Awaitable[None] | None]
"""A consumer of every event of a run (a trace file, a console, a tracer); sync or async."""

_log = logging.getLogger("agentgraph")


class RunHandle:
    """A handle on a run: cancel it, and read the last completed context at any time.

    Create one, pass it to `GraphRunner.run(..., handle=...)` and call
    `cancel()` from anywhere; the run then ends with `GraphCancelled`.
    """

    __slots__ = ("_cancelled", "_scope", "context", "step")

    def __init__(self) -> None:
        self.context: AgentContext[Any] | None = None
        self.step = 0
        self._scope: anyio.CancelScope | None = None
        self._cancelled = False

    def cancel(self) -> None:
        """End the run at its next checkpoint of cancellation (any await)."""
        self._cancelled = True
        if self._scope is not None:
            self._scope.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancelled


class _Run:
    """What every level of one run shares: the step counter, policy and listeners."""

    __slots__ = ("emit", "handle", "max_steps", "on_step", "retry", "steps", "watch")

    def __init__(
        self,
        *,
        retry: RetryPolicy,
        max_steps: int,
        on_step: tuple[tuple[StepCallback, bool], ...],
        emit: Emit | None,
        handle: RunHandle,
        watch: bool,
    ) -> None:
        self.steps = 0
        self.watch = watch
        self.retry = retry
        self.max_steps = max_steps
        self.on_step = on_step
        self.emit = emit
        self.handle = handle


class Runtime:
    """One node's view of its run: its path and depth, and the means to run nested nodes.

    Graphs and combinators use `execute` to run child nodes as steps of the same
    run; ready-made nodes use `emit` to add their own records to the trace.
    """

    __slots__ = ("_run", "depth", "path")

    def __init__(self, run: _Run, path: tuple[str, ...], depth: int) -> None:
        self._run = run
        self.path = path
        self.depth = depth

    @property
    def step(self) -> int:
        """The run-wide number of the most recently started step."""
        return self._run.steps

    async def emit(self, event: Event) -> None:
        """Send an event to the run's stream, if anyone is listening."""
        if self._run.emit is not None:
            await self._run.emit(event)

    async def run_graph(self, graph: Graph[In, Out], ctx: AgentContext[In]) -> AgentContext[Out]:
        """Run `graph`'s nodes from start to finish as steps one level below this node."""
        run = self._run
        node: Node[Any, Any] = graph.start
        current: AgentContext[Any] = ctx
        local = 0
        while True:
            source = node
            node, position = await graph.next_node(node, current, step=run.steps, path=self.path)
            if run.emit is not None:
                dynamic = graph.transitions[source][position].router is not None
                await run.emit(
                    RouteChosen(run.steps, self.path, source.name, node.name, position, dynamic)
                )
            if node is graph.finish:
                return current
            local += 1
            current = await self.execute(node, current, local)

    async def execute(
        self, node: Node[Any, Out], ctx: AgentContext[Any], local_index: int
    ) -> AgentContext[Out]:
        """Run `node` as one step: count it, retry it under policy, report it."""
        run = self._run
        if run.watch or run.handle._cancelled:
            # Steps that never await would otherwise outrun a cancel or a deadline.
            await anyio.lowlevel.checkpoint_if_cancelled()
        if run.steps >= run.max_steps:
            raise StepLimitExceeded(context=ctx, step=run.steps, path=(*self.path, node.name))
        run.steps += 1
        index = run.steps
        rt = Runtime(run, (*self.path, node.name), self.depth + 1)
        if run.emit is not None:
            await run.emit(NodeStarted(index, local_index, rt.depth - 1, rt.path, node, ctx))
        started = perf_counter()
        try:
            if node.timeout is None:
                out = await node.run(ctx, rt)
            else:
                out = await _with_timeout(node, ctx, rt)
            attempts = 1
        except Exception as error:  # the slow path: retry or report
            out, attempts = await rt._recover(node, ctx, index, error)
        info = StepInfo(
            index, local_index, rt.depth - 1, rt.path, attempts, perf_counter() - started
        )
        run.handle.context = out
        run.handle.step = index
        if run.emit is not None:
            await run.emit(NodeFinished(info, node, out))
        for callback, is_coroutine in run.on_step:
            result = callback(info, node, out)
            if result is not None and (is_coroutine or inspect.isawaitable(result)):
                await result
        return out

    async def _recover(
        self, node: Node[Any, Out], ctx: AgentContext[Any], index: int, error: Exception
    ) -> tuple[AgentContext[Out], int]:
        run = self._run
        policy = node.retry if node.retry is not None else (None if node.composite else run.retry)
        attempts = 1
        try:
            if policy is None or not node.retry_safe or isinstance(error, StepLimitExceeded):
                raise error
            if isinstance(error, NodeFailed) and not policy.retry_on(_root(error)):
                raise error

            async def on_retry(attempt: int, wait: float, err: BaseException) -> None:
                nonlocal attempts
                attempts = attempt + 1
                if run.emit is not None:
                    await run.emit(RetryScheduled(index, self.path, attempt, wait, err))

            async def again() -> AgentContext[Out]:
                if node.timeout is None:
                    return await node.run(ctx, self)
                return await _with_timeout(node, ctx, self)

            if isinstance(error, NodeFailed):
                policy = _unwrapping(policy)
            return await policy.call(again, error, on_retry=on_retry)
        except Exception as final:
            if run.emit is not None:
                await run.emit(NodeFailedEvent(index, self.path, attempts, final))
            if isinstance(final, RunError):
                raise
            raise NodeFailed(
                context=ctx, step=index, path=self.path, attempts=attempts, error=final
            ) from final


def _root(error: NodeFailed) -> BaseException:
    cause: BaseException = error
    while isinstance(cause, NodeFailed):
        cause = cause.error
    return cause


def _unwrapping(policy: RetryPolicy) -> RetryPolicy:
    inner = policy.retry_on
    return attrs.evolve(
        policy, retry_on=lambda e: inner(_root(e) if isinstance(e, NodeFailed) else e)
    )


async def _with_timeout(
    node: Node[Any, Out], ctx: AgentContext[Any], rt: Runtime
) -> AgentContext[Out]:
    assert node.timeout is not None
    try:
        with anyio.fail_after(node.timeout):
            return await node.run(ctx, rt)
    except TimeoutError as error:
        if isinstance(error, NodeTimeout):
            raise
        raise NodeTimeout(node.name, node.timeout) from error


class GraphRunner:
    """Runs graphs under one policy: retries, a step cap, a timeout and step callbacks.

    Args:
        retry: the policy for nodes that set none; transient errors only by default.
        max_steps: node executions allowed per run, nested ones included.
        timeout: seconds for the whole run; `GraphTimeout` when it elapses.
        on_step: a callback, or several, called after every step.
        sinks: callables (sync or async) that receive every event of every run.
        sink_errors: `"detach"` (default) logs a sink's first error once and stops
            calling that sink for the rest of the run, which goes on; `"raise"`
            lets the error end the run.
    """

    def __init__(
        self,
        *,
        retry: RetryPolicy | None = None,
        max_steps: int = 1000,
        timeout: float | None = None,
        on_step: StepCallback | Sequence[StepCallback] = (),
        sinks: Sequence[Sink] = (),
        sink_errors: Literal["detach", "raise"] = "detach",
    ) -> None:
        if sink_errors not in ("detach", "raise"):
            raise ValueError(f"sink_errors is 'detach' or 'raise', not {sink_errors!r}")
        self.sinks = tuple(sinks)
        self.sink_errors = sink_errors
        callbacks = (on_step,) if callable(on_step) else tuple(on_step)
        self.retry = retry if retry is not None else RetryPolicy()
        self.max_steps = max_steps
        self.timeout = timeout
        self.on_step = callbacks
        self._callbacks = tuple((cb, _maybe_async(cb)) for cb in callbacks)

    async def run(
        self, graph: Graph[In, Out], ctx: AgentContext[In], *, handle: RunHandle | None = None
    ) -> AgentContext[Out]:
        """Run `graph` on `ctx` and return the context that reached finish."""
        return await self._drive(graph, ctx, handle or RunHandle(), None)

    @asynccontextmanager
    async def stream(
        self, graph: Graph[In, Out], ctx: AgentContext[In], *, handle: RunHandle | None = None
    ) -> AsyncIterator[ObjectReceiveStream[Event]]:
        """Run `graph` in a task and yield its events as they happen.

        ```python
        async with runner.stream(graph, ctx) as events:
            async for event in events:
                ...
        ```
        The last event is `RunFinished`. A failed run re-raises its error when
        the block exits; leaving the block early cancels the run.
        """
        send, receive = anyio.create_memory_object_stream[Event](0)
        failure: list[BaseException] = []

        async def emit(event: Event) -> None:
            # When the reader has left, the run goes on until the block cancels it.
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await send.send(event)

        async def drive() -> None:
            async with send:
                try:
                    await self._drive(graph, ctx, handle or RunHandle(), emit)
                except Exception as error:
                    failure.append(error)

        async with anyio.create_task_group() as tg:
            tg.start_soon(drive)
            async with receive:
                yield receive
            tg.cancel_scope.cancel()
        if failure:
            raise failure[0]

    def run_sync(
        self, graph: Graph[In, Out], ctx: AgentContext[In], *, backend: str = "asyncio"
    ) -> AgentContext[Out]:
        """Run from synchronous code, in a new event loop."""
        return anyio.run(self.run, graph, ctx, backend=backend)

    async def _drive(
        self, graph: Graph[In, Out], ctx: AgentContext[In], handle: RunHandle, emit: Emit | None
    ) -> AgentContext[Out]:
        run = _Run(
            retry=self.retry,
            max_steps=self.max_steps,
            on_step=self._callbacks,
            emit=self._emitter(emit),
            handle=handle,
            watch=self.timeout is not None,
        )
        handle.context, handle.step = ctx, 0
        emit = run.emit
        rt = Runtime(run, (graph.name,), 0)
        out: AgentContext[Out] | None = None
        with anyio.CancelScope() as scope:
            handle._scope = scope
            if handle.cancelled:
                scope.cancel()
            if self.timeout is not None:
                scope.deadline = anyio.current_time() + self.timeout
            try:
                if emit is not None:
                    await emit(RunStarted(graph.name, ctx))
                out = await rt.run_graph(graph, ctx)
            except Exception as error:
                if emit is not None:
                    with anyio.CancelScope(shield=True):
                        await emit(RunFinished(handle.context, run.steps, error))
                raise
        handle._scope = None
        if out is None:
            last = handle.context
            ended: Exception = (
                GraphCancelled(context=last, step=handle.step)
                if handle.cancelled
                else GraphTimeout(context=last, step=handle.step, timeout=self.timeout or 0.0)
            )
            if emit is not None:
                await emit(RunFinished(last, run.steps, ended))
            raise ended
        if emit is not None:
            await emit(RunFinished(out, run.steps))
        return out

    def _emitter(self, stream: Emit | None) -> Emit | None:
        """The run's event dispatcher: the sinks, then the stream (None when nobody listens)."""
        if not self.sinks:
            return stream
        sinks = list(self.sinks)
        fail = self.sink_errors == "raise"

        async def emit(event: Event) -> None:
            for sink in tuple(sinks):
                try:
                    result = sink(event)
                    if result is not None and inspect.isawaitable(result):
                        await result
                except Exception:
                    if fail:
                        raise
                    sinks.remove(sink)
                    _log.exception("trace sink %r failed and was detached; the run goes on", sink)
            if stream is not None:
                await stream(event)

        return emit


def _maybe_async(callback: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(callback) or inspect.iscoroutinefunction(
        getattr(callback, "__call__", None)  # noqa: B004
    )
