"""`Runtime`: one run as its nodes see it, the one graph loop, and the step every node runs as.

`GraphRunner` (in `_runner.py`) starts runs; everything a running step touches
lives here: the step counter, cancellation checks, step events, the hooks of
the run's journal (the durability protocol in `_journal.py`), and the effects
nodes have on the world, each a value handed to the run's stack of layers
(`_layers.py`). What a failed step comes to (retries, error transitions) is in
`_recovery.py`; what the levels of a run share is in `_run_state.py`.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from time import perf_counter
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio
import anyio.lowlevel

from .._util._clip import MAX_RESULT_CHARS
from ..llm._embedder import Embedder
from ..llm._messages import ToolCall
from ..llm._model import ChatModel, ChatRequest, ChatResponse, StreamEvent
from ._context import AgentContext
from ._effect_kinds import (
    EmbedEffect,
    InterruptEffect,
    ModelCallEffect,
    ModelStreamEffect,
    OnceEffect,
    ToolCallsEffect,
    ToolLike,
)
from ._effects import _TOOL_RUNTIME as _TOOL_RUNTIME
from ._effects import PROVIDED
from ._effects import Interrupt as Interrupt
from ._effects import tool_runtime as tool_runtime
from ._errors import CheckpointError, NodeFailed, StepLimitExceeded, UsageError
from ._events import CustomEvent, Event, NodeFinished, NodeStarted, RouteChosen, StepInfo
from ._journal import Journal, ToolAnswer
from ._node import FunctionNode
from ._recovery import _with_timeout, failed, recover
from ._recovery import placed as placed
from ._retry import RetryPolicy
from ._run_state import Emit as Emit
from ._run_state import RunHandle as RunHandle
from ._run_state import StepCallback as StepCallback
from ._run_state import _Run as _Run
from ._run_state import new_run_id as new_run_id
from ._usage import Meter
from ._versions import declared_patches

if TYPE_CHECKING:
    from ._graph import Graph
    from ._node import Node

__all__ = ("Emit", "Interrupt", "RunHandle", "Runtime", "StepCallback", "tool_runtime")

In = TypeVar("In")
Out = TypeVar("Out")
T = TypeVar("T")

_new_tuple = tuple.__new__
_NO_STEPS: dict[Any, Any] = {}
"""No step the loop runs itself (never changed: read by every step of such a run)."""


def _no_clock() -> float:
    """The clock of a run whose steps nobody times."""
    return 0.0


class Runtime:
    """One node's view of its run: its path and depth, its effects, and nested steps.

    Graphs and combinators use `execute` to run child nodes as steps of the same
    run; ready-made nodes use `emit` to add their own records to the trace.
    Everything a node does outside its context goes through the runtime:
    `call_model`, `stream_model`, `embed`, `call_tools`, `once` and `interrupt`.
    Each hands its effect, as a value, to the run's layers (`agentgraph.Layer`):
    they emit the run's events and, in a run with a journal (a checkpoint
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

    def patched(self, name: str) -> bool:
        """True when this run started on a graph declaring the patch `name`.

        A node branches on it to keep runs that started before a change on the
        old path: `if rt.patched("shorter-prompt"): ... else: ...`. The answer
        comes from the run's record (the graph it started on), so a resumed,
        replayed or forked run gets the answer it got when it started.

        Raises:
            UsageError: the graph this run drives declares no patch `name`
                (`GraphBuilder(..., patches={name})`).
        """
        run = self._run
        if name not in declared_patches(run.root):
            declared = ", ".join(sorted(declared_patches(run.root))) or "none"
            raise UsageError(
                f"rt.patched({name!r}): graph {run.root.name!r} declares no such patch "
                f"(its patches: {declared}); declare it with GraphBuilder(..., patches={{...}})"
            )
        journal = run.journal
        return True if journal is None else journal.patched(name)

    @property
    def thread_id(self) -> str | None:
        """The thread this run is a turn of (`GraphRunner.run(..., thread_id=...)`), or None."""
        journal = self._run.journal
        return None if journal is None else journal.thread_id

    @property
    def steps(self) -> int:
        """How many steps the run has started so far."""
        return self._run.steps

    async def emit(self, event: Event) -> None:
        """Send an event to the run's stream, if anyone is listening."""
        if self._run.emit is not None:
            await self._run.emit(event)

    async def emit_custom(self, data: Any, *, name: str = "custom") -> None:
        """Send `data` to whoever watches the run, as a `CustomEvent` named `name`.

        What LangGraph's `get_stream_writer()` writes: the agent server streams
        `data` in the `custom` stream mode, the AG-UI endpoint as a `CUSTOM`
        event, and every sink and `stream` gets the event. Nothing records it,
        and when no sink wants `CustomEvent` (and no `stream` reads) the event
        is not even built. Keep `data` plain JSON (dicts, lists, text,
        numbers) for the wire.
        """
        emit = self._run.custom
        if emit is not None:
            await emit(CustomEvent(self.index, self.path, data, name))

    # -- effects ----------------------------------------------------------------------------
    async def call_model(self, model: ChatModel, request: ChatRequest) -> ChatResponse:
        """Send `request` to `model`, reporting the request and the response as events.

        In a run with a journal the response is recorded; a resumed or
        replayed step gets the recorded response to the same request instead.
        In a run with guards (`agentgraph.guards`) the request and the answer
        are shown to them.
        """
        response: ChatResponse = await self._run.stack.model(self, ModelCallEffect(model, request))
        return response

    def stream_model(
        self, model: ChatModel, request: ChatRequest
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
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
        return self._run.stack.stream(self, ModelStreamEffect(model, request))

    async def embed(self, embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
        """Embed `texts`; recorded in a run with a journal, like a model call."""
        vectors: list[list[float]] = await self._run.stack.embed(self, EmbedEffect(embedder, texts))
        return vectors

    async def call_tools(
        self,
        tools: Sequence[ToolLike],
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
        if not calls:
            return []
        effect = ToolCallsEffect(tools, calls, limit, timeout, context, max_result_chars)
        answers: list[ToolAnswer] = await self._run.stack.tools(self, effect)
        return answers

    def memory(self, memory: Any) -> Any:
        """`memory` (an `agentgraph.memory` store) as this step sees it: every call an effect
        (`MemoryEffect`), which the run's layers see and its journal records.

        A resumed or replayed step is served what the run read, a replay writes
        nothing, and a write is applied once even across a crash and resume
        (see `agentgraph.memory.journaled`, which this is).
        """
        view = PROVIDED.memory_view
        if view is None:  # no memory store exists before agentgraph.memory loads
            raise UsageError(
                f"rt.memory() takes an agentgraph.memory store, not {type(memory).__name__}"
            )
        return view(memory, self)

    async def once(self, name: str, fn: Callable[..., T | Awaitable[T]], *args: Any) -> T:
        """Call `fn(*args)` (sync or async) once per run and remember the result.

        The one call for a node's own I/O: with a checkpoint store the result
        is recorded, so a resumed or replayed step gets it back without
        calling `fn` again; it must be data the context could hold. Without a
        store, `fn` is simply called.
        """
        return cast("T", await self._run.stack.once(self, OnceEffect(name, fn, args)))

    async def interrupt(self, question: Any) -> Any:
        """Ask for outside input: the run stops with `Interrupted` carrying `question`.

        `GraphRunner.resume(..., answer=...)` runs this node again, and this call
        then returns the answer. Work before it that went through the runtime
        (model calls, tools, `once`) is served from the record, not done again.
        Needs a checkpoint store; `question` must be data the context could hold.
        """
        return await self._run.stack.interrupt(self, InterruptEffect(question))

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
        first = graph._first
        resumed = self._enter(graph)
        prelude: Node[Any, Any] | None = None  # committed in the start's place, once it routed
        if resumed is not None:
            target, current, local, run.steps = resumed
        elif journal is not None and self.depth == 0:
            prelude, step, current = await self._prelude(journal, current)
        # Where each route is told or committed, `_routed` does it; a run that records
        # nothing and announces no step's start runs each step of a plain `async` `@node`
        # function in this loop itself (see `Graph._direct`), without `execute`'s coroutine.
        routes = run.routed is not None or journal is not None
        direct = self._direct(graph)
        clock = perf_counter if run.on_step or run.finished is not None else _no_clock
        finish, fanout, handle, limit = graph.finish, self.fanout, run.handle, run.max_steps
        while True:
            if target is None:
                routed = first.get(source) or graph.route(source, current, step, self.path)
                # A router that returned an awaitable leaves the route pending.
                target, position = routed if isinstance(routed, tuple) else await routed.settle()
                told = (
                    self._routed(graph, source, target, position, current, step, local, prelude)
                    if routes
                    else None
                )
                if told is not None:
                    await told
            if target is finish:
                return current
            local += 1
            step = run.steps + 1  # execute takes this number before it first awaits
            source, target = target, None
            call = direct.get(source)
            try:
                if call is None or step > limit or not step & 63 or handle._cancelled:
                    current = await self.execute(source, current, local)
                    continue
                # `execute`'s fast path, for a step that does not yield to look for cancellation.
                run.steps = step
                fn, path = call
                began = clock()
                try:
                    out = await fn(current)
                    if not isinstance(out, AgentContext):
                        raise cast("FunctionNode[Any, Any]", source).not_a_context(out)
                except Exception as error:
                    current = await self._recovered(
                        source, current, (step, local), path, error, began
                    )
                    continue
                current = out
                told = self._finished(source, out, step, local, path, 1, began, fanout)
                if told is not None:
                    await told
            except NodeFailed as error:
                # `current` is still the failed step's input: an error transition goes on from it.
                target, current = await failed(self, graph, source, error, current, (step, local))

    def _direct(
        self, graph: Graph[Any, Any]
    ) -> dict[Node[Any, Any], tuple[Callable[..., Any], tuple[str, ...]]]:
        """The steps of `graph` its loop may run itself in this run, by node: the function
        and the step's path. None of them in a run with a journal, with listeners of each step's
        start, or with a deadline (whose steps each look for cancellation)."""
        run = self._run
        if run.journal is not None or run.started is not None or run.watch:
            return _NO_STEPS
        if self.depth == 0:  # the paths the graph holds are those below a run's root
            return graph._direct
        path = self.path
        return {node: (fn, (*path, node.name)) for node, (fn, _) in graph._direct.items()}

    def _routed(
        self,
        graph: Graph[Any, Any],
        source: Node[Any, Any],
        target: Node[Any, Any],
        position: int,
        out: AgentContext[Any],
        step: int,
        local: int,
        prelude: Node[Any, Any] | None,
    ) -> Awaitable[None] | None:
        """Tell the run's listeners where `source` went, then commit its step (the prelude's,
        if any, in the start's place) to the journal, if the run has one; None when both
        were done at once, else what is left to await (a listener that is async)."""
        run = self._run
        done = source if source is not graph.start else prelude
        if run.routed is not None:
            dynamic = graph.transitions[source][position].router is not None
            told = run.routed(
                RouteChosen(step, self.path, source.name, target.name, position, dynamic)
            )
            if told is not None:
                return self._told_then_committed(told, done, target, out, step, local)
        if run.journal is not None and done is not None:
            self._commit(run.journal, done, target, out, step, local)
        return None

    async def _told_then_committed(
        self,
        told: Awaitable[None],
        done: Node[Any, Any] | None,
        target: Node[Any, Any],
        out: AgentContext[Any],
        step: int,
        local: int,
    ) -> None:
        await told
        journal = self._run.journal
        if journal is not None and done is not None:
            self._commit(journal, done, target, out, step, local)

    async def _recovered(
        self,
        node: Node[Any, Out],
        ctx: AgentContext[Any],
        where: tuple[int, int],
        path: tuple[str, ...],
        error: Exception,
        began: float,
    ) -> AgentContext[Out]:
        """A step run in the loop that raised `error`: retried or reported as `execute` does."""
        index, local = where
        rt = self._child(node, ctx, index, local, path, self.fanout)
        out, attempts = await recover(rt, node, ctx, index, error)
        told = self._finished(node, out, index, local, path, attempts, began, self.fanout)
        if told is not None:
            await told
        return out

    async def _prelude(
        self, journal: Journal, ctx: AgentContext[Any]
    ) -> tuple[Node[Any, Any] | None, int, AgentContext[Any]]:
        """Run the journal's prelude (a thread turn's compaction), if it has one, as the
        run's first step, numbered 0 in the root graph; it, its step and its output."""
        prelude = journal.prelude
        if prelude is None:
            return None, self.index, ctx
        step = self._run.steps + 1
        return prelude, step, await self.execute(prelude, ctx, 0)

    def _enter(self, graph: Graph[Any, Any]) -> Any:
        """Take on `graph`'s own policies; where a resumed run goes on in it, if it does."""
        if graph.node_retry is not None:
            self.node_retry = graph.node_retry
        if graph.usage_limits is not None:  # a fresh meter each time the graph runs
            self.meters = (*self.meters, Meter(graph.usage_limits))
        journal = self._run.journal
        return None if journal is None else journal.reenter(self, graph)

    def _commit(
        self,
        journal: Journal,
        source: Node[Any, Any],
        target: Node[Any, Any],
        out: AgentContext[Any],
        step: int,
        local: int,
    ) -> None:
        """Commit `source`'s step (its run-wide and local numbers) and where it goes next."""
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
        started = perf_counter() if run.on_step or run.finished is not None else 0.0
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
            out, attempts = await recover(rt, node, ctx, index, error)
        told = self._finished(node, out, index, local_index, path, attempts, started, fanout)
        if told is not None:
            await told
        return out

    def _finished(
        self,
        node: Node[Any, Any],
        out: AgentContext[Any],
        index: int,
        local: int,
        path: tuple[str, ...],
        attempts: int,
        began: float,
        fanout: bool,
    ) -> Awaitable[None] | None:
        """Report a step that returned `out`: the handle (on the run's own path), its event
        and the step callbacks; None when all were done at once, else what to await."""
        run = self._run
        if not fanout:
            run.handle.context = out
            run.handle.step = index
        callbacks = run.on_step
        if not callbacks and run.finished is None:  # only a step record needs the clock
            return None
        # Built as a tuple: a step record costs a quarter of an attrs instance.
        info = _new_tuple(
            StepInfo, (index, local, self.depth, path, attempts, perf_counter() - began)
        )
        # Its event, then the step callbacks in order: the first that returns an
        # awaitable hands it, and the callbacks after it, to a coroutine, so steps
        # with only sync listeners never build one.
        if run.finished is not None:
            told = run.finished(NodeFinished(info, node, out))
            if told is not None:
                return _awaited_back(told, callbacks, info, node, out)
        for i, (callback, is_coroutine) in enumerate(callbacks):
            result = callback(info, node, out)
            if result is not None and (is_coroutine or inspect.isawaitable(result)):
                return _awaited_back(result, callbacks[i + 1 :], info, node, out)
        return None

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


async def _checkpoint(index: int) -> None:
    """Every 64th step yields, so deadlines (the run's and the caller's) fire even
    when steps never await; other steps of a run that can be cancelled or timed
    out only look for cancellation."""
    if not index & 63:
        await anyio.lowlevel.checkpoint()
    else:
        await anyio.lowlevel.checkpoint_if_cancelled()


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
