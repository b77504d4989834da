"""The usage-limits layer: a model call that would pass a run's limits is refused before
it is sent, and what it used is charged once it answers.

The limits are the runner's (`GraphRunner(usage_limits=...)`) and those of the
graphs the step runs in (`GraphBuilder(usage_limits=...)`), as the step's
`Runtime.meters`; a step under no limit passes straight through.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from ..llm._model import ChatResponse, ResponseDone, StreamEvent
from ._effect_kinds import ModelCallEffect, ModelStreamEffect
from ._usage import Meter

if TYPE_CHECKING:
    from ._layers import Events, Proceed, ProceedStream
    from ._runtime import Runtime

__all__ = ("LimitsLayer",)


class LimitsLayer:
    """Checks each model call against the step's meters before it is sent, charges it after."""

    __slots__ = ()
    wants = frozenset({ModelCallEffect, ModelStreamEffect})
    performed = False

    def around(self, rt: Runtime, effect: ModelCallEffect, proceed: Proceed) -> Any:
        meters = rt.meters
        if not meters:  # no coroutine of its own: the call is the layer below's
            return proceed(rt, effect)
        return _metered(rt, effect, proceed, meters)

    def around_stream(
        self, rt: Runtime, effect: ModelStreamEffect, proceed: ProceedStream
    ) -> Events:
        meters = rt.meters
        if not meters:
            return proceed(rt, effect)
        return _metered_stream(rt, effect, proceed, meters)


async def _metered(
    rt: Runtime, effect: ModelCallEffect, proceed: Proceed, meters: tuple[Meter, ...]
) -> ChatResponse:
    name = effect.name
    for meter in meters:
        meter.before(name)
    response: ChatResponse = await proceed(rt, effect)
    for meter in meters:
        meter.after(name, response.usage)
    return response


@asynccontextmanager
async def _metered_stream(
    rt: Runtime, effect: ModelStreamEffect, proceed: ProceedStream, meters: tuple[Meter, ...]
) -> AsyncIterator[AsyncIterator[StreamEvent]]:
    name = effect.name
    for meter in meters:
        meter.before(name)
    async with proceed(rt, effect) as events:
        yield _Charged(events, meters, name)


class _Charged:
    """Passes a stream's events on, charging the final response's usage as it passes."""

    __slots__ = ("_events", "_meters", "_name")

    def __init__(
        self, events: AsyncIterator[StreamEvent], meters: tuple[Meter, ...], name: str
    ) -> None:
        self._events = events
        self._meters = meters
        self._name = name

    def __aiter__(self) -> _Charged:
        return self

    async def __anext__(self) -> StreamEvent:
        event = await self._events.__anext__()
        if isinstance(event, ResponseDone):
            for meter in self._meters:
                meter.after(self._name, event.response.usage)
        return event
