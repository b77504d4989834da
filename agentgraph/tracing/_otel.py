"""OpenTelemetry spans for runs, steps, model calls and tool calls (the `otel` extra).

Span and attribute names follow the OpenTelemetry semantic conventions for
generative AI (the names live in `_spans.py`): a run is an `invoke_workflow`
span (`invoke_agent` with `gen_ai.agent.name` for an agent, such as
`react_agent`'s), a nested graph the same one level down, a `retrieve` step a
`retrieval` span, an embedder call an `embeddings` span, a model call a
`chat` span (client kind) with `gen_ai.request.*`, `gen_ai.response.*` and
`gen_ai.usage.*` attributes, a tool call an `execute_tool` span with
`gen_ai.tool.*` attributes; `gen_ai.conversation.id` is the run's id. Other
steps, which the conventions do not cover, are spans named after the node
with `agentgraph.*` attributes, nested as the graph nests. Message content is
recorded only with `capture_content=True`, as the conventions advise, and
always redacted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from .._util._extras import pip_install
from .._util._redact import Redaction, Redactor
from ._otel_agents import AgentSpans, at_ns, ns, server_address, tool_calls
from ._records import Recorder
from ._spans import (
    AGENT,
    CHAT,
    EMBEDDINGS,
    TOOL,
    Operation,
    conversation_id,
    graph_operation,
    operation_attributes,
    span_name,
    step_operation,
    turn_agent,
)

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = ("OtelSink",)

# Input tokens read from and written to the provider's prompt cache (GenAI conventions).
_CACHE_READ = "gen_ai.usage.cache_read.input_tokens"
_CACHE_WRITE = "gen_ai.usage.cache_creation.input_tokens"


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


@attrs.define
class _Open:
    span: Span
    path: tuple[str, ...]
    index: int
    calls: tuple[tuple[str, str], ...] = ()
    """(id, name) of the tool calls of the step's input: where a sub-run's call is found."""
    turn: int | None = None
    """The key of the team agent's turn the step is part of (see `AgentSpans`)."""


@attrs.define
class _Run:
    span: Span
    conversation: str
    agents: AgentSpans
    steps: dict[int, _Open] = attrs.field(factory=dict)
    calls: list[_Open] = attrs.field(factory=list)


class OtelSink:
    """A sink that turns each run into a tree of OpenTelemetry spans.

    ```python
    sink = OtelSink()                         # the global tracer provider
    runner = GraphRunner(sinks=[sink])
    ```
    The run span's parent is the span current where the run started, so a run
    inside a request handler nests under the request's span. Call `close()` to
    end the spans of runs abandoned mid-way (a finished run ends its own).

    Args:
        tracer_provider: where spans go; the global provider by default.
        capture_content: also record messages, tool arguments and results.
        redact: a redaction hook or a `Redactor`, applied to captured content
            and error messages.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        *,
        capture_content: bool = False,
        redact: Redaction | Redactor | None = None,
    ) -> None:
        try:
            from opentelemetry import trace
        except ImportError as exc:
            raise ImportError(f"OtelSink needs OpenTelemetry: {pip_install('otel')}") from exc
        self._tracer: Tracer = trace.get_tracer("agentgraph", tracer_provider=tracer_provider)
        self._trace = trace
        self.capture_content = capture_content
        self._recorder = Recorder(redact=redact)
        self._runs: dict[str, _Run] = {}

    def __call__(self, event: Any) -> None:
        record = self._recorder(event)
        handler = getattr(self, f"_on_{record['event']}", None)
        if handler is None:
            return
        run = self._runs.get(record["run"])
        if run is None:
            if record["event"] != "run_started":
                return  # the run began before this sink was attached
            self._on_run_started(record, graph_operation(event.agent))
            return
        if record["event"] == "node_started":
            operation = step_operation(event.node)
            path = event.path
            agent = turn_agent(event.node, path, event.context) if operation is None else None
            calls = tool_calls(event) if operation is None else ()
            self._on_node_started(run, record, operation, agent, calls)
            return
        handler(run, record)

    def close(self) -> None:
        """End every span still open, marking it as not finished."""
        for run in self._runs.values():
            for item in [*run.calls, *reversed(run.steps.values())]:
                self._fail(item.span, "Interrupted", "the run was abandoned", at=None)
            run.agents.run_ended(None, None)
            self._fail(run.span, "Interrupted", "the run was abandoned", at=None)
        self._runs.clear()

    # -- spans ---------------------------------------------------------------------------
    def _start(
        self, name: str, parent: Span | None, at: float, attributes: Mapping[str, Any]
    ) -> Span:
        from opentelemetry.trace import SpanKind

        context = None if parent is None else self._trace.set_span_in_context(parent)
        client = attributes.get("gen_ai.operation.name") in (CHAT, EMBEDDINGS)
        return self._tracer.start_span(
            name,
            context=context,
            kind=SpanKind.CLIENT if client else SpanKind.INTERNAL,
            attributes={k: v for k, v in attributes.items() if v is not None},
            start_time=ns(at),
        )

    def _fail(self, span: Span, kind: str, message: str, *, at: float | None) -> None:
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute("error.type", kind)
        span.add_event(
            "exception", {"exception.type": kind, "exception.message": message}, at_ns(at)
        )
        span.set_status(Status(StatusCode.ERROR, f"{kind}: {message}"))
        span.end(end_time=at_ns(at))

    def _parent(self, run: _Run, path: tuple[str, ...], index: Any) -> _Open | None:
        match = None
        for item in reversed(run.steps.values()):
            if item.path == path:
                if item.index == index:
                    return item
                match = match or item
        return match

    # -- one handler per record kind ------------------------------------------------------
    def _on_run_started(self, r: Mapping[str, Any], operation: Operation) -> None:
        graph = r["graph"]
        conversation = conversation_id(r["run"], r.get("thread"))
        attributes = operation_attributes(operation, graph, conversation)
        attributes["agentgraph.run.id"] = r["run"]
        span = self._tracer.start_span(
            span_name(operation, graph), attributes=attributes, start_time=ns(r["time"])
        )
        self._runs[r["run"]] = _Run(
            span, conversation, AgentSpans(self._start, self._fail, conversation)
        )

    def _on_node_started(
        self,
        run: _Run,
        r: Mapping[str, Any],
        operation: Operation | None,
        agent: str | None,
        calls: tuple[tuple[str, str], ...],
    ) -> None:
        path = tuple(r["path"])
        # Branches of a fan-out share a path; the parent step's index tells them apart.
        parent = run.steps.get(r.get("parent") or 0) or self._parent(run, path[:-1], None)
        under = parent.span if parent is not None else run.span
        tool = run.agents.tool_run(parent, r) if parent is not None and parent.calls else None
        if tool is not None:  # a graph run by a tool call (`agent_tool`): an agent's run
            under, operation, turn = tool, AGENT, None
        else:
            under, turn = run.agents.turn(r, agent, under)
        attributes = {
            "agentgraph.node.name": r["node"],
            "agentgraph.node.path": "/".join(path),
            "agentgraph.node.kind": r["kind"],
            "agentgraph.step.index": r["index"],
            "agentgraph.step.depth": r["depth"],
        }
        name = r["node"]
        if operation is not None:
            attributes.update(operation_attributes(operation, name, run.conversation))
            name = span_name(operation, name)
        span = self._start(name, under, r["time"], attributes)
        run.steps[r["index"]] = _Open(span, path, r["index"], calls, turn)

    def _on_node_finished(self, run: _Run, r: Mapping[str, Any]) -> None:
        item = run.steps.pop(r["index"], None)
        if item is not None:
            item.span.set_attribute("agentgraph.step.attempts", r["attempts"])
            item.span.end(end_time=ns(r["time"]))
            run.agents.step_ended(item.index, item.turn, r, None)

    def _on_node_failed(self, run: _Run, r: Mapping[str, Any]) -> None:
        self._end_calls(run, tuple(r["path"]), r)
        item = run.steps.pop(r["index"], None)
        if item is not None:
            item.span.set_attribute("agentgraph.step.attempts", r["attempts"])
            error = r["error"]
            self._fail(item.span, error["type"], error["message"], at=r["time"])
            run.agents.step_ended(item.index, item.turn, r, error)

    def _on_handed_off(self, run: _Run, r: Mapping[str, Any]) -> None:
        """A span event on the handing agent's turn (on the handoff step outside a turn)."""
        item = run.steps.get(r["index"])
        turn, span = (item.turn, item.span) if item is not None else (None, None)
        run.agents.handed_off(turn, span, r, self.capture_content)

    def _on_retry_scheduled(self, run: _Run, r: Mapping[str, Any]) -> None:
        self._end_calls(run, tuple(r["path"]), r)
        item = run.steps.get(r["index"])
        if item is not None:
            error = r["error"]
            attributes = {
                "agentgraph.retry.attempt": r["attempt"],
                "agentgraph.retry.wait": r["wait"],
                "error.type": error["type"],
                "exception.message": error["message"],
            }
            item.span.add_event("retry", attributes, ns(r["time"]))

    def _on_model_requested(self, run: _Run, r: Mapping[str, Any]) -> None:
        path = tuple(r["path"])
        parent = self._parent(run, path, r["index"])
        request = r["request"]
        address, port = server_address(r.get("server") or "")
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": CHAT,
            "gen_ai.conversation.id": run.conversation,
            # Required on inference spans; "unknown" when the client does not say.
            "gen_ai.provider.name": r.get("provider") or "unknown",
            "gen_ai.request.model": r["model"],
            "gen_ai.request.temperature": request.get("temperature"),
            "gen_ai.request.max_tokens": request.get("max_output"),
            "server.address": address,
            "server.port": port,
        }
        if self.capture_content:
            attributes["gen_ai.input.messages"] = _json(request.get("messages", []))
            attributes["gen_ai.tool.definitions"] = _json(request.get("tools", []))
        span = self._start(
            span_name(CHAT, r["model"]), parent.span if parent else run.span, r["time"], attributes
        )
        run.calls.append(_Open(span, path, r["index"]))

    def _on_model_responded(self, run: _Run, r: Mapping[str, Any]) -> None:
        path = tuple(r["path"])
        item = next((c for c in reversed(run.calls) if c.path == path), None)
        if item is None:
            return
        run.calls.remove(item)
        response = r["response"]
        usage = response.get("usage") or {}
        finish = response.get("finish_reason")
        attributes: dict[str, Any] = {
            "gen_ai.response.model": response.get("model") or r["model"],
            "gen_ai.response.id": response.get("id"),
            "gen_ai.response.finish_reasons": [finish] if finish else None,
            "gen_ai.usage.input_tokens": usage.get("input_tokens"),
            "gen_ai.usage.output_tokens": usage.get("output_tokens"),
            _CACHE_READ: usage.get("cache_read_tokens") or None,
            _CACHE_WRITE: usage.get("cache_write_tokens") or None,
        }
        if self.capture_content:
            attributes["gen_ai.output.messages"] = _json([response.get("message")])
        item.span.set_attributes({k: v for k, v in attributes.items() if v is not None})
        item.span.end(end_time=ns(r["time"]))

    def _on_tool_finished(self, run: _Run, r: Mapping[str, Any]) -> None:
        path = tuple(r["path"])
        parent = self._parent(run, path, r["index"])
        call = r["call"]
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": TOOL,
            "gen_ai.tool.name": call["name"],
            "gen_ai.tool.call.id": call["id"],
            "gen_ai.tool.type": "function",
        }
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = _json(call.get("arguments", {}))
            attributes["gen_ai.tool.call.result"] = r["result"]
        span = run.agents.calls.pop((r["index"], call["id"]), None)  # opened by its sub-run
        if span is not None:
            span.set_attributes(attributes)
        else:
            span = self._start(
                span_name(TOOL, call["name"]),
                parent.span if parent else run.span,
                r["time"] - r["duration"],
                attributes,
            )
        if r["is_error"]:
            self._fail(span, "ToolError", r["result"], at=r["time"])
        else:
            span.end(end_time=ns(r["time"]))

    def _on_embedded(self, run: _Run, r: Mapping[str, Any]) -> None:
        parent = self._parent(run, tuple(r["path"]), r["index"])
        attributes = {
            "gen_ai.operation.name": EMBEDDINGS,
            "gen_ai.request.model": r["embedder"],
            "gen_ai.embeddings.dimension.count": r["dimensions"],
        }
        span = self._start(
            span_name(EMBEDDINGS, r["embedder"]),
            parent.span if parent else run.span,
            r["time"] - r["duration"],
            attributes,
        )
        span.end(end_time=ns(r["time"]))

    def _on_run_finished(self, run: _Run, r: Mapping[str, Any]) -> None:
        del self._runs[r["run"]]
        for item in [*run.calls, *reversed(run.steps.values())]:
            self._fail(item.span, "Interrupted", "the run ended while this ran", at=r["time"])
        run.agents.run_ended(r, r.get("error") or None)
        usage = r.get("usage") or {}
        run.span.set_attributes(
            {
                "agentgraph.run.steps": r["steps"],
                "gen_ai.usage.input_tokens": usage.get("input_tokens", 0),
                "gen_ai.usage.output_tokens": usage.get("output_tokens", 0),
                _CACHE_READ: usage.get("cache_read_tokens", 0),
                _CACHE_WRITE: usage.get("cache_write_tokens", 0),
            }
        )
        error = r.get("error")
        if error:
            self._fail(run.span, error["type"], error["message"], at=r["time"])
        else:
            run.span.end(end_time=ns(r["time"]))

    def _on_guard_decided(self, run: _Run, r: Mapping[str, Any]) -> None:
        """A span event on the step (a block on a call in flight also marks the call's span)."""
        path = tuple(r["path"])
        attributes: dict[str, Any] = {
            "agentgraph.guard.name": r["guard"],
            "agentgraph.guard.stage": r["stage"],
            "agentgraph.guard.action": r["action"],
            "agentgraph.guard.reason": r.get("reason") or None,
            "agentgraph.guard.replayed": bool(r.get("replayed")),
        }
        if r.get("partial"):
            attributes["agentgraph.guard.partial_usage"] = True
        present = {k: v for k, v in attributes.items() if v is not None}
        call = next((c for c in reversed(run.calls) if c.path == path), None)
        if call is not None and r["action"] == "block":
            call.span.add_event("guard", present, ns(r["time"]))
        item = self._parent(run, path, r["index"])
        (item.span if item is not None else run.span).add_event("guard", present, ns(r["time"]))

    def _end_calls(self, run: _Run, path: tuple[str, ...], r: Mapping[str, Any]) -> None:
        """Model calls at `path` that never answered: the attempt failed while they ran."""
        error = r["error"]
        for item in [c for c in run.calls if c.path == path]:
            run.calls.remove(item)
            self._fail(item.span, error["type"], error["message"], at=r["time"])
