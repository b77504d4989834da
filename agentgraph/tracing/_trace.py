"""What a trace is made of: a run, its steps (nested), and what happened in each step.

Frozen values, built by `TraceBuilder` (in `_tree`) from a run's records.
Times are seconds since the run started.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

import attrs

__all__ = (
    "ModelCall",
    "RetryRecord",
    "Route",
    "Status",
    "Step",
    "ToolRecord",
    "Trace",
)

Status = Literal["ok", "failed", "running", "interrupted"]
"""`interrupted`: the run ended (cancelled, timed out, failed elsewhere) while the step ran."""


@attrs.frozen
class RetryRecord:
    """A failed attempt of a step that is tried again after `wait` seconds."""

    attempt: int
    wait: float
    error: Mapping[str, Any]
    at: float


@attrs.frozen
class ModelCall:
    """One model request and its response (None when the call failed or is still running)."""

    model: str
    start: float
    request: Mapping[str, Any]
    response: Mapping[str, Any] | None = None
    latency: float | None = None

    @property
    def usage(self) -> Mapping[str, Any]:
        usage = (self.response or {}).get("usage")
        return usage if isinstance(usage, Mapping) else {}

    @property
    def input_tokens(self) -> int:
        return int(self.usage.get("input_tokens") or 0)

    @property
    def output_tokens(self) -> int:
        return int(self.usage.get("output_tokens") or 0)


@attrs.frozen
class ToolRecord:
    """One tool call: what the model asked for and what it got back."""

    id: str
    name: str
    arguments: Mapping[str, Any]
    result: str
    is_error: bool
    start: float
    duration: float


@attrs.frozen
class Route:
    """A transition the run took: in graph `path`, from `source` to `target`."""

    index: int
    path: tuple[str, ...]
    source: str
    target: str
    transition: int
    dynamic: bool


@attrs.frozen
class Step:
    """One node execution, with what happened inside it.

    Attributes:
        start: seconds from the run's start to the step's start.
        duration: seconds the step took (retries included), None while running.
        children: the steps of a subgraph or combinator, in order.
    """

    index: int
    local_index: int
    depth: int
    path: tuple[str, ...]
    name: str
    kind: str
    start: float
    status: Status
    duration: float | None = None
    attempts: int = 1
    error: Mapping[str, Any] | None = None
    input: Any = None
    output: Any = None
    messages: tuple[Any, ...] = ()
    retries: tuple[RetryRecord, ...] = ()
    model_calls: tuple[ModelCall, ...] = ()
    tool_calls: tuple[ToolRecord, ...] = ()
    outputs: tuple[Mapping[str, Any], ...] = ()
    children: tuple[Step, ...] = ()
    guards: tuple[Mapping[str, Any], ...] = ()
    """The `guard_decided` records of the step: what each guard decided, and why."""
    handoffs: tuple[Mapping[str, Any], ...] = ()
    """The `handed_off` records of the step (a team's `handoff` step): who handed the
    conversation to whom, by which history policy, with which task."""

    def walk(self) -> Iterator[Step]:
        """This step and every step under it, depth first."""
        yield self
        for child in self.children:
            yield from child.walk()

    @property
    def input_tokens(self) -> int:
        return sum(call.input_tokens for call in self.model_calls)

    @property
    def output_tokens(self) -> int:
        return sum(call.output_tokens for call in self.model_calls)


@attrs.frozen
class Trace:
    """One run: its top-level steps (each holding its own children) and its routes."""

    run: str
    graph: str
    status: Status
    started_at: float | None
    duration: float | None
    steps: tuple[Step, ...]
    routes: tuple[Route, ...]
    input: Any = None
    output: Any = None
    error: Mapping[str, Any] | None = None
    usage: Mapping[str, Any] = attrs.field(factory=dict)
    step_count: int = 0
    records: tuple[Mapping[str, Any], ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def walk(self) -> Iterator[Step]:
        """Every step, depth first (which is the order they started in)."""
        for step in self.steps:
            yield from step.walk()

    @property
    def handoffs(self) -> tuple[Mapping[str, Any], ...]:
        """Every `handed_off` record of the run, in order: a team's conversation moving
        between agents (`source`, `target`, `history`, `messages`, `task`)."""
        return tuple(h for step in self.walk() for h in step.handoffs)

    def step(self, index: int) -> Step:
        """The step with run-wide number `index`."""
        for step in self.walk():
            if step.index == index:
                return step
        raise KeyError(f"the trace has no step {index}")
