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

import uuid
from contextvars import ContextVar
from time import perf_counter, time
from typing import Any

import attrs

from .._core._context import AgentContext
from .._core._events import RunFinished, RunStarted
from .._util._redact import Redaction, Redactor
from ._fields import NUMBER_TYPES, STRUCTURAL, event_fields, event_kind
from ._fields import error_record as error_record
from ._fields import plain as plain

__all__ = ("Recorder", "RunState", "Stamped", "error_record", "plain")


@attrs.define
class RunState:
    """What a recorder keeps of a run in progress; the record of an event may read and update it."""

    id: str
    started: float
    wall: float = 0.0
    """Unix time when the run started (at `started` on the `perf_counter` clock): an
    event's time is this plus its seconds into the run, so stamping reads one clock."""
    history: dict[int, int] = attrs.field(factory=dict)
    previous: RunState | None = None
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
                type(v) not in NUMBER_TYPES for v in data.values()
            ):
                return None
            self.usage_redacted = redactor.record({"usage": data}, keep=STRUCTURAL)["usage"]
        return dict(self.usage_redacted)  # numbers only: a shallow copy shares nothing


Stamped = tuple[Any, RunState, float]
"""An event, its run's state, and when it arrived (`perf_counter`)."""


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
        self._state: ContextVar[RunState | None] = ContextVar("agentgraph_trace", default=None)

    def __call__(self, event: Any) -> dict[str, Any]:
        """The record of `event`."""
        return self._build(self._stamp(event))

    def _stamp(self, event: Any) -> Stamped:
        """`event` with its run's state and the time it arrived: all a record needs
        from the moment and the task that sent it. `_build` may run later, elsewhere."""
        state = self._state.get()
        kind = type(event)  # the runner's own events are never subclassed
        if state is None or kind is RunStarted or kind is RunFinished:
            return self.stamp_edge(event, state, kind)
        return (event, state, perf_counter())

    def stamp_edge(self, event: Any, state: RunState | None, kind: type[Any]) -> Stamped:
        """`_stamp` for the first and last event of a run (or of one not seen starting)."""
        if state is None or kind is RunStarted:
            # The run's own id, so traces join its checkpoint record; a run whose
            # start this recorder never saw gets one of its own.
            run_id = event.run_id if kind is RunStarted else ""
            run_id = run_id or uuid.uuid4().hex[:12]
            state = RunState(run_id, perf_counter(), time(), previous=state)
            self._state.set(state)
        stamped = (event, state, perf_counter())
        if kind is RunFinished:
            self._state.set(state.previous)
        return stamped

    def _build(self, stamped: Stamped) -> dict[str, Any]:
        """The record of a stamped event; the events of one run must come in order."""
        event, state, at = stamped
        elapsed = at - state.started
        record: dict[str, Any] = {
            "event": event_kind(event),
            "run": state.id,
            "time": state.wall + elapsed,
            "elapsed": elapsed,
        }
        fields = event_fields(event, state)
        usage = fields.get("usage")
        if usage is not None and usage is state.usage_data:
            # The run's usage, redacted once: a field of a record is redacted on its own,
            # so the redacted record holds the same as if it were redacted here.
            redacted = state.redacted_usage(self.redactor)
            if redacted is not None:
                fields["usage"] = None  # keeps the field's place in the record
                record.update(fields)
                out = self.redactor.record(record, keep=STRUCTURAL)
                out["usage"] = redacted
                return out
        record.update(fields)
        return self.redactor.record(record, keep=STRUCTURAL)
