"""What a trace record holds: each kind of event's fields, and values and errors as plain data.

The `Recorder` (in `_records`) stamps an event with its run and time; this
module decides the rest of its record.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .._core._context import AgentContext
from .._core._events import (
    ModelRequested,
    ModelResponded,
    ModelStreamed,
    NodeFailedEvent,
    NodeFinished,
    NodeStarted,
    PartialOutput,
    RetryScheduled,
    RouteChosen,
    RunFinished,
    RunStarted,
    ToolFinished,
)
from .._core._graph import Graph
from .._core._json import to_data
from .._core._node import Node

if TYPE_CHECKING:
    from ._records import RunState

__all__ = ("NUMBER_TYPES", "STRUCTURAL", "error_record", "event_fields", "event_kind", "plain")

STRUCTURAL = (
    "event",
    "run",
    "time",
    "elapsed",
    "index",
    "local_index",
    "parent",
    "depth",
    "path",
    "node",
    "kind",
    "type",
    "graph",
    "source",
    "target",
    "transition",
    "dynamic",
    "attempt",
    "attempts",
    "duration",
    "latency",
    "wait",
    "steps",
    "ok",
    "complete",
    "chars",
)
_REPR_LIMIT = 1000
_DEPTH_LIMIT = 32
_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})
NUMBER_TYPES = frozenset({int, float, bool, type(None)})


def plain(value: Any) -> Any:
    """`value` as plain JSON data; parts that have no JSON form become their `repr`."""
    if type(value) in _SCALAR_TYPES:  # what `to_data` (or, failing it, `_tolerant`) returns as is
        return value
    try:
        return to_data(value)
    except Exception:  # a value the encoder refuses (or a broken __eq__/property): go slow
        return _tolerant(value, 0)


def _tolerant(value: Any, depth: int) -> Any:
    if isinstance(value, str | int | float | bool | type(None)):
        return value
    if depth < _DEPTH_LIMIT:
        try:
            if isinstance(value, enum.Enum):
                return _tolerant(value.value, depth + 1)
            if isinstance(value, Mapping):
                return {str(k): _tolerant(v, depth + 1) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [_tolerant(v, depth + 1) for v in value]
            if attrs.has(type(value)):
                return {
                    f.name: _tolerant(getattr(value, f.name), depth + 1)
                    for f in attrs.fields(type(value))
                }
            return to_data(value)
        except Exception:
            pass
    return _repr(value)


def _repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<unrepresentable {type(value).__name__}>"
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 1] + "…"


def error_record(error: BaseException, *, depth: int = 0) -> dict[str, Any]:
    """An error as data: type, message, and what it says about retrying, status and cause."""
    record: dict[str, Any] = {"type": type(error).__name__, "message": _message(error)}
    retryable = getattr(error, "retryable", None)
    if isinstance(retryable, bool):
        record["retryable"] = retryable
    status = getattr(error, "status", None)
    if isinstance(status, int):
        record["status"] = status
    cause = error.__cause__
    if cause is not None and depth < 3:
        record["cause"] = error_record(cause, depth=depth + 1)
    return record


def _message(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:
        return _repr(error)


def _node_kind(node: Node[Any, Any]) -> str:
    if isinstance(node, Graph):
        return "graph"
    return "composite" if node.composite else "node"


def _started(event: NodeStarted, state: RunState) -> dict[str, Any]:
    state.history[event.index] = len(event.context.history)
    return {
        "index": event.index,
        "local_index": event.local_index,
        "depth": event.depth,
        "path": list(event.path),
        "node": event.node.name,
        "kind": _node_kind(event.node),
        "type": type(event.node).__name__,
        "input": plain(event.context.input),
        "parent": event.parent,
    }


def _route(event: RouteChosen, state: RunState) -> dict[str, Any]:
    return {
        "index": event.index,
        "path": list(event.path),
        "source": event.source,
        "target": event.target,
        "transition": event.transition,
        "dynamic": event.dynamic,
        "on_error": event.on_error,
    }


def _retry(event: RetryScheduled, state: RunState) -> dict[str, Any]:
    return {
        "index": event.index,
        "path": list(event.path),
        "attempt": event.attempt,
        "wait": event.wait,
        "error": error_record(event.error),
    }


def _failed(event: NodeFailedEvent, state: RunState) -> dict[str, Any]:
    state.history.pop(event.index, None)
    return {
        "index": event.index,
        "path": list(event.path),
        "attempts": event.attempts,
        "error": error_record(event.error),
    }


def _run_started(event: RunStarted, state: RunState) -> dict[str, Any]:
    record = {"graph": event.graph, "context": _context(event.context)}
    if event.thread_id is not None:  # a turn of a conversation thread
        record["thread"] = event.thread_id
    return record


def _run_finished(event: RunFinished, state: RunState) -> dict[str, Any]:
    return {
        "steps": event.steps,
        "ok": event.error is None,
        "output": plain(event.context.input),
        "usage": state.usage_of(event.context),
        "error": None if event.error is None else error_record(event.error),
    }


def _finished(event: NodeFinished, state: RunState) -> dict[str, Any]:
    before = state.history.pop(event.step.index, None)
    step, history = event.step, event.context.history
    record: dict[str, Any] = {
        "index": step.index,
        "local_index": step.local_index,
        "depth": step.depth,
        "path": list(step.path),
        "node": event.node.name,
        "attempts": step.attempts,
        "duration": step.duration,
        "output": plain(event.context.input),
        "history": len(history),
        "usage": state.usage_of(event.context),
    }
    if before == len(history):  # the step added no message
        record["messages"] = []
    elif before is not None and before <= len(history):
        record["messages"] = plain(history[before:])
    else:  # the step rewrote the history (a summary, say): keep all of it
        record["messages"] = plain(history)
        record["history_replaced"] = True
    return record


def _llm(event: ModelRequested | ModelResponded | ToolFinished, state: RunState) -> dict[str, Any]:
    record: dict[str, Any] = {"index": event.index, "path": list(event.path)}
    if isinstance(event, ModelRequested):
        record.update(
            model=event.model,
            request=plain(event.request),
            provider=event.provider,
            server=event.server,
        )
    elif isinstance(event, ModelResponded):
        record.update(model=event.model, latency=event.latency, response=plain(event.response))
    else:
        record.update(
            call=plain(event.call),
            result=event.result.content,
            is_error=event.result.is_error,
            duration=event.duration,
        )
    return record


def _streamed(event: ModelStreamed, state: RunState) -> dict[str, Any]:
    # Only the size: the whole text is in the response record, where a secret that
    # arrived in pieces is whole again and can be masked.
    return {"index": event.index, "path": list(event.path), "chars": len(event.text)}


def _context(ctx: AgentContext[Any]) -> dict[str, Any]:
    return {
        "input": plain(ctx.input),
        "system_prompt": ctx.system_prompt,
        "settings": plain(ctx.settings),
        "tools": [spec.name for spec in ctx.tools],
        "state": plain(ctx.state),
        "history": plain(ctx.history),
        "usage": plain(ctx.usage),
    }


def _other(event: Any) -> dict[str, Any]:
    """Structured-output events, and any event kind added later, field by field."""
    if isinstance(event, PartialOutput):
        partial = event.partial
        return {
            "index": event.index,
            "path": list(event.path),
            "attempt": event.attempt,
            "complete": partial.complete,
            "chars": len(partial.text),
        }
    fields: Iterable[tuple[str, Any]]
    if attrs.has(type(event)):
        fields = ((f.name, getattr(event, f.name)) for f in attrs.fields(type(event)))
    elif isinstance(event, tuple) and hasattr(event, "_fields"):  # a named tuple (`StepInfo`)
        fields = zip(event._fields, event, strict=True)
    else:
        return {"value": _repr(event)}
    out: dict[str, Any] = {}
    for name, value in fields:
        if isinstance(value, BaseException):
            out[name] = error_record(value)
        elif isinstance(value, AgentContext):
            out[name] = plain(value.input)
        elif isinstance(value, Node):
            out[name] = value.name
        elif isinstance(value, tuple) and name == "path":
            out[name] = list(value)
        else:
            out[name] = plain(value)
    return out


_HANDLERS: dict[type[Any], Callable[[Any, RunState], dict[str, Any]]] = {
    RunStarted: _run_started,
    NodeStarted: _started,
    NodeFinished: _finished,
    RouteChosen: _route,
    RetryScheduled: _retry,
    NodeFailedEvent: _failed,
    RunFinished: _run_finished,
    ModelRequested: _llm,
    ModelResponded: _llm,
    ModelStreamed: _streamed,
    ToolFinished: _llm,
}


def event_fields(event: Any, state: RunState) -> dict[str, Any]:
    """What the record of `event` holds besides its kind, run and times."""
    handler = _HANDLERS.get(type(event))
    return _other(event) if handler is None else handler(event, state)


def event_kind(event: Any) -> str:
    """The kind of `event` as records name it (`node_started`, ...)."""
    kind = _KINDS.get(type(event))
    if kind is None:
        kind = _KINDS[type(event)] = _kind_of(type(event))
    return kind


def _kind_of(cls: type[Any]) -> str:
    if issubclass(cls, NodeFailedEvent):
        return "node_failed"
    return _SNAKE.sub("_", cls.__name__).lower()


_KINDS: dict[type[Any], str] = {}
