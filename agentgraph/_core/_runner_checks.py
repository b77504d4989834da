"""The checks `GraphRunner` runs on what it is given: settings, graph, context and store.

Each refusal is a `UsageError` (a `TypeError` for a store) that says what to
pass instead.
"""

from __future__ import annotations

import inspect
import sys
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._context import AgentContext
from ._dispatch import Sink, check_sink
from ._errors import UsageError
from ._graph import Graph, GraphBuilder
from ._journal import JournalSource
from ._node import Node
from ._run_state import StepCallback

if TYPE_CHECKING:
    from ._layers import GuardLayers

__all__ = ("as_graph",)


def _callbacks(on_step: StepCallback | Sequence[StepCallback]) -> tuple[StepCallback, ...]:
    return (on_step,) if callable(on_step) else tuple(on_step)


def _guards(guards: GuardLayers | None) -> GuardLayers | None:
    """`guards`, or None when it holds none, so a run without guards skips them entirely."""
    if guards is None:
        return None
    if not callable(getattr(guards, "layers", None)):
        raise UsageError(f"guards= takes a Guards(...), not {type(guards).__name__}")
    return guards if guards else None


def _layers(layers: Sequence[Any]) -> tuple[Any, ...]:
    """`layers` as a tuple, each checked to be a layer (it has `around` or `around_stream`)."""
    if callable(getattr(layers, "around", None)):
        raise UsageError("layers= takes a list of layers: write layers=[layer]")
    for layer in layers:
        if not (
            callable(getattr(layer, "around", None))
            or callable(getattr(layer, "around_stream", None))
        ):
            raise UsageError(
                f"layers= takes layers (subclasses of agentgraph.Layer), not {type(layer).__name__}"
            )
    return tuple(layers)


def _sinks(sinks: Sequence[Sink]) -> tuple[Sink, ...]:
    return tuple(check_sink(sink) for sink in sinks)


def _check_sink_errors(_: Any, __: Any, value: str) -> None:
    if value not in ("detach", "raise"):
        raise ValueError(f"sink_errors is 'detach' or 'raise', not {value!r}")


def _maybe_async(callback: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(callback) or inspect.iscoroutinefunction(
        getattr(callback, "__call__", None)  # noqa: B004
    )


_wrapped: weakref.WeakKeyDictionary[Node[Any, Any], Graph[Any, Any]] = weakref.WeakKeyDictionary()


def as_graph(target: Any) -> Graph[Any, Any]:
    """`target` as a graph: a graph itself, a bare node in a graph of its own, or a
    `UsageError` that says what to pass."""
    if type(target) is Graph or isinstance(target, Graph):
        return target
    if isinstance(target, GraphBuilder):
        raise UsageError(
            f"the runner got the GraphBuilder {target.name!r}, not a graph: call build() "
            "after its `with` block and run what it returns (runner.run(g.build(), ctx))"
        )
    if isinstance(target, Node):
        graph = _wrapped.get(target)
        if graph is None:  # a bare node runs as a graph of one node, named after it
            with GraphBuilder[Any, Any](target.name) as g:
                g.start.edge_to(target).edge_to(g.finish)
            graph = _wrapped[target] = g.build()
        return graph
    raise UsageError(
        f"the runner runs a Graph (or a single Node), not {type(target).__name__}: build one "
        "with GraphBuilder, or decorate a function with @node"
    )


def _check_input(ctx: Any) -> None:
    if not isinstance(ctx, AgentContext):
        shown = repr(ctx)
        shown = shown if len(shown) <= 40 else shown[:39] + "…"
        raise UsageError(
            f"a run starts from an AgentContext, not {type(ctx).__name__}: wrap the value, "
            f"as in runner.run(graph, AgentContext({shown}))"
        )


def _running_loop() -> str | None:
    """The event loop running in this thread, if any: 'asyncio' or 'trio'."""
    asyncio = sys.modules.get("asyncio")  # no loop of a library that was never imported
    if asyncio is not None:
        try:
            asyncio.get_running_loop()
            return "asyncio"
        except RuntimeError:
            pass
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_trio_token()
            return "trio"
        except RuntimeError:
            pass
    return None


def _source(store: Any) -> JournalSource:
    """`store` as a journal source, or a `TypeError` that says what it lacks."""
    if isinstance(store, JournalSource):
        return store
    raise TypeError(
        f"{type(store).__name__} cannot record runs: a store needs open_run, open_resume and "
        "open_replay. Subclass agentgraph.checkpoint.StoreBase, which adds them to the four "
        "storage methods (write, flush, load, aclose)"
    )
