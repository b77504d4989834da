"""The journal layer: a run's record serves what a resumed or replayed step did before,
and keeps what a new one does.

`JournalLayer` is for journals that make effects in this process (the
checkpoint stores' journals): each effect goes to the journal with a call that
proceeds to the layers below, so what those layers answer (a cache's answer,
a checked tool result) is what gets recorded. `RemoteJournalLayer` is for
journals that make effects elsewhere (a workflow engine's activities, marked
by subclassing `RemoteJournal`): they read what to call from the call handed
to them, and a streamed model call is made as one request there and streamed
here as recorded.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import attrs

from ..llm._messages import ToolCall
from ..llm._model import ChatRequest, ChatResponse, ResponseDone, StreamEvent
from ._effect_kinds import (
    EmbedEffect,
    InterruptEffect,
    MemoryEffect,
    ModelCallEffect,
    ModelStreamEffect,
    OnceEffect,
    ToolCallsEffect,
)
from ._effects import Replayed
from ._journal import EmbedCall, Journal, ModelCall, OnceCall, ToolAnswer, ToolsCall

if TYPE_CHECKING:
    from ._layers import Proceed, ProceedStream
    from ._runtime import Runtime

__all__ = ("JournalLayer", "RemoteJournalLayer")


@attrs.frozen(slots=True)
class _ModelProceed(ModelCall):
    """`await call()` proceeds to the layers below the journal with the effect."""

    rt: Any
    effect: Any
    proceed: Any

    def __call__(self) -> Awaitable[ChatResponse]:
        response: Awaitable[ChatResponse] = self.proceed(self.rt, self.effect)
        return response


@attrs.frozen(slots=True)
class _EmbedProceed(EmbedCall):
    rt: Any
    effect: Any
    proceed: Any

    def __call__(self) -> Awaitable[list[list[float]]]:
        vectors: Awaitable[list[list[float]]] = self.proceed(self.rt, self.effect)
        return vectors


@attrs.frozen(slots=True)
class _OnceProceed(OnceCall):
    rt: Any
    effect: Any
    proceed: Any

    async def __call__(self) -> Any:
        return await self.proceed(self.rt, self.effect)


class _ToolsProceed:
    """Runs the calls a journal did not find recorded through the layers below it."""

    __slots__ = ("_effect", "_proceed", "_rt")

    def __init__(self, rt: Runtime, effect: ToolCallsEffect, proceed: Proceed) -> None:
        self._rt = rt
        self._effect = effect
        self._proceed = proceed

    def __call__(self, pending: Sequence[ToolCall]) -> Awaitable[list[ToolAnswer]]:
        effect = self._effect
        if pending is not effect.calls:
            effect = attrs.evolve(effect, calls=pending)
        answers: Awaitable[list[ToolAnswer]] = self._proceed(self._rt, effect)
        return answers


@attrs.frozen(slots=True)
class _MemoryProceed:
    """`await call(effect)` proceeds to the layers below the journal with a memory call
    (a write with the effect id the journal gave it)."""

    rt: Any
    proceed: Any

    def __call__(self, effect: MemoryEffect) -> Awaitable[Any]:
        result: Awaitable[Any] = self.proceed(self.rt, effect)
        return result


async def _tools(
    journal: Journal, rt: Runtime, effect: ToolCallsEffect, proceed: Proceed
) -> list[ToolAnswer]:
    tools = effect.tools
    unsafe = frozenset(t.name for t in tools if not t.retry_safe)
    call = ToolsCall(
        tools,
        effect.limit,
        effect.timeout,
        effect.context,
        _ToolsProceed(rt, effect, proceed),
        effect.max_result_chars,
    )
    return await journal.tools(rt, effect.calls, unsafe, call)


class JournalLayer:
    """Every effect through a journal that makes them here (see the module's docstring)."""

    __slots__ = ()
    wants = None
    performed = False

    async def around(self, rt: Runtime, effect: Any, proceed: Proceed) -> Any:
        journal = rt._run.journal
        assert journal is not None, "a journal layer in a run without a journal"
        kind = type(effect)
        if kind is ModelCallEffect:
            call = _ModelProceed(effect.model, effect.request, rt, effect, proceed)
            return await journal.model(rt, effect.request, call)
        if kind is ToolCallsEffect:
            return await _tools(journal, rt, effect, proceed)
        if kind is EmbedEffect:
            embed = _EmbedProceed(effect.embedder, effect.texts, rt, effect, proceed)
            return await journal.value(rt, "embed", embed)
        if kind is OnceEffect:
            once = _OnceProceed(effect.fn, effect.args, rt, effect, proceed)
            return await journal.value(rt, effect.name, once)
        if kind is MemoryEffect:
            return await journal.memory(rt, effect, _MemoryProceed(rt, proceed))
        if kind is InterruptEffect:
            return await journal.interrupt(rt, effect.question)
        return await proceed(rt, effect)

    @asynccontextmanager
    async def around_stream(
        self, rt: Runtime, effect: ModelStreamEffect, proceed: ProceedStream
    ) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        journal = rt._run.journal
        assert journal is not None, "a journal layer in a run without a journal"
        key, recorded = journal.recorded_model(rt, effect.request)
        if recorded is not None:
            yield Replayed(recorded)
            return
        async with proceed(rt, effect) as events:
            yield _Recorded(events, journal, rt, key, effect.request)


class RemoteJournalLayer(JournalLayer):
    """Every effect through a journal that makes them elsewhere: a streamed call is made
    as one request (the journal's `model`) and streamed as recorded."""

    __slots__ = ()

    @asynccontextmanager
    async def around_stream(
        self, rt: Runtime, effect: ModelStreamEffect, proceed: ProceedStream
    ) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        journal = rt._run.journal
        assert journal is not None, "a journal layer in a run without a journal"
        response = await journal.model(rt, effect.request, ModelCall(effect.model, effect.request))
        yield Replayed(response)


class _Recorded:
    """Passes a stream's events on, recording the final response as it passes."""

    __slots__ = ("_events", "_journal", "_key", "_request", "_rt")

    def __init__(
        self,
        events: AsyncIterator[StreamEvent],
        journal: Journal,
        rt: Runtime,
        key: str,
        request: ChatRequest,
    ) -> None:
        self._events = events
        self._journal = journal
        self._rt = rt
        self._key = key
        self._request = request

    def __aiter__(self) -> _Recorded:
        return self

    async def __anext__(self) -> StreamEvent:
        event = await self._events.__anext__()
        if isinstance(event, ResponseDone):
            self._journal.record_model(self._rt, self._key, self._request, event.response)
        return event
