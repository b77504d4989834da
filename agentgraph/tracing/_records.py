"""Trace records: every event of a run as a plain, redacted, JSON-ready dict.

Events carry live objects (nodes, contexts, exceptions, requests); a record
keeps only data: names, paths, values converted with `to_data` (a value that
cannot be converted is kept as its `repr`), errors as type and message.
Contexts are not copied whole at every step: a finished step records its
output and the messages it added to the history.

Every record has `event` (its kind, e.g. `node_started`), `run` (an id that
tells concurrent runs apart), `time` (Unix time) and `elapsed` (seconds since
the run started).
"""

from __future__ import annotations

import enum
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from time import perf_counter, time
from typing import Any

import attrs

from .._context import AgentContext
from .._events import (
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
from .._graph import Graph
from .._json import to_data
from .._node import Node
from .._redact import Redaction, Redactor

__all__ = ("Recorder", "error_record", "plain")

_STRUCTURAL = (
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
_NUMBER_TYPES = frozenset({int, float, bool, type(None)})


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


@attrs.define
class _RunState:
    id: str
    started: float
    history: dict[int, int] = attrs.field(factory=dict)
    previous: _RunState | None = None
    # The last usage recorded, its data, and that data redacted (None until asked, or
    # when it holds more than numbers): a step without model calls passes its usage on
    # unchanged (usage is frozen), so most steps convert and redact none.
    usage: Any = None
    usage_data: Any = None
    usage_redacted: dict[str, Any] | None = None

    def usage_of(self, ctx: AgentContext[Any]) -> Any:
        usage = ctx.usage
        if usage is not self.usage:
            self.usage, self.usage_data, self.usage_redacted = usage, plain(usage), None
        return self.usage_data

    def redacted_usage(self, redactor: Redactor) -> dict[str, Any] | None:
        """The usage data as `redactor.record` redacts it, or None if that is not the same
        every time (a string in it would go to the hook)."""
        if self.usage_redacted is None:
            data = self.usage_data
            if not isinstance(data, dict) or any(
                type(v) not in _NUMBER_TYPES for v in data.values()
            ):
                return None
            self.usage_redacted = redactor.record({"usage": data}, keep=_STRUCTURAL)["usage"]
        return dict(self.usage_redacted)  # numbers only: a shallow copy shares nothing


Stamped = tuple[Any, _RunState, float, float]
"""An event, its run's state, and when it arrived (Unix time, and seconds into the run)."""


class Recorder:
    """Turns events into records, keeping per-run state for runs in progress.

    One recorder may serve several runs at once: a run's state lives in the
    task context where its `RunStarted` was seen, which its nested steps and
    combinator branches inherit.

    Args:
        redact: a hook `(field, text) -> text`, or a configured `Redactor`.
            Secrets are masked either way.
    """

    def __init__(self, *, redact: Redaction | Redactor | None = None) -> None:
        self.redactor = redact if isinstance(redact, Redactor) else Redactor(redact)
        self._state: ContextVar[_RunState | None] = ContextVar("agentgraph_trace", default=None)

    def __call__(self, event: Any) -> dict[str, Any]:
        """The record of `event`."""
        return self._build(self._stamp(event))

    def _stamp(self, event: Any) -> Stamped:
        """`event` with its run's state and the time it arrived: all a record needs
        from the moment and the task that sent it. `_build` may run later, elsewhere."""
        state = self._state.get()
        kind = type(event)  # the runner's own events are never subclassed
        if state is None or kind is RunStarted:
            # The run's own id, so traces join its checkpoint record; a run whose
            # start this recorder never saw gets one of its own.
            run_id = event.run_id if kind is RunStarted else ""
            state = _RunState(run_id or uuid.uuid4().hex[:12], perf_counter(), previous=state)
            self._state.set(state)
        stamped = (event, state, time(), perf_counter() - state.started)
        if kind is RunFinished:
            self._state.set(state.previous)
        return stamped

    def _build(self, stamped: Stamped) -> dict[str, Any]:
        """The record of a stamped event; the events of one run must come in order."""
        event, state, now, elapsed = stamped
        record: dict[str, Any] = {
            "event": _kind(event),
            "run": state.id,
            "time": now,
            "elapsed": elapsed,
        }
        fields = self._fields(event, state)
        usage = fields.get("usage")
        if usage is not None and usage is state.usage_data:
            # The run's usage, redacted once: a field of a record is redacted on its own,
            # so the redacted record holds the same as if it were redacted here.
            redacted = state.redacted_usage(self.redactor)
            if redacted is not None:
                fields["usage"] = None  # keeps the field's place in the record
                record.update(fields)
                out = self.redactor.record(record, keep=_STRUCTURAL)
                out["usage"] = redacted
                return out
        record.update(fields)
        return self.redactor.record(record, keep=_STRUCTURAL)

    def _fields(self, event: Any, state: _RunState) -> dict[str, Any]:
        handler = _HANDLERS.get(type(event))
        return _other(event) if handler is None else handler(event, state)


def _started(event: NodeStarted, state: _RunState) -> dict[str, Any]:
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


def _route(event: RouteChosen, state: _RunState) -> dict[str, Any]:
    return {
        "index": event.index,
        "path": list(event.path),
        "source": event.source,
        "target": event.target,
        "transition": event.transition,
        "dynamic": event.dynamic,
        "on_error": event.on_error,
    }


def _retry(event: RetryScheduled, state: _RunState) -> dict[str, Any]:
    return {
        "index": event.index,
        "path": list(event.path),
        "attempt": event.attempt,
        "wait": event.wait,
        "error": error_record(event.error),
    }


def _failed(event: NodeFailedEvent, state: _RunState) -> dict[str, Any]:
    state.history.pop(event.index, None)
    return {
        "index": event.index,
        "path": list(event.path),
        "attempts": event.attempts,
        "error": error_record(event.error),
    }


def _run_started(event: RunStarted, state: _RunState) -> dict[str, Any]:
    record = {"graph": event.graph, "context": _context(event.context)}
    if event.thread_id is not None:  # a turn of a conversation thread
        record["thread"] = event.thread_id
    return record


def _run_finished(event: RunFinished, state: _RunState) -> dict[str, Any]:
    return {
        "steps": event.steps,
        "ok": event.error is None,
        "output": plain(event.context.input),
        "usage": state.usage_of(event.context),
        "error": None if event.error is None else error_record(event.error),
    }


def _finished(event: NodeFinished, state: _RunState) -> dict[str, Any]:
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


def _llm(event: ModelRequested | ModelResponded | ToolFinished, state: _RunState) -> dict[str, Any]:
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


def _streamed(event: ModelStreamed, state: _RunState) -> dict[str, Any]:
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


_HANDLERS: dict[type[Any], Callable[[Any, _RunState], dict[str, Any]]] = {
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


def _kind(event: Any) -> str:
    kind = _KINDS.get(type(event))
    if kind is None:
        kind = _KINDS[type(event)] = _kind_of(type(event))
    return kind


def _kind_of(cls: type[Any]) -> str:
    if issubclass(cls, NodeFailedEvent):
        return "node_failed"
    return _SNAKE.sub("_", cls.__name__).lower()


_KINDS: dict[type[Any], str] = {}
