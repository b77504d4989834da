"""The guards as layers of a run's effects: where each stage stands in the stack.

- `AroundGuards` (outermost): input guards that may rewrite a request, asked
  before it goes on, and output guards, asked about the answer on its way back;
  what every guard of the call spent is added to the answer's usage here.
- `BesideGuards` (below the events): input guards that never rewrite, asked
  while the call is in flight (one that blocks cancels it), and tool-call
  guards, which refuse a call before its tool runs.
- `ResultGuards` (below the journal): each tool answer checked before it is
  recorded, so a resumed or replayed step is served the checked answer.

`Guards.layers()` builds those a runner's guards need, once per runner.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from .._core._effect_kinds import ModelCallEffect, ModelStreamEffect, ToolCallsEffect
from .._core._journal import ToolAnswer
from ..llm._messages import ToolCall, Usage
from ..llm._model import ChatResponse, StreamEvent
from ._effects import (
    ResultsChecked,
    _added,
    _Beside,
    _beside,
    _blocked,
    _Checked,
    _checked,
    _split,
    checked_calls,
    merged,
    output_checked,
)
from ._guard import Guard, Guards

if TYPE_CHECKING:
    from .._core._layers import Proceed, ProceedStream
    from .._core._runtime import Runtime

__all__ = ("AroundGuards", "BesideGuards", "ResultGuards", "layers_of")

_SPENT: ContextVar[list[Usage] | None] = ContextVar("agentgraph_guards_spent", default=None)
"""What the guards beside the current model call spent, for the layer above to add."""

_MODEL = frozenset({ModelCallEffect, ModelStreamEffect})
_TOOLS = frozenset({ToolCallsEffect})


def layers_of(guards: Guards) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]:
    """The layers `guards` add to a stack: above the limits, beside the call, below the
    journal (each empty when no guard stands there)."""
    before, beside = _split(guards)
    around = (AroundGuards(guards, before),) if guards.input or guards.output else ()
    kinds = (_MODEL if beside else frozenset()) | (_TOOLS if guards.tools else frozenset())
    besides = (BesideGuards(guards, beside, kinds),) if kinds else ()
    results = (ResultGuards(guards),) if guards.results else ()
    return around, besides, results


class AroundGuards:
    """Input guards before a model call (those that may rewrite it), output guards after."""

    __slots__ = ("_before", "_guards")
    wants = _MODEL
    performed = False

    def __init__(self, guards: Guards, before: tuple[Guard, ...]) -> None:
        self._guards = guards
        self._before = before

    async def _opened(self, rt: Runtime, effect: Any) -> tuple[Any, Usage | None]:
        """The effect as the input guards before it leave it, and what they spent."""
        request, spent = await _checked(
            rt, "input", self._before, effect.request, self._guards.timeout
        )
        if request is not effect.request:
            effect = attrs.evolve(effect, request=request)
        return effect, spent

    async def _answered(
        self, rt: Runtime, response: ChatResponse, spent: Usage | None, beside: list[Usage]
    ) -> ChatResponse:
        """The answer past the output guards, with what every guard of the call spent."""
        for used in beside:
            spent = _added(spent, used)
        output = self._guards.output
        message = response.message
        if output:
            message, more = await output_checked(rt, output, message, self._guards.timeout)
            spent = _added(spent, more)
        if message is not response.message:
            response = attrs.evolve(response, message=message)
        if spent is not None:
            response = attrs.evolve(response, usage=response.usage + spent)
        return response

    async def around(self, rt: Runtime, effect: ModelCallEffect, proceed: Proceed) -> Any:
        effect, spent = await self._opened(rt, effect)
        beside: list[Usage] = []
        token = _SPENT.set(beside)
        try:
            response: ChatResponse = await proceed(rt, effect)
        finally:
            _SPENT.reset(token)
        return await self._answered(rt, response, spent, beside)

    @asynccontextmanager
    async def around_stream(
        self, rt: Runtime, effect: ModelStreamEffect, proceed: ProceedStream
    ) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        effect, spent = await self._opened(rt, effect)
        beside: list[Usage] = []

        async def done(response: ChatResponse) -> ChatResponse:
            return await self._answered(rt, response, spent, beside)

        token = _SPENT.set(beside)
        try:
            async with proceed(rt, effect) as events:
                yield _Checked(events, done)
        finally:
            _SPENT.reset(token)


class BesideGuards:
    """Input guards that never rewrite, beside a model call; tool-call guards before tools."""

    __slots__ = ("_beside", "_guards", "wants")
    performed = False

    def __init__(
        self, guards: Guards, beside: tuple[Guard, ...], wants: frozenset[type[Any]]
    ) -> None:
        self._guards = guards
        self._beside = beside
        self.wants = wants

    async def around(self, rt: Runtime, effect: Any, proceed: Proceed) -> Any:
        if type(effect) is ToolCallsEffect:
            return await _tools(rt, self._guards, effect, proceed)
        guards = self._guards
        name, request = effect.name, effect.request
        state = _Beside()
        response: ChatResponse | None = None
        async with anyio.create_task_group() as group:
            served = await group.start(
                _beside, rt, self._beside, request, guards.timeout, group.cancel_scope, state
            )
            if not served:
                try:
                    state.in_flight = True
                    response = await proceed(rt, effect)
                    state.in_flight = False
                    state.spent = response.usage
                except Exception as exc:
                    state.error = exc
                    group.cancel_scope.cancel()
        await _blocked(rt, state, name, request)
        _spent(state)
        if response is None:  # the round came from the record: the call goes as usual
            response = await proceed(rt, effect)
        return response

    @asynccontextmanager
    async def around_stream(
        self, rt: Runtime, effect: ModelStreamEffect, proceed: ProceedStream
    ) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        guards = self._guards
        name, request = effect.name, effect.request
        state = _Beside()

        async def done(response: ChatResponse) -> ChatResponse:
            if not state.reported:
                state.in_flight = False
                state.spent = response.usage
                await state.decided.wait()
                await _blocked(rt, state, name, request)
                _spent(state)
            return response

        failure: Exception | None = None
        async with anyio.create_task_group() as group:
            served = await group.start(
                _beside, rt, self._beside, request, guards.timeout, group.cancel_scope, state
            )
            if not served:
                try:
                    async with proceed(rt, effect) as events:
                        state.in_flight = True
                        yield _Checked(events, done)
                except Exception as exc:  # the reader's or the call's: raised unwrapped
                    failure = exc
                    group.cancel_scope.cancel()
        if failure is not None:
            raise failure
        if not served:
            if not state.reported:
                await _blocked(rt, state, name, request)
                _spent(state)
            return
        await _blocked(rt, state, name, request)  # a round from the record: before the call
        _spent(state)
        async with proceed(rt, effect) as events:
            yield events


def _spent(state: _Beside) -> None:
    """Hand what the round beside the call spent to the layer above, to add to the answer."""
    round = state.round
    holder = _SPENT.get()
    if round is not None and holder is not None and round.spent is not None:
        holder.append(round.spent)


async def _tools(
    rt: Runtime, guards: Guards, effect: ToolCallsEffect, proceed: Proceed
) -> list[ToolAnswer]:
    """The calls the tool guards allow, run below; refused ones answered in their places."""
    asked = effect.calls
    allowed, refused = await checked_calls(rt, guards, asked)
    answers: list[ToolAnswer] = []
    if allowed:
        answers = await proceed(rt, attrs.evolve(effect, calls=allowed))
    return merged(asked, answers, refused) if refused else answers


class ResultGuards:
    """Each tool answer shown to the result guards before the journal above records it."""

    __slots__ = ("_guards",)
    wants = _TOOLS
    performed = True

    def __init__(self, guards: Guards) -> None:
        self._guards = guards

    async def around(self, rt: Runtime, effect: ToolCallsEffect, proceed: Proceed) -> Any:
        async def run(pending: Sequence[ToolCall]) -> list[ToolAnswer]:
            answers: list[ToolAnswer] = await proceed(rt, effect)
            return answers

        return await ResultsChecked(rt, self._guards, run)(effect.calls)
