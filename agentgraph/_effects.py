"""The effects a step has on the world, as `Runtime` methods: models, tools, `once`, `interrupt`.

Each reports itself as the run's events and, in a run with a journal (a
checkpoint store), goes through the journal, so a resumed or replayed step
gets the recorded result instead of doing the work again. `Runtime` (in
`_runtime.py`, with the step loop) inherits them from `Effects`.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from time import perf_counter
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio
import anyio.lowlevel
import attrs
import orjson

from ._clip import MAX_RESULT_CHARS
from ._context import AgentContext
from ._events import Embedded, ModelRequested, ModelResponded, ModelStreamed, ToolFinished
from ._gate import ModelGate, _Watched, gated_request, gated_stream
from ._journal import EmbedCall, ModelCall, OnceCall, ToolAnswer, ToolsCall
from ._json import to_data
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
    from ._runtime import Runtime
    from .memory import JournaledMemory, Memory
    from .tools._tool import Tool

__all__ = ("Effects", "Interrupt", "tool_runtime")

T = TypeVar("T")

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


class Effects:
    """`Runtime`'s effects: everything a node does outside its context goes through these.

    A mixin with no state of its own: its methods take the `Runtime` they are
    called on, so a call costs what it did as a method of `Runtime` itself.
    """

    # Each method's `self` is the `Runtime` it runs on; mypy wants a self type to be a
    # supertype of the class it is written in, hence `ignore[misc]` on each signature.
    __slots__ = ()

    async def call_model(self: Runtime, model: ChatModel, request: ChatRequest) -> ChatResponse:  # type: ignore[misc]
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
        await _requesting(self, model, name, request)
        started = perf_counter()
        journal = self._run.journal
        call = model_call(self, model, name, request)
        if journal is None:
            response = await call()
        else:
            response = await journal.model(self, request, call)
        await responded(self, name, response, started)
        return response

    @asynccontextmanager
    async def stream_model(  # type: ignore[misc]
        self: Runtime, model: ChatModel, request: ChatRequest
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
        await _requesting(self, model, name, request)
        started = perf_counter()
        journal = self._run.journal
        key, recorded = ("", None) if journal is None else journal.recorded_model(self, request)
        if recorded is None and journal is not None and getattr(journal, "remote", False):
            # Effects run elsewhere: the call is made as one request, streamed as recorded.
            recorded = await journal.model(self, request, ModelCall(model, request))
            key = ""
        tell = None if self._run.emit is None else self._streamed
        async with model_stream(self, model, name, request, recorded) as events:
            watched = _Watched(events, tell)
            yield watched
        response = watched.response
        if response is not None:
            if journal is not None and recorded is None:
                journal.record_model(self, key, request, response)
            await responded(self, name, response, started)

    async def _streamed(self: Runtime, text: str) -> None:  # type: ignore[misc]
        await self.emit(ModelStreamed(self.index, self.path, text))

    async def embed(self: Runtime, embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:  # type: ignore[misc]
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

    async def call_tools(  # type: ignore[misc]
        self: Runtime,
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
        make: Callable[[Sequence[ToolCall]], Awaitable[list[ToolAnswer]]] = run
        guards = self._run.guards
        if guards is not None and guards.tools and calls:
            from .guards._effects import checked_calls, merged

            asked = calls
            calls, refused = await checked_calls(self, guards, calls)
        if guards is not None and guards.results:  # checked before the journal records them
            from .guards._effects import ResultsChecked

            make = ResultsChecked(self, guards, run)
        journal = self._run.journal
        if not calls:
            answers: list[ToolAnswer] = []
        elif journal is None:
            answers = await make(calls)
        else:
            unsafe = frozenset(t.name for t in tools if not t.retry_safe)
            effect = ToolsCall(tools, limit, timeout, context, make, max_result_chars)
            answers = await journal.tools(self, calls, unsafe, effect)
        if refused:
            answers = merged(asked, answers, refused)
        emit = self._run.emit
        if emit is not None:  # the events are built only for a listener
            for call, message, duration in answers:
                await emit(ToolFinished(self.index, self.path, call, message, duration))
        return answers

    def memory(self: Runtime, memory: Memory) -> JournaledMemory:  # type: ignore[misc]
        """`memory` (an `agentgraph.memory` store) as this step sees it: every call an effect.

        A resumed or replayed step is served what the run read, a replay writes
        nothing, and a write is applied once even across a crash and resume
        (see `agentgraph.memory.journaled`).
        """
        from .memory._journaled import journaled  # loaded with the first memory call

        return journaled(memory, self)

    async def once(self: Runtime, name: str, fn: Callable[..., T | Awaitable[T]], *args: Any) -> T:  # type: ignore[misc]
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

    async def interrupt(self: Runtime, question: Any) -> Any:  # type: ignore[misc]
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
        return await gated_request(self.gate, self.model, self.name, self.request)


def model_call(rt: Runtime, model: ChatModel, name: str, request: ChatRequest) -> ModelCall:
    """The call to make (or to hand a journal): admitted by the run's gate if it has one."""
    gate = rt._run.gate
    return ModelCall(model, request) if gate is None else _GatedCall(model, request, gate, name)


@asynccontextmanager
async def model_stream(
    rt: Runtime,
    model: ChatModel,
    name: str,
    request: ChatRequest,
    recorded: ChatResponse | None,
) -> AsyncIterator[AsyncIterator[StreamEvent]]:
    """The stream's events: as recorded, or from the model (admitted by the run's gate)."""
    journal = rt._run.journal
    if recorded is None and journal is not None and getattr(journal, "remote", False):
        # Effects run elsewhere: the call is made as one request, streamed as recorded.
        recorded = await journal.model(rt, request, ModelCall(model, request))
    if recorded is not None:
        yield _Replayed(recorded)
        return
    gate = rt._run.gate
    if gate is None:
        async with model.stream(request) as events:
            yield events
        return
    async with gated_stream(gate, model, name, request) as events:
        yield events


async def _requesting(rt: Runtime, model: ChatModel, name: str, request: ChatRequest) -> None:
    """A model call's start: the run's limits checked, the request reported."""
    for meter in rt.meters:
        meter.before(name)
    if rt._run.emit is not None:  # the event is built only for a listener
        await rt._run.emit(_requested(rt, model, name, request))


async def responded(rt: Runtime, name: str, response: ChatResponse, started: float) -> None:
    """A model call's end: its usage charged to the run's limits, the response reported."""
    for meter in rt.meters:
        meter.after(name, response.usage)
    if rt._run.emit is not None:
        elapsed = perf_counter() - started
        await rt._run.emit(ModelResponded(rt.index, rt.path, name, response, elapsed))


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
