"""Step events: everything observable about a run, as one stream of frozen records.

The run and step events live here; what a step reports of its work (model and
tool calls, guards, structured output, ...) lives in `_work_events`, and is
re-exported here: every event is importable from this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import attrs

from ._context import AgentContext
from ._work_events import ContextEntry as ContextEntry
from ._work_events import Embedded as Embedded
from ._work_events import GuardDecided as GuardDecided
from ._work_events import HandedOff as HandedOff
from ._work_events import ModelRequested as ModelRequested
from ._work_events import ModelResponded as ModelResponded
from ._work_events import ModelStreamed as ModelStreamed
from ._work_events import OutputAttempt as OutputAttempt
from ._work_events import PartialOutput as PartialOutput
from ._work_events import Retrieved as Retrieved
from ._work_events import RetrievedSource as RetrievedSource
from ._work_events import StructuredOutput as StructuredOutput
from ._work_events import Summarized as Summarized
from ._work_events import ToolFinished as ToolFinished

if TYPE_CHECKING:
    from ._node import Node

__all__ = (
    "ContextEntry",
    "CustomEvent",
    "Embedded",
    "Event",
    "GuardDecided",
    "OutputAttempt",
    "PartialOutput",
    "StructuredOutput",
    "ModelRequested",
    "ModelResponded",
    "ModelStreamed",
    "ToolFinished",
    "NodeFailedEvent",
    "NodeFinished",
    "NodeStarted",
    "RetryScheduled",
    "RouteChosen",
    "RunFinished",
    "RunStarted",
    "StepInfo",
    "Retrieved",
    "RetrievedSource",
    "Summarized",
    "HandedOff",
)


class StepInfo(NamedTuple):
    """Where a finished step sits in its run.

    A named tuple rather than an attrs class: one is built for every step, and
    a tuple costs a quarter as much to build.

    Attributes:
        index: run-wide step number, from 1, counting nested steps too.
        local_index: step number within the graph (or combinator) that ran it, from 1.
        depth: 0 for nodes of the graph passed to the runner, +1 per nesting level.
        path: node names from the root graph down to this node.
        attempts: how many attempts the step took (1 when it succeeded first time).
        duration: seconds from the step's start to its end, retries included.
    """

    index: int  # type: ignore[assignment]  # the step's number, in place of tuple.index
    local_index: int
    depth: int
    path: tuple[str, ...]
    attempts: int
    duration: float


@attrs.frozen(slots=False)
class RunStarted:
    """A run began: its root graph's name, its first context, and its id.

    The run id is the one the handle, the checkpoint store and every sink use;
    `thread_id` names the thread the run is a turn of (None outside a thread).
    """

    graph: str
    context: AgentContext[Any]
    run_id: str = ""
    agent: bool = False
    """True when the root graph is an agent (`Graph.as_agent()`), as `react_agent`'s are."""
    thread_id: str | None = None


@attrs.frozen(slots=False)
class NodeStarted:
    """A step began. `parent` is the index of the step it runs inside (0 at the top).

    Concurrent branches share a path, so `parent` is what places a step in the tree.
    """

    index: int
    local_index: int
    depth: int
    path: tuple[str, ...]
    node: Node[Any, Any]
    context: AgentContext[Any]
    parent: int = 0


@attrs.frozen(slots=False)
class NodeFinished:
    """A step completed: its `StepInfo`, the node, and the context it returned."""

    step: StepInfo
    node: Node[Any, Any]
    context: AgentContext[Any]


@attrs.frozen(slots=False)
class RouteChosen:
    """Which transition fired after a node: `transition` is its position among the node's."""

    index: int
    path: tuple[str, ...]
    source: str
    target: str
    transition: int
    dynamic: bool
    on_error: bool = False
    """True when the step failed and an error transition (`Node.on_error`) fired."""


@attrs.frozen(slots=False)
class RetryScheduled:
    """A failed step will run again after `wait` seconds; `attempt` is the one that failed."""

    index: int
    path: tuple[str, ...]
    attempt: int
    wait: float
    error: BaseException


@attrs.frozen(slots=False)
class NodeFailedEvent:
    """A step failed for good: after `attempts` attempts, with `error` (retries exhausted)."""

    index: int
    path: tuple[str, ...]
    attempts: int
    error: BaseException


@attrs.frozen(slots=False)
class RunFinished:
    """The last event of a run: `error` is None when the run reached finish."""

    context: AgentContext[Any]
    steps: int
    error: BaseException | None = None


@attrs.frozen(slots=False)
class CustomEvent:
    """Data a node sent to whoever watches the run (`Runtime.emit_custom`).

    What it means is the node's own affair: progress, a partial result, a
    status line. The agent server streams `data` in the `custom` stream mode;
    the AG-UI endpoint sends it as a `CUSTOM` event named `name`.

    A custom event is not an effect: nothing records it. A step that runs
    again (a resumed step that had not committed, a replay) sends its custom
    events again, computed from the same recorded effects; a committed step
    is not run again, so its events are not sent again.
    """

    index: int
    path: tuple[str, ...]
    data: Any
    name: str = "custom"


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
    | ModelStreamed
    | ToolFinished
    | GuardDecided
    | StructuredOutput
    | PartialOutput
    | Summarized
    | Retrieved
    | Embedded
    | HandedOff
    | CustomEvent
)
