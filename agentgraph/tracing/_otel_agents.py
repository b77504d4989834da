"""The agent spans the OpenTelemetry sink opens between a step and its parent (and the
time and address helpers of its spans).

Two kinds of work are agent invocations without being a graph marked as one:

- **A turn of an agent in a team** (`agentgraph.teams`): the agent's steps
  (its chat, its tools, its last word) and the `handoff` step that ends the
  turn nest under one `invoke_agent {agent}` span. A `HandedOff` is a span
  event on it; the span ends with the handoff step, and the next agent's
  first step opens the next one. A team step that is no agent's (the answer)
  ends the turn too.
- **A graph a tool call runs** (`agentgraph.teams.agent_tool`): its
  `invoke_agent` span nests under an `execute_tool` span opened when the
  sub-run starts (the call is known from its position among the calls of
  the tool step's input) and ended by the call's `ToolFinished`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import attrs

from ._spans import AGENT, TOOL, operation_attributes, span_name

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ("AgentSpans", "at_ns", "ns", "server_address", "tool_calls")

Start = Callable[[str, "Span | None", float, Mapping[str, Any]], "Span"]
Fail = Callable[..., None]


def tool_calls(event: Any) -> tuple[tuple[str, str], ...]:
    """(id, name) of each call a starting step's input holds: a sub-run's local index
    is its call's position among them."""
    from ..llm._messages import Message

    value = event.context.input
    if type(value) is not Message or not value.tool_calls or event.node.composite:
        return ()
    return tuple((call.id, call.name) for call in value.tool_calls)


@attrs.define
class _Turn:
    span: Span
    agent: str
    ends_with: int = 0
    """The handoff step whose end ends the turn (0 until the agent hands off)."""


@attrs.define
class AgentSpans:
    """One run's open turns (by the index of their team graph's step, 0 for the run's
    own graph) and its tool calls whose sub-run is under way (by step and call id)."""

    start: Start
    fail: Fail
    conversation: str
    turns: dict[int, _Turn] = attrs.field(factory=dict)
    calls: dict[tuple[int, str], Span] = attrs.field(factory=dict)

    def turn(self, r: Mapping[str, Any], agent: str | None, under: Span) -> tuple[Span, int | None]:
        """Where a starting step goes: its agent's turn span (opened if need be), or `under`.

        Returns the parent span and the turn's key, None for a step outside a turn.
        """
        key = r.get("parent") or 0
        open_turn = self.turns.get(key)
        if open_turn is not None and (open_turn.agent != agent or open_turn.ends_with):
            del self.turns[key]
            open_turn.span.end(end_time=ns(r["time"]))
            open_turn = None
        if agent is None:
            return under, None
        if open_turn is None:
            attributes = operation_attributes(AGENT, agent, self.conversation)
            span = self.start(span_name(AGENT, agent), under, r["time"], attributes)
            open_turn = self.turns[key] = _Turn(span, agent)
        return open_turn.span, key

    def handed_off(
        self, turn: int | None, step: Span | None, r: Mapping[str, Any], content: bool
    ) -> None:
        """Mark the handoff on its turn's span, which ends with the handoff step (on the
        step's own span when it is in no turn: a team state older than turns)."""
        open_turn = self.turns.get(turn) if turn is not None else None
        span = open_turn.span if open_turn is not None else step
        if span is None:
            return
        attributes: dict[str, Any] = {
            "agentgraph.handoff.source": r["source"],
            "agentgraph.handoff.target": r["target"],
            "agentgraph.handoff.history": r["history"],
            "agentgraph.handoff.messages": r["messages"],
        }
        if content and r.get("task") is not None:
            attributes["agentgraph.handoff.task"] = r["task"]
        span.add_event("agentgraph.handoff", attributes, ns(r["time"]))
        if open_turn is not None:
            open_turn.ends_with = int(r["index"])

    def tool_run(self, parent: Any, r: Mapping[str, Any]) -> Span | None:
        """The `execute_tool` span of the call whose sub-run is starting, or None."""
        local = r.get("local_index") or 0
        if not 0 < local <= len(parent.calls):
            return None
        call_id, name = parent.calls[local - 1]
        key = (parent.index, call_id)
        span = self.calls.get(key)
        if span is None:
            attributes = {
                "gen_ai.operation.name": TOOL,
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.type": "function",
            }
            span = self.calls[key] = self.start(
                span_name(TOOL, name), parent.span, r["time"], attributes
            )
        return span

    def step_ended(
        self, index: int, turn: int | None, r: Mapping[str, Any], error: Mapping[str, Any] | None
    ) -> None:
        """A step ended: the turn its handoff ends, the turns of a team graph, calls left open."""
        open_turn = self.turns.get(turn) if turn is not None else None
        if open_turn is not None and open_turn.ends_with == index:
            del self.turns[turn]  # type: ignore[arg-type]
            open_turn.span.end(end_time=ns(r["time"]))
        self._end(self.turns.pop(index, None), r, error)
        for key in [k for k in self.calls if k[0] == index]:
            kind, message = _why(error, "the tool step ended before the call")
            self.fail(self.calls.pop(key), kind, message, at=r["time"])

    def run_ended(self, r: Mapping[str, Any] | None, error: Mapping[str, Any] | None) -> None:
        """End what is still open as the run ends (`r` None: the run was abandoned)."""
        at = None if r is None else r["time"]
        for span in self.calls.values():
            self.fail(span, "Interrupted", "the run ended while this ran", at=at)
        self.calls.clear()
        for open_turn in self.turns.values():
            if error is None and r is not None:
                open_turn.span.end(end_time=ns(r["time"]))
            else:
                kind, message = _why(error, "the run was abandoned")
                self.fail(open_turn.span, kind, message, at=at)
        self.turns.clear()

    def _end(self, open_turn: _Turn | None, r: Mapping[str, Any], error: Any) -> None:
        if open_turn is None:
            return
        if error is None:
            open_turn.span.end(end_time=ns(r["time"]))
        else:
            self.fail(open_turn.span, str(error["type"]), str(error["message"]), at=r["time"])


def _why(error: Mapping[str, Any] | None, otherwise: str) -> tuple[str, str]:
    if error is None:
        return "Interrupted", otherwise
    return str(error["type"]), str(error["message"])


def ns(seconds: float) -> int:
    """Unix seconds as OpenTelemetry's nanoseconds."""
    return int(seconds * 1_000_000_000)


def at_ns(seconds: float | None) -> int | None:
    return None if seconds is None else ns(seconds)


def server_address(url: str) -> tuple[str | None, int | None]:
    """`server.address` and `server.port` of a base URL (the scheme's port when unsaid)."""
    if not url:
        return None, None
    parsed = urlsplit(url)
    try:
        port = parsed.port
    except ValueError:
        port = None
    if port is None:
        port = {"https": 443, "http": 80}.get(parsed.scheme)
    return parsed.hostname, port
