"""Outcomes of runs read from a JSON-lines trace file, for `score_runs`.

A trace keeps, per step, its output, its model calls (usage, the response's
text and tool calls) and its tool calls (arguments, result, error flag), and
the run's output, usage and error: the events rebuilt from them are what the
trajectory and limit evaluators read. Trace records are masked as they are
written (secrets, and whatever the sink's redaction hook hid), so a score
that reads a masked value (an output holding a key, an argument a hook
redacted) may differ from the same run's score on its checkpoint store, which
keeps the values as they were. Model requests are not rebuilt (a request
event carries the model's name only).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs

from .._core._context import AgentContext
from .._core._events import (
    Event,
    ModelRequested,
    ModelResponded,
    NodeFinished,
    RunFinished,
    RunStarted,
    StepInfo,
    ToolFinished,
)
from .._core._usage import Price
from ..llm._messages import Message, ToolCall, Usage
from ..llm._model import ChatRequest, ChatResponse
from ..tracing._jsonl import load_traces
from ..tracing._trace import Step, Trace
from ._dataset import Case
from ._score import Outcome
from ._stored import RecordedNode, stored_runs

__all__ = ("read_trace_runs",)

_USAGE = frozenset(f.name for f in attrs.fields(Usage))


def read_trace_runs(
    path: str | os.PathLike[str],
    runs: Sequence[str] | Mapping[str, Case] | None = None,
    *,
    prices: Mapping[str, Price] | None = None,
) -> list[Outcome]:
    """What each run of a JSON-lines trace left behind, from its (masked) records.

    `runs` are run ids, or a mapping of run id to its `Case`; every run of
    the file by default.

    Raises:
        TraceFormatError: the file cannot be read, or lacks a run asked for.
    """
    from .._core._errors import TraceFormatError
    from ._evaluate import run_cost

    traces = {t.run: t for t in load_traces(path)}
    outcomes = []
    for run_id, case, repeat in stored_runs(runs, tuple(traces)):
        trace = traces.get(run_id)
        if trace is None:
            raise TraceFormatError(str(path), f"no run {run_id!r} (runs: {', '.join(traces)})")
        events = list(_events(trace))
        final = AgentContext(trace.output, usage=_usage(trace.usage))
        events.append(RunFinished(final, trace.step_count))
        error = None
        if trace.status != "ok":
            found = trace.error or {}
            error = f"{found.get('type', 'Unfinished')}: {found.get('message', trace.status)}"
        cost = None if prices is None else run_cost(events, prices)
        case = case or Case(run_id, trace.input)
        outcomes.append(
            Outcome(
                case,
                final,
                tuple(events),
                final.usage,
                trace.duration or 0.0,
                cost,
                error,
                run_id,
                repeat,
            )
        )
    return outcomes


def _usage(data: Any) -> Usage:
    if not isinstance(data, Mapping):
        return Usage()
    return Usage(**{k: int(v) for k, v in data.items() if k in _USAGE and isinstance(v, int)})


def _events(trace: Trace) -> Iterator[Event]:
    yield RunStarted(trace.graph, AgentContext(trace.input), trace.run)
    for step in trace.steps:
        yield from _step(step)


def _step(step: Step) -> Iterator[Event]:
    # Model and tool calls in the order they started; a composite's calls are its children's.
    timed: list[tuple[float, int, Event]] = []
    for call in step.model_calls:
        response = _response(call.response or {}, call.model)
        timed.append(
            (call.start, 0, ModelRequested(step.index, step.path, call.model, ChatRequest(())))
        )
        timed.append(
            (
                call.start,
                1,
                ModelResponded(step.index, step.path, call.model, response, call.latency or 0.0),
            )
        )
    for tool in step.tool_calls:
        message = Message.tool(tool.id, tool.result, name=tool.name, is_error=tool.is_error)
        asked = ToolCall(tool.id, tool.name, dict(tool.arguments))
        timed.append(
            (tool.start, 2, ToolFinished(step.index, step.path, asked, message, tool.duration))
        )
    timed.sort(key=lambda item: (item[0], item[1]))
    yield from (event for _, _, event in timed)
    for child in step.children:
        yield from _step(child)
    if step.status == "ok":
        info = StepInfo(
            step.index, step.local_index, step.depth, step.path, step.attempts, step.duration or 0.0
        )
        yield NodeFinished(info, RecordedNode(name=step.name), AgentContext(step.output))


def _response(data: Mapping[str, Any], model: str) -> ChatResponse:
    message = data.get("message")
    message = message if isinstance(message, Mapping) else {}
    calls = tuple(
        ToolCall(str(c.get("id", "")), str(c.get("name", "")), dict(c.get("arguments") or {}))
        for c in message.get("tool_calls") or ()
        if isinstance(c, Mapping)
    )
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    return ChatResponse(
        Message.assistant(text, tool_calls=calls), usage=_usage(data.get("usage")), model=model
    )
