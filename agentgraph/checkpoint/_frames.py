"""Where a resumed run continues: one frame per graph level, and each step's own state.

A step is committed once it completed and its graph chose the next node, so a
resumed run never runs a router twice. A resumed run is rebuilt as one frame
per graph level of the last committed step: each outer level re-enters the
composite step that was in progress (same step index, same input), and the
innermost level continues at the recorded next node with the recorded context.
"""

from __future__ import annotations

from time import perf_counter
from typing import TYPE_CHECKING, Any

import attrs

from .._core._context import AgentContext
from .._core._errors import ResumeError

if TYPE_CHECKING:
    from .._core._graph import Graph
    from .._core._node import Node
    from .._core._runtime import Runtime

__all__ = ("Continue", "Enter", "Frame", "StepState", "node_named", "state_of", "take")


class StepState:
    """What one step of a checkpointed run knows about itself (`Runtime.journal_state`).

    `anchor` is the step's index, or for a step inside a fan-out (`parallel`,
    `map_each`) the fan-out's anchor and the branch's position: branches start
    in no fixed order, so their run-wide indices differ between runs.
    """

    __slots__ = (
        "anchor",
        "atomic",
        "attempt",
        "child",
        "index",
        "input",
        "ordinal",
        "routing",
        "started",
    )

    def __init__(self, anchor: str, atomic: bool, index: int, given: AgentContext[Any]) -> None:
        self.started = perf_counter()
        self.child: StepState | None = None  # the step of this one's graph that ran last
        self.anchor = anchor
        self.atomic = atomic  # inside a fan-out: nothing below commits
        self.index = index
        self.input = given
        self.attempt = 1
        self.ordinal = 0
        self.routing = False  # True once this step's node runs a graph


def state_of(rt: Runtime, initial: AgentContext[Any]) -> StepState:
    """The step state of `rt`; the root graph's runtime gets one (input `initial`) on first use."""
    state: StepState | None = rt.journal_state
    if state is None:
        state = rt.journal_state = StepState("", False, 0, initial)
    return state


@attrs.frozen
class Enter:
    """A composite step that was in progress at level `path`: run it again from its input."""

    path: tuple[str, ...]
    node: str
    input: AgentContext[Any]
    step: int
    local: int


@attrs.frozen
class Continue:
    """The last committed step, at level `path`: go on at `next` with `context`."""

    path: tuple[str, ...]
    node: str
    next: str
    context: AgentContext[Any]
    local: int
    steps: int
    step: int


Frame = Enter | Continue


def node_named(
    graph: Graph[Any, Any], name: str, *, run_id: str, context: AgentContext[Any], step: int
) -> Node[Any, Any]:
    """The node of `graph` called `name`, or a `ResumeError` saying what the graph has now."""
    found = [n for n in graph.members if n.name == name and n is not graph.start]
    if len(found) == 1:
        return found[0]
    names = ", ".join(sorted(n.name for n in graph.nodes)) or "none"
    if not found:
        reason = (
            f"node {name!r} is not in graph {graph.name!r} any more (its nodes now: {names}); "
            "the graph changed since the checkpoint"
        )
    else:
        reason = f"graph {graph.name!r} has {len(found)} nodes named {name!r}; names must be unique"
    raise ResumeError(reason, run_id=run_id, context=context, step=step)


def take(
    frames: list[Frame], run_id: str, rt: Runtime, graph: Graph[Any, Any]
) -> tuple[Node[Any, Any], AgentContext[Any], int, int]:
    """Consume this level's frame: the node to run next, its input, the local index so far,
    and the run-wide step count to continue from."""
    frame = frames.pop(0)
    if frame.path != rt.path:
        raise ResumeError(
            f"the record continues in {'/'.join(frame.path)}, but the graph now runs "
            f"{'/'.join(rt.path)} there",
            run_id=run_id,
            context=frame.context if isinstance(frame, Continue) else frame.input,
            step=frame.step,
        )
    if isinstance(frame, Enter):
        target = node_named(graph, frame.node, run_id=run_id, context=frame.input, step=frame.step)
        return target, frame.input, frame.local - 1, frame.step - 1
    if frame.next == graph.finish.name:
        target = graph.finish
    else:
        target = node_named(
            graph, frame.next, run_id=run_id, context=frame.context, step=frame.step
        )
    return target, frame.context, frame.local, frame.steps
