"""The durability protocol: how a run's journal plugs into the one graph loop.

`Runtime.run_graph` is the only graph loop, and `Runtime`'s effect methods
(`call_model`, `stream_model`, `embed`, `call_tools`, `once`, `interrupt`) are
the only way nodes reach the world. In a run with a journal, both consult it:

- the loop calls `enter` as each step starts, `new_attempt` when it is retried,
  `reenter` when a graph starts (a resumed run continues where its record
  ends) and `commit` once a step completed and its graph chose the next node;
- each effect method asks the journal first, which serves a recorded result
  (resume, replay) or runs the effect and records what it returned.

A journal's `prelude` (None for most) is a node the root graph runs as the
run's first step, before its start routes (numbered 0 in the graph, and
committed like any step), unless the run resumes past it. A thread turn's
compaction is one: its summary call is then a model call like a node's. Such
a journal's `entry` is the context the graph started from (what the prelude
made of `initial`).

With no journal the loop pays one attribute test per step. `agentgraph.checkpoint`
implements the protocol over a `CheckpointStore`; other engines (a workflow
engine's activities, say) can implement it too.

The `call` an effect method hands its journal is a small object that says what
it calls (`ModelCall`, `EmbedCall`, `OnceCall`, `ToolsCall`): a journal that
runs effects in-process awaits it, one that runs them elsewhere (as a workflow
engine's activities, in another process) reads its parts instead. Such a
journal subclasses `RemoteJournal`: its run then gets the remote journal layer
(`_layer_journal.py`), and a streamed model call is made through `model` as
one request, its response streamed as recorded deltas.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import attrs

from ..llm._embedder import Embedder
from ..llm._messages import Message, ToolCall
from ..llm._model import ChatModel, ChatRequest, ChatResponse
from ._context import AgentContext
from ._effect_kinds import MemoryEffect, ToolLike
from ._errors import UsageError

if TYPE_CHECKING:
    from ._graph import Graph
    from ._json import Types
    from ._node import Node
    from ._runtime import Interrupt, Runtime

__all__ = (
    "EmbedCall",
    "Journal",
    "JournalSource",
    "ModelCall",
    "OnceCall",
    "RemoteJournal",
    "ToolAnswer",
    "ToolRunner",
    "ToolsCall",
)

T = TypeVar("T")

ToolAnswer = tuple[ToolCall, Message, float]
"""A tool call, the tool message that answers it, and how long the call took."""

ToolRunner = Callable[[Sequence[ToolCall]], Awaitable[list[ToolAnswer]]]
"""Runs tool calls and answers each, in call order."""


@attrs.frozen(slots=True)
class ModelCall:
    """`await call()` sends `request` to `model` (what `Journal.model` is handed)."""

    model: ChatModel
    request: ChatRequest

    def __call__(self) -> Awaitable[ChatResponse]:
        return self.model.request(self.request)


@attrs.frozen(slots=True)
class EmbedCall:
    """`await call()` embeds `texts` with `embedder` (`Journal.value` under the name "embed")."""

    embedder: Embedder
    texts: Sequence[str]

    def __call__(self) -> Awaitable[list[list[float]]]:
        return self.embedder.embed(self.texts)


@attrs.frozen(slots=True)
class OnceCall:
    """`await call()` calls `fn(*args)`, sync or async (what `Runtime.once` hands `value`)."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]

    async def __call__(self) -> Any:
        result = self.fn(*self.args)
        if inspect.isawaitable(result):
            result = await result
        return result


@attrs.frozen(slots=True)
class ToolsCall:
    """`await call(pending)` runs tool calls with `tools` (what `Journal.tools` is handed).

    `run` runs them here; `tools`, `limit`, `timeout`, `context` and
    `max_result_chars` say what it runs, for a journal that runs them elsewhere.
    """

    tools: Sequence[ToolLike]
    limit: int
    timeout: float | None
    context: AgentContext[Any] | None
    run: ToolRunner
    max_result_chars: int | None = None

    def __call__(self, pending: Sequence[ToolCall]) -> Awaitable[list[ToolAnswer]]:
        return self.run(pending)


@runtime_checkable
class Journal(Protocol):
    """One run's record: the loop's hooks and the effects' memory.

    Attributes:
        run_id: the run's id, the one every event and sink sees.
        initial: the context the run starts from (a resumed run's first one).
        resumed_at: the last committed context and step of a resumed run.
        replaying: True when every effect must come from the record.
        thread_id: the thread the run is a turn of (`rt.thread_id`), or None.
        prelude: a node the root graph runs first (see the module's docstring), or None.
    """

    run_id: str
    initial: AgentContext[Any]
    resumed_at: tuple[AgentContext[Any], int] | None
    replaying: bool
    thread_id: str | None
    prelude: Node[Any, Any] | None

    def patched(self, name: str) -> bool:
        """Whether the run started on a graph declaring the patch `name` (`rt.patched`):
        the record's answer, so a resumed, replayed or forked run gets the first one."""
        ...

    # -- the loop's hooks -----------------------------------------------------------------
    def enter(
        self, parent: Runtime, rt: Runtime, index: int, local: int, given: AgentContext[Any]
    ) -> None:
        """Step `index` (number `local` in its graph) starts in `rt`, run by `parent`."""
        ...

    def new_attempt(self, rt: Runtime) -> None:
        """The step of `rt` is retried: its effects from now on get keys of their own."""
        ...

    def reenter(
        self, rt: Runtime, graph: Graph[Any, Any]
    ) -> tuple[Node[Any, Any], AgentContext[Any], int, int] | None:
        """Where `graph`, starting in `rt`, resumes; None to start from `graph.start`.

        The node to run next (or `graph.finish`), its input, how many steps of
        the graph ran before it, and the run-wide step count to continue from.
        """
        ...

    def commit(
        self,
        rt: Runtime,
        source: Node[Any, Any],
        target: Node[Any, Any],
        out: AgentContext[Any],
        local: int,
    ) -> None:
        """The step just run in `rt`'s graph (number `local` there) turned its input into
        `out`, and the graph chose `target` to run next."""
        ...

    # -- effects --------------------------------------------------------------------------
    async def model(
        self, rt: Runtime, request: ChatRequest, call: Callable[[], Awaitable[ChatResponse]]
    ) -> ChatResponse:
        """The response to `request`: recorded, or `await call()` and recorded."""
        ...

    def recorded_model(self, rt: Runtime, request: ChatRequest) -> tuple[str, ChatResponse | None]:
        """For a streamed call: the effect's key and the recorded response, if any."""
        ...

    def record_model(
        self, rt: Runtime, key: str, request: ChatRequest, response: ChatResponse
    ) -> None:
        """Record the response a streamed call assembled under `key`."""
        ...

    async def value(self, rt: Runtime, name: str, call: Callable[[], Awaitable[T]]) -> T:
        """A value made once per run: recorded, or `await call()` and recorded."""
        ...

    async def tools(
        self,
        rt: Runtime,
        calls: Sequence[ToolCall],
        unsafe: frozenset[str],
        run: ToolRunner,
    ) -> list[ToolAnswer]:
        """Answers to `calls`: recorded ones served, the rest run by `run` and recorded.

        Calls to tools named in `unsafe` are made durable before they run.
        """
        ...

    async def memory(
        self, rt: Runtime, effect: MemoryEffect, call: Callable[[MemoryEffect], Awaitable[Any]]
    ) -> Any:
        """A memory call's result: recorded, or `await call(effect)` and recorded.

        A write goes to `call` with the `effect_id` it is applied once under.
        """
        ...

    async def interrupt(self, rt: Runtime, question: Any) -> Any:
        """The answer to `question`, or raise an `Interrupt` that stops the run."""
        ...

    # -- the run's end --------------------------------------------------------------------
    async def finish(self) -> None:
        """The run reached finish: make its record durable."""
        ...

    async def settle(self, stopped: Interrupt | None = None) -> None:
        """The run stopped early (`stopped` when a node asked a question)."""
        ...

    def close(self) -> None:
        """The run is over, however it ended (a crash included): let go of it. Idempotent."""
        ...


class RemoteJournal:
    """A journal that makes effects elsewhere (a workflow engine's activities) subclasses
    this, so its runs get the layer that hands it what to call instead of calling it.

    What such a journal need not have it gets from here: no thread, no prelude, every
    patch (`patched` is True: a run that starts now takes the new path), and memory
    calls refused (a memory store's effect ids are a checkpoint store's).
    """

    __slots__ = ()
    thread_id: str | None = None
    prelude: Node[Any, Any] | None = None

    def patched(self, name: str) -> bool:
        return True

    async def memory(
        self, rt: Runtime, effect: MemoryEffect, call: Callable[[MemoryEffect], Awaitable[Any]]
    ) -> Any:
        raise UsageError(
            f"memory calls are recorded by agentgraph.checkpoint stores; this run's "
            f"journal ({type(self).__name__}) cannot record them: call the memory "
            "store from a tool or from rt.once instead"
        )


@runtime_checkable
class JournalSource(Protocol):
    """What `GraphRunner.run(..., store=...)`, `resume` and `replay` accept.

    Every store in `agentgraph.checkpoint` is one; a store of your own gets
    these methods by subclassing `agentgraph.checkpoint.StoreBase`.
    """

    async def open_run(
        self, graph: Graph[Any, Any], ctx: AgentContext[Any], run_id: str
    ) -> Journal: ...

    async def open_resume(
        self, graph: Graph[Any, Any], run_id: str, answer: Any, types: Types
    ) -> Journal: ...

    async def open_replay(self, graph: Graph[Any, Any], run_id: str, types: Types) -> Journal: ...
