"""Step events: everything observable about a run, as one stream of frozen records."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ._context import AgentContext
from .llm._messages import Message, ToolCall
from .llm._model import ChatRequest, ChatResponse

if TYPE_CHECKING:
    from ._node import Node

__all__ = (
    "Event",
    "ModelRequested",
    "ModelResponded",
    "ToolFinished",
    "NodeFailedEvent",
    "NodeFinished",
    "NodeStarted",
    "RetryScheduled",
    "RouteChosen",
    "RunFinished",
    "RunStarted",
    "StepInfo",
)


@attrs.frozen
class StepInfo:
    """Where a finished step sits in its run.

    Attributes:
        index: run-wide step number, from 1, counting nested steps too.
        local_index: step number within the graph (or combinator) that ran it, from 1.
        depth: 0 for nodes of the graph passed to the runner, +1 per nesting level.
        path: node names from the root graph down to this node.
        attempts: how many attempts the step took (1 when it succeeded first time).
        duration: seconds from the step's start to its end, retries included.
    """

    index: int
    local_index: int
    depth: int
    path: tuple[str, ...]
    attempts: int
    duration: float


@attrs.frozen
class RunStarted:
    graph: str
    context: AgentContext[Any]


@attrs.frozen
class NodeStarted:
    index: int
    local_index: int
    depth: int
    path: tuple[str, ...]
    node: Node[Any, Any]
    context: AgentContext[Any]


@attrs.frozen
class NodeFinished:
    step: StepInfo
    node: Node[Any, Any]
    context: AgentContext[Any]


@attrs.frozen
class RouteChosen:
    """Which transition fired after a node: `transition` is its position among the node's."""

    index: int
    path: tuple[str, ...]
    source: str
    target: str
    transition: int
    dynamic: bool


@attrs.frozen
class RetryScheduled:
    index: int
    path: tuple[str, ...]
    attempt: int
    wait: float
    error: BaseException


@attrs.frozen
class NodeFailedEvent:
    index: int
    path: tuple[str, ...]
    attempts: int
    error: BaseException


@attrs.frozen
class RunFinished:
    """The last event of a run: `error` is None when the run reached finish."""

    context: AgentContext[Any]
    steps: int
    error: BaseException | None = None


@attrs.frozen
class ModelRequested:
    """A node is about to call a model: the exact request, as rendered from the context."""

    index: int
    path: tuple[str, ...]
    model: str
    request: ChatRequest


@attrs.frozen
class ModelResponded:
    """The model answered: the full response and how long it took."""

    index: int
    path: tuple[str, ...]
    model: str
    response: ChatResponse
    latency: float


@attrs.frozen
class ToolFinished:
    """A tool call ended: its call, the result message (maybe an error) and its duration."""

    index: int
    path: tuple[str, ...]
    call: ToolCall
    result: Message
    duration: float


Event = (
    RunStarted
    | NodeStarted
    | NodeFinished
    | RetryScheduled
    | RouteChosen
    | NodeFailedEvent
    | RunFinished
    | ModelRequested
    | ModelResponded
    | ToolFinished
)
