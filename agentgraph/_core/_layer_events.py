"""The events layer: each effect reported on the run's event stream.

`ModelRequested` before a model call and `ModelResponded` once it answered
(`ModelStreamed` for each piece of a streamed answer's text, and
`ModelResponded` once its reader is done with the stream), `ToolFinished`
for each tool answer, `Embedded` for an embedding. It is in the stacks of
runs that have listeners only, so a run nobody listens to builds no event.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from time import perf_counter
from typing import TYPE_CHECKING, Any

from ..llm._model import ChatResponse, ResponseDone, StreamEvent, TextDelta
from ._effect_kinds import EmbedEffect, ModelCallEffect, ModelStreamEffect, ToolCallsEffect
from ._events import Embedded, ModelRequested, ModelResponded, ModelStreamed, ToolFinished

if TYPE_CHECKING:
    from ._journal import ToolAnswer
    from ._layers import Proceed, ProceedStream
    from ._runtime import Runtime

__all__ = ("EventsLayer", "requested")


class EventsLayer:
    """Reports model calls, streams, tool answers and embeddings as events."""

    __slots__ = ()
    wants = frozenset({ModelCallEffect, ModelStreamEffect, ToolCallsEffect, EmbedEffect})
    performed = False

    async def around(self, rt: Runtime, effect: Any, proceed: Proceed) -> Any:
        kind = type(effect)
        if kind is ModelCallEffect:
            return await _model(rt, effect, proceed)
        if kind is ToolCallsEffect:
            answers: list[ToolAnswer] = await proceed(rt, effect)
            for call, message, duration in answers:
                await rt.emit(ToolFinished(rt.index, rt.path, call, message, duration))
            return answers
        if kind is EmbedEffect:
            return await _embed(rt, effect, proceed)
        return await proceed(rt, effect)

    @asynccontextmanager
    async def around_stream(
        self, rt: Runtime, effect: ModelStreamEffect, proceed: ProceedStream
    ) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        name = effect.name
        await rt.emit(requested(rt, effect))
        started = perf_counter()
        async with proceed(rt, effect) as events:
            told = _Told(events, rt)
            yield told
        response = told.response
        if response is not None:  # reported once its reader is done with the stream
            elapsed = perf_counter() - started
            await rt.emit(ModelResponded(rt.index, rt.path, name, response, elapsed))


async def _model(rt: Runtime, effect: ModelCallEffect, proceed: Proceed) -> ChatResponse:
    name = effect.name
    await rt.emit(requested(rt, effect))
    started = perf_counter()
    response: ChatResponse = await proceed(rt, effect)
    await rt.emit(ModelResponded(rt.index, rt.path, name, response, perf_counter() - started))
    return response


async def _embed(rt: Runtime, effect: EmbedEffect, proceed: Proceed) -> list[list[float]]:
    started = perf_counter()
    vectors: list[list[float]] = await proceed(rt, effect)
    embedder = effect.embedder
    name = getattr(embedder, "model", None) or type(embedder).__name__
    size = len(vectors[0]) if vectors else embedder.dimensions
    elapsed = perf_counter() - started
    await rt.emit(Embedded(rt.index, rt.path, str(name), len(effect.texts), size, elapsed))
    return vectors


def requested(rt: Runtime, effect: ModelCallEffect | ModelStreamEffect) -> ModelRequested:
    """The `ModelRequested` event of a model call."""
    model = effect.model
    provider = getattr(model, "provider", "")
    server = getattr(model, "base_url", "")
    return ModelRequested(
        rt.index,
        rt.path,
        effect.name,
        effect.request,
        provider if isinstance(provider, str) else "",
        server if isinstance(server, str) else "",
    )


class _Told:
    """Passes a stream's events on, reporting its text as `ModelStreamed` as it passes and
    keeping the final response.

    A class rather than an async generator, so a reader that stops early
    leaves nothing for the garbage collector to finalize.
    """

    __slots__ = ("_events", "_rt", "response")

    def __init__(self, events: AsyncIterator[StreamEvent], rt: Runtime) -> None:
        self._events = events
        self._rt = rt
        self.response: ChatResponse | None = None

    def __aiter__(self) -> _Told:
        return self

    async def __anext__(self) -> StreamEvent:
        event = await self._events.__anext__()
        if isinstance(event, TextDelta):
            if event.text:
                rt = self._rt
                await rt.emit(ModelStreamed(rt.index, rt.path, event.text))
        elif isinstance(event, ResponseDone):
            self.response = event.response
        return event
