"""A gate every model call passes through before it reaches the provider.

`GraphRunner(model_gate=...)` hands each run a gate: the runtime awaits
`admit` before a model call is sent (a call served from a checkpoint record
is not sent, so it is not admitted) and calls `settle` once the call ended,
with its usage or the error it raised. Rate limits shared by many processes
(`agentgraph.ray`) are one such gate. Without a gate, a model call costs
nothing extra.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..llm._messages import Usage
from ..llm._model import ChatModel, ChatRequest, ChatResponse, ResponseDone, StreamEvent, TextDelta
from ._effect_kinds import ModelCallEffect, ModelStreamEffect

if TYPE_CHECKING:
    from ._layers import Proceed, ProceedStream
    from ._runtime import Runtime

__all__ = ("PARTIAL", "GateLayer", "ModelGate", "gated_request", "gated_stream", "provider_of")

PARTIAL = Usage(requests=1, unmetered=1)
"""What a model call cancelled in flight counts: one request, its tokens unreported."""


@runtime_checkable
class ModelGate(Protocol):
    """Admits model calls: `admit` may wait (a rate limit) or raise (a refusal).

    `provider` is the client's provider name (`openai`, `anthropic`, ...; empty
    for a model that names none) and `model` the model the request goes to.
    `settle` must not block: it is called on the event loop once after each
    admitted call, however it ended: with the response's usage, with the error
    instead, or with `PARTIAL` usage for a call cancelled in flight.
    """

    async def admit(self, provider: str, model: str, request: ChatRequest) -> None: ...

    def settle(
        self,
        provider: str,
        model: str,
        request: ChatRequest,
        usage: Usage | None,
        error: Exception | None,
    ) -> None: ...


class GateLayer:
    """The layer just above the call: admits each model call that is sent (one served
    from a record never reaches it) and settles it however it ends."""

    __slots__ = ("gate",)
    wants = frozenset({ModelCallEffect, ModelStreamEffect})
    performed = True

    def __init__(self, gate: ModelGate) -> None:
        self.gate = gate

    def around(self, rt: Runtime, effect: ModelCallEffect, proceed: Proceed) -> Any:
        return gated_request(self.gate, effect.model, effect.name, effect.request)

    def around_stream(
        self, rt: Runtime, effect: ModelStreamEffect, proceed: ProceedStream
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
        return gated_stream(self.gate, effect.model, effect.name, effect.request)


def provider_of(model: ChatModel) -> str:
    """The provider name a model's client gives, or an empty string."""
    provider = getattr(model, "provider", "")
    return provider if isinstance(provider, str) else ""


async def gated_request(
    gate: ModelGate, model: ChatModel, name: str, request: ChatRequest
) -> ChatResponse:
    """`model.request(request)`, admitted by `gate` and settled however it ends."""
    provider = provider_of(model)
    await gate.admit(provider, name, request)
    try:
        response = await model.request(request)
    except Exception as error:
        gate.settle(provider, name, request, None, error)
        raise
    except BaseException:  # cancelled: what the call used is not known
        gate.settle(provider, name, request, PARTIAL, None)
        raise
    gate.settle(provider, name, request, response.usage, None)
    return response


@asynccontextmanager
async def gated_stream(
    gate: ModelGate, model: ChatModel, name: str, request: ChatRequest
) -> AsyncIterator[AsyncIterator[StreamEvent]]:
    """`model.stream(request)`, admitted by `gate` and settled however it ends: with
    the final response's usage, the error, or `PARTIAL` when the stream was cut
    (cancelled, or left by its reader before the end)."""
    provider = provider_of(model)
    await gate.admit(provider, name, request)
    try:
        async with model.stream(request) as events:
            seen = _Watched(events)
            yield seen
    except Exception as error:
        gate.settle(provider, name, request, None, error)
        raise
    except BaseException:
        gate.settle(provider, name, request, PARTIAL, None)
        raise
    done = seen.response
    gate.settle(provider, name, request, PARTIAL if done is None else done.usage, None)


class _Watched:
    """Passes stream events on, keeping the response of the final `ResponseDone`
    (and handing each text delta to `tell`, if given).

    A class rather than an async generator, so a reader that stops early
    leaves nothing for the garbage collector to finalize.
    """

    __slots__ = ("_events", "_tell", "response")

    def __init__(
        self,
        events: AsyncIterator[StreamEvent],
        tell: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self._events = events
        self._tell = tell
        self.response: ChatResponse | None = None

    def __aiter__(self) -> _Watched:
        return self

    async def __anext__(self) -> StreamEvent:
        event = await self._events.__anext__()
        if isinstance(event, ResponseDone):
            self.response = event.response
        elif self._tell is not None and isinstance(event, TextDelta) and event.text:
            await self._tell(event.text)
        return event
