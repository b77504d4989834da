"""`GraphRunner` runs graphs: fresh, resumed from a checkpoint, or replayed from one.

Its methods check what they are given (`_runner_checks.py`) and open the
run's journal; how a run is then driven, streamed and reported is inherited
from `Driver` (`_runner_drive.py`).
"""

from __future__ import annotations

import enum
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import attrs

from ._context import AgentContext
from ._dispatch import Sink, wanted
from ._errors import RunError, UsageError
from ._events import CustomEvent, Event, NodeFinished, NodeStarted, RouteChosen
from ._gate import ModelGate
from ._graph import Graph
from ._journal import Journal, JournalSource
from ._json import Types
from ._node import Node
from ._retry import RetryPolicy
from ._runner_checks import (
    _callbacks,
    _check_sink_errors,
    _guards,
    _maybe_async,
    _running_loop,
    _sinks,
    _source,
)
from ._runner_checks import _check_input as _check_input
from ._runner_checks import as_graph as as_graph
from ._runner_drive import Driver, _EventStream
from ._runtime import RunHandle as RunHandle
from ._runtime import Runtime as Runtime
from ._runtime import StepCallback as StepCallback
from ._runtime import new_run_id as new_run_id
from ._usage import UsageLimits
from ._versions import GraphVersions

if TYPE_CHECKING:
    from anyio.abc import ObjectReceiveStream

    from .guards._guard import Guards

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
class GraphRunner(Driver):
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
    guards: Guards | None = attrs.field(default=None, converter=_guards, kw_only=True)
    versions: GraphVersions | None = attrs.field(default=None, kw_only=True)
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
        return _EventStream(self._stream(graph, ctx, handle, opening))

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
