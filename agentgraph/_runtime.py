"""`Runtime`: one run as its nodes see it, and the step every node runs as.

`GraphRunner` (in `_runner.py`) starts runs; everything a running step touches
lives here: the step counter, retries, cancellation checks, step events, and
in runs with a checkpoint store the hooks into the run's journal.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from time import perf_counter
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio
import anyio.lowlevel
import attrs

from ._context import AgentContext
from ._errors import NodeFailed, NodeTimeout, RunError, StepLimitExceeded
from ._events import (
    Event,
    NodeFailedEvent,
    NodeFinished,
    NodeStarted,
    RetryScheduled,
    RouteChosen,
    StepInfo,
)
from ._retry import RetryPolicy

if TYPE_CHECKING:
    from ._graph import Graph
    from ._node import Node
    from .checkpoint._durable import StepState
    from .checkpoint._journal import Journal

__all__ = ("Emit", "Interrupt", "RunHandle", "Runtime", "StepCallback")

In = TypeVar("In")
Out = TypeVar("Out")
T = TypeVar("T")

StepCallback = Callable[[StepInfo, "Node[Any, Any]", AgentContext[Any]], Awaitable[None] | None]
"""`on_step(step, node, ctx)`: called after each node; may be sync or async."""

Emit = Callable[[Event], Awaitable[None]]


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
        super().__init__(question)


class RunHandle:
    """A handle on a run: cancel it, and read the last completed context at any time.

    Create one, pass it to `GraphRunner.run(..., handle=...)` and call
    `cancel()` from anywhere; the run then ends with `GraphCancelled`.
    """

    __slots__ = ("_cancelled", "_scope", "context", "run_id", "step")

    def __init__(self) -> None:
        self.context: AgentContext[Any] | None = None
        self.step = 0
        self.run_id: str | None = None
        """The run's id in its checkpoint store; None for a run without a store."""
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

    __slots__ = ("emit", "handle", "journal", "max_steps", "on_step", "retry", "steps", "watch")

    def __init__(
        self,
        *,
        retry: RetryPolicy,
        max_steps: int,
        on_step: tuple[tuple[StepCallback, bool], ...],
        emit: Emit | None,
        handle: RunHandle,
        watch: bool,
        journal: Journal | None,
    ) -> None:
        self.steps = 0
        self.watch = watch
        self.retry = retry
        self.max_steps = max_steps
        self.on_step = on_step
        self.emit = emit
        self.handle = handle
        self.journal = journal


class Runtime:
    """One node's view of its run: its path and depth, and the means to run nested nodes.

    Graphs and combinators use `execute` to run child nodes as steps of the same
    run; ready-made nodes use `emit` to add their own records to the trace. In a
    run with a checkpoint store, `once` and `interrupt` make work durable.
    """

    # Set only in runs with a checkpoint store (see `Journal.enter`), so that the
    # fast path pays nothing for it.
    _durable: StepState
    __slots__ = ("_durable", "_run", "depth", "fanout", "index", "path")

    def __init__(
        self, run: _Run, path: tuple[str, ...], depth: int, index: int = 0, fanout: bool = False
    ) -> None:
        self._run = run
        self.path = path
        self.depth = depth
        self.index = index
        self.fanout = fanout

    @property
    def step(self) -> int:
        """The run-wide number of this node's step (0 for the run itself).

        Concurrent branches each see their own number, so records they emit
        name the right step.
        """
        return self.index

    @property
    def journal(self) -> Journal | None:
        """The run's link to its checkpoint store; None when the run has no store."""
        return self._run.journal

    @property
    def run_id(self) -> str | None:
        """The run's id in its checkpoint store; None when the run has no store."""
        return self._run.handle.run_id

    async def emit(self, event: Event) -> None:
        """Send an event to the run's stream, if anyone is listening."""
        if self._run.emit is not None:
            await self._run.emit(event)

    def effect_key(self, name: str) -> str:
        """A key for this step's next recorded effect: the same on resume and replay.

        It names the step, its attempt and the effect's position in it, so keys
        must be taken in the same order on every run (before any concurrency).
        """
        journal = self._run.journal
        if journal is None:
            raise RuntimeError("effect keys exist only in runs with a checkpoint store")
        return journal.key(self, name)

    async def once(self, name: str, fn: Callable[..., T | Awaitable[T]], *args: Any) -> T:
        """Call `fn(*args)` (sync or async) once per run and remember the result.

        With a checkpoint store the result is recorded, so a resumed or replayed
        step gets it back without calling `fn` again; it must be data the
        context could hold. Without a store, `fn` is simply called.
        """
        journal = self._run.journal
        if journal is None:
            result = fn(*args)
            if inspect.isawaitable(result):
                result = await result
            return cast("T", result)
        return cast("T", await journal.once(self, name, fn, args))

    async def interrupt(self, question: Any) -> Any:
        """Ask for outside input: the run stops with `Interrupted` carrying `question`.

        `GraphRunner.resume(..., answer=...)` runs this node again, and this call
        then returns the answer. Work before it that went through `once`, tool
        use or model calls is served from the record, not done again. Needs a
        checkpoint store; `question` must be data the context could hold.
        """
        journal = self._run.journal
        if journal is None:
            raise RuntimeError(
                "interrupt() needs a checkpoint store to resume from: run with store=..."
            )
        return await journal.interrupt(self, question)

    async def run_graph(self, graph: Graph[In, Out], ctx: AgentContext[In]) -> AgentContext[Out]:
        """Run `graph`'s nodes from start to finish as steps one level below this node."""
        run = self._run
        if run.journal is not None:
            return await run.journal.run_graph(self, graph, ctx)
        node: Node[Any, Any] = graph.start
        current: AgentContext[Any] = ctx
        local = 0
        step = self.index  # the step whose output is being routed (the graph's own at first)
        while True:
            source = node
            node, position = await graph.next_node(node, current, step=step, path=self.path)
            if run.emit is not None:
                dynamic = graph.transitions[source][position].router is not None
                await run.emit(
                    RouteChosen(step, self.path, source.name, node.name, position, dynamic)
                )
            if node is graph.finish:
                return current
            local += 1
            step = run.steps + 1  # execute takes this number before it first awaits
            current = await self.execute(node, current, local)

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
        if not index & 63:
            # Steps that never await would otherwise hold the loop: every 64th step
            # yields, so deadlines (the run's and the caller's) fire.
            await anyio.lowlevel.checkpoint()
        elif run.watch or run.handle._cancelled:
            await anyio.lowlevel.checkpoint_if_cancelled()
        rt = Runtime(run, (*self.path, node.name), self.depth + 1, index, branch or self.fanout)
        if run.journal is not None:
            run.journal.enter(self, rt, index, local_index, ctx)
        if run.emit is not None:
            await run.emit(
                NodeStarted(index, local_index, rt.depth - 1, rt.path, node, ctx, self.index)
            )
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
        await _finished(run, rt, info, node, out)
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

            return await _guarded(policy).call(again, error, on_retry=on_retry)
        except Exception as final:
            if run.emit is not None:
                await run.emit(NodeFailedEvent(index, self.path, attempts, final))
            if isinstance(final, RunError):
                raise
            raise NodeFailed(
                context=ctx, step=index, path=self.path, attempts=attempts, error=final
            ) from final


async def _finished(
    run: _Run, rt: Runtime, info: StepInfo, node: Node[Any, Any], out: AgentContext[Any]
) -> None:
    """Report a completed step: the handle (on the run's own path), events, callbacks."""
    if not rt.fanout:
        run.handle.context = out
        run.handle.step = info.index
    if run.emit is not None:
        await run.emit(NodeFinished(info, node, out))
    for callback, is_coroutine in run.on_step:
        result = callback(info, node, out)
        if result is not None and (is_coroutine or inspect.isawaitable(result)):
            await result


def _root(error: NodeFailed) -> BaseException:
    cause: BaseException = error
    while isinstance(cause, NodeFailed):
        cause = cause.error
    return cause


def _guarded(policy: RetryPolicy) -> RetryPolicy:
    """`policy` judging a nested failure by its root cause, and never retrying a BaseException.

    Cancellation and `Interrupt` must pass whatever predicate the user wrote.
    """
    inner = policy.retry_on
    return attrs.evolve(
        policy,
        retry_on=lambda e: (
            isinstance(e, Exception) and inner(_root(e) if isinstance(e, NodeFailed) else e)
        ),
    )


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
