"""Guard decisions in every sink: JSON lines (and the tree read back), console, OpenTelemetry."""

from __future__ import annotations

import io

import orjson
import pytest

from agentgraph import AgentContext, GraphRunner
from agentgraph.guards import Guards, ToolPolicy
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel
from agentgraph.tools import tool
from agentgraph.tracing import ConsoleSink, JsonlSink, load_trace, render_trace

pytestmark = pytest.mark.anyio


@tool
def wipe(target: str) -> str:
    """Wipe a target."""
    return "wiped"


def blocked_run_parts():
    model = ScriptedModel(ScriptedModel.tool_call("wipe", target="/"), "I may not.")
    agent = react_agent(model, [wipe])
    return agent, Guards(tools=[ToolPolicy(deny=["wipe"])])


async def test_a_decision_is_a_line_of_the_trace_file_and_a_line_of_its_tree(tmp_path):
    agent, guards = blocked_run_parts()
    path = tmp_path / "run.jsonl"
    out = io.StringIO()
    with JsonlSink(path) as sink:
        runner = GraphRunner(guards=guards, sinks=[sink, ConsoleSink(out, style="plain")])
        await runner.run(agent, AgentContext("wipe it"))
    records = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    decided = [r for r in records if r["event"] == "guard_decided"]
    assert len(decided) == 1
    record = decided[0]
    assert (record["guard"], record["stage"], record["action"]) == ("tool_policy", "tool", "block")
    assert record["reason"] == "tool 'wipe' is denied" and record["detail"] == {"rule": "deny wipe"}
    assert record["path"] == ["react_agent", "tools"] and record["partial"] is False
    trace = load_trace(path)
    tools = next(s for s in trace.walk() if s.name == "tools")
    assert [g["action"] for g in tools.guards] == ["block"]
    shown = io.StringIO()
    render_trace(trace, shown, style="plain")
    text = shown.getvalue()
    assert "guard tool_policy · tool · block · tool 'wipe' is denied" in text
    assert "✓ run react_agent" in out.getvalue()  # the live console took the event in stride


async def test_a_decision_is_a_span_event_on_its_step():
    pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agentgraph.tracing import OtelSink

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent, guards = blocked_run_parts()
    await GraphRunner(guards=guards, sinks=[OtelSink(provider)]).run(agent, AgentContext("go"))
    spans = {s.name: s for s in exporter.get_finished_spans()}
    events = [e for e in spans["tools"].events if e.name == "guard"]
    assert len(events) == 1
    assert dict(events[0].attributes or {}) == {
        "agentgraph.guard.name": "tool_policy",
        "agentgraph.guard.stage": "tool",
        "agentgraph.guard.action": "block",
        "agentgraph.guard.reason": "tool 'wipe' is denied",
        "agentgraph.guard.replayed": False,
    }
    provider.shutdown()
    exporter.shutdown()
