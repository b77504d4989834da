"""How `GraphRunner` drives one run: its start, its scope, its events, its end, and its stream.

`GraphRunner` (in `_runner.py`) checks what it is given and opens the run's
journal; it inherits from `Driver` what happens next, up to the root graph's
loop (`Runtime.run_graph`, in `_runtime.py`), and how the run's end is
reported, whichever way it ends.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from ._context import AgentContext
from ._dispatch import Dispatch
from ._errors import CheckpointError, GraphCancelled, GraphTimeout, Interrupted, UsageError
from ._events import Event, RunFinished, RunStarted
from ._graph import Graph
from ._journal import Journal, JournalSource
from ._node import Node
from ._run_state import Emit, RunHandle, _Run, new_run_id
from ._runner_checks import _check_input, as_graph
from ._runtime import Interrupt, Runtime, placed
from ._usage import Meter

if TYPE_CHECKING:
    from anyio.abc import ObjectReceiveStream

    from ._runner import GraphRunner

__all__ = ("Driver",)

In = TypeVar("In")
Out = TypeVar("Out")


class Driver:
    """`GraphRunner`'s driving of a run, from its start to the report of its end.

    A mixin with no state of its own: its methods take the `GraphRunner` they
    are called on, so a call costs what it did as a method of `GraphRunner` itself.
    """

    # Each method's `self` is the `GraphRunner` it runs on; mypy wants a self type to be a
    # supertype of the class it is written in, hence `ignore[misc]` on each signature.
    __slots__ = ()

    @asynccontextmanager
    async def _stream(  # type: ignore[misc]
        self: GraphRunner,
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

    async def _drive(  # type: ignore[misc]
        self: GraphRunner,
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
                await _ended(run, ended)
                raise ended from teardown
            return out
        finally:
            if journal is not None:
                journal.close()

    def _start(  # type: ignore[misc]
        self: GraphRunner,
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
        return run

    async def _guarded(  # type: ignore[misc]
        self: GraphRunner,
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
            raise await _interrupted(run, signal) from None
        except anyio.get_cancelled_exc_class():
            if scope is None or not (scope.cancel_called or handle.cancelled):
                # The caller's own scope was cancelled: tell the sinks, then let
                # the native cancellation through untouched.
                last = handle.context if handle.context is not None else ctx
                await _ended(run, GraphCancelled(context=last, step=handle.step))
            raise
        except Exception as error:
            if scope is None or not (scope.cancel_called or handle.cancelled):
                await _ended(run, error)
                raise
            # The run was being cancelled or timed out: an error raised while
            # its steps were torn down is a consequence, not the outcome.
            return None, error
        if run.emit is not None:
            await run.emit(RunFinished(out, run.steps))
        return out, None


_REPORT_GRACE = 5.0


async def _interrupted(run: _Run, signal: Interrupt) -> Interrupted:
    """The `Interrupted` error for a node's question, after reporting the run's end."""
    stopped = Interrupted(
        run_id=run.run_id,
        question=signal.question,
        context=signal.context,
        step=signal.step,
        path=signal.path,
    )
    await _ended(run, stopped, signal)
    return stopped


async def _ended(run: _Run, error: Exception, signal: Interrupt | None = None) -> None:
    """Report a run that did not finish, after making its committed steps durable.

    Shielded, so a cancelled run still reports; bounded, so a stuck sink cannot hold it.
    """
    with anyio.move_on_after(_REPORT_GRACE, shield=True):
        if run.journal is not None:
            await run.journal.settle(signal)
        last = run.handle.context
        if run.emit is not None and last is not None:
            await run.emit(RunFinished(last, run.steps, error))


class _EventStream(AbstractAsyncContextManager["ObjectReceiveStream[Event]"]):
    """`runner.stream(...)`: entered with `async with`, never iterated itself."""

    def __init__(self, inner: AbstractAsyncContextManager[ObjectReceiveStream[Event]]) -> None:
        self._inner = inner

    async def __aenter__(self) -> ObjectReceiveStream[Event]:
        return await self._inner.__aenter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc, tb)

    def __aiter__(self) -> Any:
        raise UsageError(
            "runner.stream(...) is not iterated itself: it runs the graph inside an "
            "`async with` block, so write `async with runner.stream(graph, ctx) as events:` "
            "and then `async for event in events:`"
        )
