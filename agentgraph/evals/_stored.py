"""Outcomes of runs that already ran, read back from a checkpoint store: no model, no tool.

A run's journal holds all an evaluator reads: the initial and every committed
context (usage included) and every effect the run recorded (model requests
with their responses, tool results). `read_outcome` rebuilds the run's events
from them: `RunStarted`, a `NodeFinished` per committed step, a
`ModelRequested` and `ModelResponded` per recorded model call, a
`ToolFinished` per tool result, and `RunFinished`, so the trajectory
evaluators, `MaxSteps`, `MaxModelRequests` and `run_cost` read what they read
on the live run.

The journal does not hold latencies (0 here), attempts that failed before a
step was retried (only their model calls), or the steps inside a fan-out,
which commits as one step; a node is known by its name only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

import anyio
import attrs
import orjson

from .._core._context import AgentContext
from .._core._errors import AgentGraphError, CheckpointError, RecordedRunError, UsageError
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
from .._core._json import NO_TYPES, Types, from_data
from .._core._node import Node
from .._core._runtime import Runtime
from .._core._usage import Price
from ..checkpoint._bases import standalone
from ..checkpoint._codec import decode_message
from ..checkpoint._effects import decode_request
from ..checkpoint._records import Effect, RunLog, checked, effect_step
from ..checkpoint._resume import decode_contexts, log_blobs
from ..checkpoint._store import CheckpointStore
from ..llm._messages import Message, ToolCall
from ..llm._model import ChatResponse
from ._dataset import Case
from ._score import Outcome

__all__ = (
    "RecordedNode",
    "load_log",
    "outcome_from_log",
    "run_ids_of",
    "spread",
    "stored_runs",
)

_FINISH = "finish"
"""The name of every graph's finish marker: a step routed there at the root ended the run."""


@attrs.frozen(eq=False, slots=True, repr=False)
class RecordedNode(Node[Any, Any]):
    """A node of a recorded run, known by the name its record gives (events read back carry it)."""

    async def run(self, ctx: AgentContext[Any], rt: Runtime) -> AgentContext[Any]:
        raise UsageError(
            f"node {self.name!r} was read from a record: it names a node, it cannot run"
        )

    def __repr__(self) -> str:
        return f"<recorded {self.name}>"


async def run_ids_of(store: Any) -> tuple[str, ...]:
    """Every run a store holds, oldest first, when the store can list them.

    Raises:
        UsageError: the store cannot list its runs: pass `runs=` instead.
    """
    listed = getattr(store, "run_ids", None)
    if callable(listed):
        listed = await listed()
    if isinstance(listed, tuple | list):
        return tuple(str(r) for r in listed)
    raise UsageError(f"{type(store).__name__} cannot list its runs: pass runs= (the run ids)")


def stored_runs(
    runs: Sequence[str] | Mapping[str, Case] | None, listed: Sequence[str]
) -> list[tuple[str, Case | None, int]]:
    """The runs to read: each run id with its case (when given) and its repeat number."""
    if runs is None:
        chosen: Mapping[str, Case | None] = dict.fromkeys(listed)
    elif isinstance(runs, Mapping):
        chosen = runs
    elif isinstance(runs, str):
        raise UsageError(f"runs is a list of run ids, not the string {runs!r}")
    else:
        chosen = dict.fromkeys(runs)
    repeats: dict[str, int] = {}
    out = []
    for run_id, case in chosen.items():
        name = case.name if case is not None else run_id
        out.append((run_id, case, repeats.get(name, 0)))
        repeats[name] = repeats.get(name, 0) + 1
    return out


async def spread(count: int, concurrency: int, work: Callable[[int], Awaitable[None]]) -> None:
    """`await work(i)` for every i below `count`, `concurrency` at once.

    The first error stops the others and is raised as itself: a run that
    cannot be read fails the whole reading, naming that run.
    """
    todo = iter(range(count))
    failed: list[Exception] = []

    async def worker(scope: anyio.CancelScope) -> None:
        for i in todo:  # one iterator shared: each item is worked on once
            try:
                await work(i)
            except Exception as exc:
                failed.append(exc)
                scope.cancel()
                return

    async with anyio.create_task_group() as tg:
        for _ in range(min(concurrency, count)):
            tg.start_soon(worker, tg.cancel_scope)
    if failed:
        raise failed[0]


async def load_log(store: CheckpointStore, run_id: str) -> tuple[RunLog, dict[str, bytes]]:
    """`run_id`'s records, checked whole, and the bytes of the files its messages name.

    Raises:
        RecordedRunError: the run is not in the store, holds no committed step,
            or a record of it is damaged.
    """
    try:
        log = await store.load(run_id)
    except CheckpointError as exc:
        raise RecordedRunError(run_id, f"the store could not load it: {exc}") from exc
    if log is None:
        raise RecordedRunError(run_id, "the store holds no such run")
    if not log.steps:
        raise RecordedRunError(
            run_id, "its record holds no committed step: the run stopped before its first step"
        )
    try:
        # A thread's turn is stored as a change to the run it continued: it is decoded alone.
        log = await standalone(store, checked(log))
        return log, await log_blobs(store, log)
    except CheckpointError as exc:
        raise RecordedRunError(run_id, str(exc)) from exc


def outcome_from_log(
    log: RunLog,
    blobs: Mapping[str, bytes],
    case: Case | None,
    repeat: int = 0,
    *,
    types: Types = NO_TYPES,
    prices: Mapping[str, Price] | None = None,
) -> Outcome:
    """What the recorded run left behind, as `evaluate` would have kept it.

    Raises:
        RecordedRunError: a context or an effect of the run cannot be decoded.
    """
    from ._evaluate import run_cost

    run_id = log.run.run_id
    try:
        contexts = decode_contexts(log, types=types, blobs=blobs)
        events = list(_events(log, contexts, types, blobs))
    except RecordedRunError:
        raise
    except (AgentGraphError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RecordedRunError(run_id, f"{type(exc).__name__}: {exc}") from exc
    final = contexts[-1]
    error = _unfinished(log)
    events.append(RunFinished(final, log.steps[-1].steps))
    duration = max(0.0, log.steps[-1].at - log.run.created)
    cost = None if prices is None else run_cost(events, prices)
    case = case or Case(run_id, contexts[0].input)
    return Outcome(case, final, tuple(events), final.usage, duration, cost, error, run_id, repeat)


def _unfinished(log: RunLog) -> str | None:
    """Why the run did not end, as `Type: message` text; None when it reached finish."""
    last = log.steps[-1]
    if last.path == (log.run.graph,) and last.next == _FINISH:
        return None
    answered = {e.key for e in log.effects if e.kind == "answer"}
    where = f"step {last.step} ({'/'.join((*last.path, last.node))})"
    if any(e.kind == "interrupt" and e.key not in answered for e in log.effects):
        return f"Interrupted: the run waits for an answer after {where}"
    return f"Unfinished: the record ends after {where}, before finish"


def _events(
    log: RunLog, contexts: list[AgentContext[Any]], types: Types, blobs: Mapping[str, bytes]
) -> Iterator[Event]:
    rid, root = log.run.run_id, log.run.graph
    yield RunStarted(root, contexts[0], rid)
    # A step's effects, in the order written; its input is the context committed before it.
    by_step: dict[int, list[Effect]] = {}
    for effect in log.effects:
        by_step.setdefault(effect_step(effect.key), []).append(effect)
    position = {r.step: i for i, r in enumerate(log.steps)}
    waiting = sorted(by_step)
    calls: dict[str, ToolCall] = {}

    def effects_up_to(step: int | None) -> Iterator[Event]:
        while waiting and (step is None or waiting[0] <= step):
            index = waiting.pop(0)
            at = position.get(index)
            given = contexts[at] if at is not None else contexts[-1]
            path = log.steps[at].path if at is not None else (root,)
            for effect in by_step[index]:
                yield from _effect(effect, index, path, given, calls, types, blobs, rid)

    for i, record in enumerate(log.steps):
        yield from effects_up_to(record.step)
        info = StepInfo(
            record.step, record.local, len(record.path) - 1, record.path, 1, record.duration
        )
        yield NodeFinished(info, RecordedNode(name=record.node), contexts[i + 1])
    yield from effects_up_to(None)


def _effect(
    effect: Effect,
    index: int,
    path: tuple[str, ...],
    given: AgentContext[Any],
    calls: dict[str, ToolCall],
    types: Types,
    blobs: Mapping[str, bytes],
    run_id: str,
) -> Iterator[Event]:
    if effect.kind == "model":
        data = orjson.loads(effect.value)
        request = decode_request(data["request"], given.history, types, blobs)
        response: ChatResponse = from_data(data["response"], types)
        model = request.model or response.model
        for call in response.message.tool_calls:
            calls[call.id] = call
        yield ModelRequested(index, path, model, request)
        yield ModelResponded(index, path, model, response, 0.0)
    elif effect.kind == "result":
        data = orjson.loads(effect.value)
        message: Message = decode_message(data["m"], types, blobs)
        name, _, call_id = effect.key.split(":", 1)[1].removeprefix("tool ").partition(" ")
        found = calls.get(call_id) or _asked(given, call_id)
        if found is None or found.name != name:
            raise RecordedRunError(
                run_id,
                f"tool result {effect.key!r}: the call it answers ({name}, id {call_id!r}) is "
                "in no recorded response and not in the step's conversation",
            )
        yield ToolFinished(index, path, found, message, float(data["d"]))


def _asked(given: AgentContext[Any], call_id: str) -> ToolCall | None:
    """The call `call_id` of the latest assistant message that made it, in the step's input."""
    for message in reversed(given.history):
        for call in message.tool_calls:
            if call.id == call_id:
                return call
    return None
