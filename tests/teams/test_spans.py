"""Teams in OpenTelemetry: one `invoke_agent` span per agent turn, handoffs as span events,
and an agent run by a tool call nested under its `execute_tool` span."""

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agentgraph import AgentContext, GraphBuilder, GraphRunner, node, tool
from agentgraph.nodes import react_agent
from agentgraph.teams import Agent, Handoff, HandoffError, agent_tool, supervisor, swarm
from agentgraph.testing import ScriptedModel
from agentgraph.tracing import OtelSink

pytestmark = pytest.mark.anyio

CONVENTIONS = json.loads(
    (Path(__file__).parents[1] / "tracing" / "genai_conventions.json").read_text()
)
transfer = ScriptedModel.tool_call


@tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"order {order} refunded"


def pair(policy: Any = "full", task: str = "refund order 7"):
    return swarm(
        [
            Agent(
                "triage",
                ScriptedModel(transfer("transfer_to_billing", task=task)),
                handoffs=[Handoff("billing", history=policy)],
            ),
            Agent(
                "billing",
                ScriptedModel(transfer("refund", order="7"), "Order 7 is refunded."),
                tools=[refund],
            ),
        ]
    )


async def spans_of(graph, text="refund order 7", *, content=True, error=None):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    runner = GraphRunner(sinks=[OtelSink(provider, capture_content=content)])
    if error is None:
        await runner.run(graph, AgentContext(text))
    else:
        with pytest.raises(error):
            await runner.run(graph, AgentContext(text))
    spans = list(exporter.get_finished_spans())
    provider.shutdown()
    check_conventions(spans)
    return spans


def check_conventions(spans: list[ReadableSpan]) -> None:
    for span in spans:
        attributes = dict(span.attributes or {})
        keys = {k for k in attributes if k.startswith("gen_ai.")}
        assert keys <= set(CONVENTIONS["attributes"]), (span.name, keys)
        operation = attributes.get("gen_ai.operation.name")
        if operation is None:
            assert not keys, span.name
            continue
        assert operation in CONVENTIONS["operations"]
        assert span.name.split(" ", 1)[0] == operation


def tree(spans: list[ReadableSpan]) -> list[str]:
    """The spans as indented names, children in start order."""
    kids: dict[Any, list[ReadableSpan]] = {}
    for span in spans:
        kids.setdefault(span.parent.span_id if span.parent else None, []).append(span)
    lines: list[str] = []

    def walk(parent: Any, depth: int) -> None:
        for span in sorted(kids.get(parent, []), key=lambda s: s.start_time):
            lines.append("  " * depth + span.name)
            walk(span.context.span_id, depth + 1)

    walk(None, 0)
    return lines


def agents(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    found = [s for s in spans if s.name.startswith("invoke_agent ")]
    return sorted(found, key=lambda s: s.start_time)


async def test_each_agent_turn_is_one_invoke_agent_span_and_the_handoff_an_event_on_it():
    spans = await spans_of(pair())
    assert tree(spans) == [
        "invoke_workflow swarm",
        "  user_turn",
        "  invoke_agent triage",
        "    triage",
        "      chat scripted",
        "    triage_tools",
        "    handoff",
        "  invoke_agent billing",
        "    billing",
        "      chat scripted",
        "    billing_tools",
        "      execute_tool refund",
        "    billing",
        "      chat scripted",
        "  answer",
    ]
    triage, billing = agents(spans)
    run = next(s for s in spans if s.name == "invoke_workflow swarm")
    for span, name in ((triage, "triage"), (billing, "billing")):
        assert span.attributes["gen_ai.agent.name"] == name
        assert span.attributes["gen_ai.operation.name"] == "invoke_agent"
        assert span.attributes["gen_ai.conversation.id"] == run.attributes["gen_ai.conversation.id"]
        assert span.status.status_code is StatusCode.UNSET
    (event,) = triage.events
    assert event.name == "agentgraph.handoff"
    assert dict(event.attributes) == {
        "agentgraph.handoff.source": "triage",
        "agentgraph.handoff.target": "billing",
        "agentgraph.handoff.history": "full",
        "agentgraph.handoff.messages": 3,
        "agentgraph.handoff.task": "refund order 7",
    }
    handoff = next(s for s in spans if s.name == "handoff")
    assert triage.end_time == handoff.end_time <= billing.start_time
    assert not billing.events


async def test_the_task_is_content_recorded_only_when_asked():
    spans = await spans_of(pair(task="for ann"), content=False)
    (event,) = agents(spans)[0].events
    assert "agentgraph.handoff.task" not in event.attributes
    assert event.attributes["agentgraph.handoff.target"] == "billing"


async def test_a_sub_task_is_three_turns_and_its_return_an_event():
    boss = ScriptedModel(transfer("transfer_to_math", task="What is 2+2?"), "It is 4.")
    team = supervisor(Agent("boss", boss), [Agent("math", ScriptedModel("4"))])
    spans = await spans_of(team, "What is 2+2?")
    turns = agents(spans)
    assert [s.name for s in turns] == [
        "invoke_agent boss",
        "invoke_agent math",
        "invoke_agent boss",
    ]
    shown = [
        [(e.name, e.attributes["agentgraph.handoff.history"]) for e in s.events] for s in turns
    ]
    assert shown == [[("agentgraph.handoff", "none")], [("agentgraph.handoff", "return")], []]
    assert turns[1].events[0].attributes["agentgraph.handoff.target"] == "boss"


async def test_an_agent_run_by_a_tool_call_nests_under_its_execute_tool_span():
    helper = react_agent(ScriptedModel("Paris."), [], name="geographer")
    caller = react_agent(
        ScriptedModel(transfer("geographer", task="What is the capital of France?"), "Paris."),
        [agent_tool(helper)],
    )
    spans = await spans_of(caller, "capital?")
    assert tree(spans)[4:10] == [
        "  tools",
        "    execute_tool geographer",
        "      invoke_agent geographer",
        "        user_turn",
        "        chat",
        "          chat scripted",
    ]
    call = next(s for s in spans if s.name == "execute_tool geographer")
    assert call.attributes["gen_ai.tool.call.result"] == "Paris."
    assert json.loads(call.attributes["gen_ai.tool.call.arguments"]) == {
        "task": "What is the capital of France?"
    }
    assert call.status.status_code is StatusCode.UNSET


async def test_a_team_member_offered_as_a_tool_and_a_team_inside_a_workflow():
    """A plain graph run by a tool call is an agent's run too; steps named like an
    agent outside its team open no turn."""

    @node(name="billing")
    def after(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx

    with GraphBuilder[str, str]("pipeline") as g:
        g.start.edge_to(pair()).edge_to(after).edge_to(g.finish)
    spans = await spans_of(g.build())
    lines = tree(spans)
    assert lines[:3] == ["invoke_workflow pipeline", "  invoke_workflow swarm", "    user_turn"]
    assert lines[-1] == "  billing"
    assert [s.name for s in agents(spans)] == ["invoke_agent triage", "invoke_agent billing"]


async def test_a_failed_handoff_fails_the_turn_that_made_it():
    def broken(view):
        return [m for m in view.history if m.role != "tool"]  # orphans the calls

    spans = await spans_of(pair(policy=broken), error=HandoffError)
    (triage,) = agents(spans)
    assert triage.status.status_code is StatusCode.ERROR
    assert triage.attributes["error.type"] == "HandoffError"
    assert [e.name for e in triage.events] == ["exception"]  # no handoff happened
