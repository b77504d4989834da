"""Layers: what stands between a step's effects and the world, in one fixed order.

Every effect a node has (a model call or stream, tool calls, an embedding, a
memory call, `once`, `interrupt`) is a small frozen value (`_effect_kinds.py`) that passes
down a stack of layers to the call that performs it, and its result passes
back up. A layer is an object with

- `around(rt, effect, proceed)`: return the effect's result, usually
  `await proceed(rt, effect)` (the layers below and the call), after looking
  at it, changing it (`attrs.evolve`), refusing it (raising), or without
  proceeding at all (answering it itself);
- `around_stream(rt, effect, proceed)`: the same for a streamed model call, as
  an async context manager yielding the stream's events (`proceed` returns one).

The order, outermost first (each layer is in a run's stack only when the runner
has what it needs, so a run without guards has no guard layer and pays nothing):

1. guards before and after a model call (`agentgraph.guards`): input guards that
   may rewrite the request, and output guards on the answer. They add what
   their judges spent to the answer's usage, so they sit above the limits,
   which charge a call's own usage (a guard's spending is charged as it spends);
2. usage limits: a call that would pass a limit is refused before it is sent,
   and its usage is charged when it answers (`GraphRunner(usage_limits=...)`
   and a graph's own);
3. events: `ModelRequested`, `ModelStreamed`, `ModelResponded`, `ToolFinished`,
   `Embedded` (only in a run with listeners);
4. guards beside the call: input guards that never rewrite, asked while the
   model call is in flight (one that blocks cancels it), and tool-call guards,
   which refuse a call before its tool runs;
5. the runner's layers (`GraphRunner(layers=...)`) that see every effect,
   served from a record or not;
6. the journal (a checkpoint store's, or a workflow engine's): serves a
   recorded result on resume and replay, or proceeds and records the result;
7. tool-result guards, which check a tool's answer before it is recorded;
8. the runner's layers marked `performed = True`: they see only effects that
   are performed, and the journal records what they answer (a cache goes here);
9. the model gate (`GraphRunner(model_gate=...)`), which admits each model call;
10. the call itself: the model, the tools, the embedder, the function.

The runner composes its stacks once (one per kind of run: with or without
listeners, with a local or a remote journal or none), and each effect kind
gets a chain of only the layers that take it (`Layer.wants`) and override
its method, so a layer costs nothing on effects it leaves alone.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ..llm._model import StreamEvent
from ._effect_kinds import (
    EmbedEffect,
    InterruptEffect,
    MemoryEffect,
    ModelCallEffect,
    ModelStreamEffect,
    OnceEffect,
    ToolCallsEffect,
)
from ._effects import _TOOL_RUNTIME, PROVIDED
from ._errors import UsageError

if TYPE_CHECKING:
    from ._journal import ToolAnswer
    from ._runtime import Runtime

__all__ = ("GuardLayers", "Layer", "Proceed", "ProceedStream", "Stack")

Proceed = Callable[["Runtime", Any], Awaitable[Any]]
"""`await proceed(rt, effect)`: the effect's result from the layers below and the call."""

Events = AbstractAsyncContextManager[AsyncIterator[StreamEvent]]
ProceedStream = Callable[["Runtime", ModelStreamEffect], Events]
"""`async with proceed(rt, effect) as events:` the stream from the layers below."""


class Layer:
    """One layer of a run's effects: subclass it and override `around` (and
    `around_stream` for streamed model calls); what is not overridden passes
    effects on untouched, at no cost.

    ```python
    class Audit(Layer):
        async def around(self, rt, effect, proceed):
            print("effect", type(effect).__name__)
            return await proceed(rt, effect)
    ```

    Attributes:
        wants: the effect classes the layer sees (`ModelCallEffect`, ...);
            None (the default) for every kind.
        performed: True for a layer that sees only effects that are performed,
            below the run's journal: a resumed or replayed step is served
            from the record without reaching it, and the journal records what
            it answers (a cache). False (the default): above the journal, it
            sees every effect, recorded or not.
    """

    wants: ClassVar[frozenset[type[Any]] | None] = None
    performed: ClassVar[bool] = False

    async def around(self, rt: Runtime, effect: Any, proceed: Proceed) -> Any:
        """The result of `effect` (not a streamed call), usually `await proceed(rt, effect)`."""
        return await proceed(rt, effect)

    def around_stream(
        self, rt: Runtime, effect: ModelStreamEffect, proceed: ProceedStream
    ) -> Events:
        """The events of a streamed model call, usually `proceed(rt, effect)`: an async
        context manager yielding them (write it with `contextlib.asynccontextmanager`)."""
        return proceed(rt, effect)


class GuardLayers(Protocol):
    """What `GraphRunner(guards=...)` takes: layers that come as a set and say where
    each goes (`agentgraph.guards.Guards` is one); false when it holds none."""

    def layers(self) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]:
        """The layers above the usage limits, those beside the call, and those below
        the journal (see the module's docstring for where each goes)."""
        ...

    def __bool__(self) -> bool: ...


# -- the calls at the bottom of every stack --------------------------------------------------
def _request(rt: Runtime, effect: ModelCallEffect) -> Awaitable[Any]:
    return effect.model.request(effect.request)


def _stream(rt: Runtime, effect: ModelStreamEffect) -> Events:
    return effect.model.stream(effect.request)


async def _tools(rt: Runtime, effect: ToolCallsEffect) -> list[ToolAnswer]:
    perform = PROVIDED.tool_calls
    if perform is None:  # no tool exists before agentgraph.tools loads
        raise UsageError("tool calls are run by agentgraph.tools: import it to make tools")
    token = _TOOL_RUNTIME.set(rt)
    try:
        return await perform(rt, effect)
    finally:
        _TOOL_RUNTIME.reset(token)


def _embed(rt: Runtime, effect: EmbedEffect) -> Awaitable[list[list[float]]]:
    return effect.embedder.embed(effect.texts)


def _memory(rt: Runtime, effect: MemoryEffect) -> Awaitable[Any]:
    return effect.call(effect.effect_id)


async def _once(rt: Runtime, effect: OnceEffect) -> Any:
    result = effect.fn(*effect.args)
    if inspect.isawaitable(result):
        result = await result
    return result


async def _interrupt(rt: Runtime, effect: InterruptEffect) -> Any:
    raise RuntimeError("interrupt() needs a checkpoint store to resume from: run with store=...")


def _overrides(layer: Any, method: str) -> bool:
    """Whether `layer` does anything in `method` (a `Layer` that keeps the default does not)."""
    own = getattr(type(layer), method, None)
    return own is not None and own is not getattr(Layer, method)


def _takes(layer: Any, kind: type[Any], method: str) -> bool:
    wants = getattr(layer, "wants", None)
    return (wants is None or kind in wants) and _overrides(layer, method)


def _link(around: Callable[..., Any], inner: Callable[..., Any]) -> Callable[..., Any]:
    def proceed(rt: Runtime, effect: Any) -> Any:
        return around(rt, effect, inner)

    return proceed


def _chain(
    layers: Sequence[Any], kind: type[Any], method: str, bottom: Callable[..., Any]
) -> Callable[..., Any]:
    """`bottom` under every layer of `layers` that takes `kind` in `method`, outermost first."""
    proceed = bottom
    for layer in reversed(layers):
        if _takes(layer, kind, method):
            proceed = _link(getattr(layer, method), proceed)
    return proceed


class Stack:
    """One chain per effect kind through `layers` (outermost first), composed once.

    Each attribute is called as `chain(rt, effect)`: `model`, `tools`, `embed`,
    `memory`, `once` and `interrupt` return an awaitable of the result, `stream` an async
    context manager yielding the stream's events.
    """

    __slots__ = ("embed", "interrupt", "layers", "memory", "model", "once", "stream", "tools")

    def __init__(self, layers: Sequence[Any]) -> None:
        self.layers = tuple(layers)
        self.model: Proceed = _chain(layers, ModelCallEffect, "around", _request)
        self.stream: ProceedStream = _chain(layers, ModelStreamEffect, "around_stream", _stream)
        self.tools: Proceed = _chain(layers, ToolCallsEffect, "around", _tools)
        self.embed: Proceed = _chain(layers, EmbedEffect, "around", _embed)
        self.memory: Proceed = _chain(layers, MemoryEffect, "around", _memory)
        self.once: Proceed = _chain(layers, OnceEffect, "around", _once)
        self.interrupt: Proceed = _chain(layers, InterruptEffect, "around", _interrupt)
