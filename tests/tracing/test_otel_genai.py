"""Every span the OpenTelemetry sink emits, checked against the GenAI conventions' own names.

`genai_conventions.json` lists the attribute keys and operation names of the
conventions' registry (its source and date inside). Each `gen_ai.*` key a span
carries must be in it, and so must its `gen_ai.operation.name`; span names are
`{operation} {target}`. The Python package `opentelemetry-semantic-conventions`
still carries most of the same constants (marked as moved): while it does,
they are checked against it too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentgraph import AgentContext, GraphBuilder, GraphRunner, RunHandle, node
from agentgraph.nodes import retrieve
from agentgraph.rag import NumpyStore, Record
from agentgraph.tracing import OtelSink
from agentgraph.tracing._spans import conversation_id
from tests.rag.support import WordEmbedder, word_vector

from .support import scripted_agent

pytestmark = pytest.mark.anyio

CONVENTIONS = json.loads(Path(__file__).with_name("genai_conventions.json").read_text())
ATTRIBUTES = frozenset(CONVENTIONS["attributes"])
OPERATIONS = frozenset(CONVENTIONS["operations"])


async def traced_run() -> tuple[list[ReadableSpan], str]:
    """A workflow holding a retrieval step and a nested react agent (a chat, two tools)."""
    agent, _ = scripted_agent()
    store = NumpyStore()
    await store.add([Record("oslo", word_vector("Oslo"), "Oslo is in Norway.", {})])
    find = retrieve(WordEmbedder(), store, k=1, name="docs")

    @node
    def question(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx

    with GraphBuilder[str, str]("pipeline") as g:
        g.start.edge_to(find).edge_to(question).edge_to(agent).edge_to(g.finish)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    runner = GraphRunner(sinks=[OtelSink(provider, capture_content=True)])
    handle = RunHandle()
    await runner.run(g.build(), AgentContext("What is 2 + 3?"), handle=handle)
    spans = list(exporter.get_finished_spans())
    provider.shutdown()
    assert handle.run_id is not None
    return spans, handle.run_id


def gen_ai_keys(span: ReadableSpan) -> set[str]:
    return {k for k in (span.attributes or {}) if k.startswith("gen_ai.")}


async def test_every_span_uses_only_names_the_conventions_define() -> None:
    spans, _ = await traced_run()
    operations: dict[str, list[str]] = {}
    for span in spans:
        attributes: dict[str, Any] = dict(span.attributes or {})
        unknown = gen_ai_keys(span) - ATTRIBUTES
        assert not unknown, f"{span.name}: {sorted(unknown)} are not GenAI convention names"
        operation = attributes.get("gen_ai.operation.name")
        if operation is None:
            assert not gen_ai_keys(span), span.name  # agentgraph's own step spans
            continue
        assert operation in OPERATIONS
        assert span.name.split(" ", 1)[0] == operation
        operations.setdefault(operation, []).append(span.name)
    assert operations == {
        "invoke_workflow": ["invoke_workflow pipeline"],
        "retrieval": ["retrieval docs"],
        "embeddings": ["embeddings WordEmbedder"],
        "invoke_agent": ["invoke_agent react_agent"],
        "chat": ["chat scripted-model", "chat scripted-model"],
        "execute_tool": ["execute_tool add", "execute_tool lookup"],
    }


async def test_workflow_agent_retrieval_and_embeddings_spans_nest_and_say_who() -> None:
    spans, run_id = await traced_run()
    named = {s.name: s for s in spans}

    def parent(span: ReadableSpan) -> str | None:
        if span.parent is None:
            return None
        return next(s.name for s in spans if s.context.span_id == span.parent.span_id)

    workflow = named["invoke_workflow pipeline"]
    agent = named["invoke_agent react_agent"]
    retrieval = named["retrieval docs"]
    embeddings = named["embeddings WordEmbedder"]
    assert parent(workflow) is None
    assert parent(agent) == parent(retrieval) == "invoke_workflow pipeline"
    assert parent(embeddings) == "retrieval docs"
    assert parent(named["chat scripted-model"]) == "chat"  # the agent's chat step
    assert workflow.attributes["gen_ai.workflow.name"] == "pipeline"
    assert agent.attributes["gen_ai.agent.name"] == "react_agent"
    assert retrieval.attributes["gen_ai.data_source.id"] == "docs"
    assert embeddings.attributes["gen_ai.embeddings.dimension.count"] == 64
    assert embeddings.attributes["gen_ai.request.model"] == "WordEmbedder"
    conversation = conversation_id(run_id)
    assert conversation == run_id
    for span in (workflow, agent, named["chat scripted-model"]):
        assert span.attributes["gen_ai.conversation.id"] == conversation


def test_a_thread_id_is_the_conversation_when_there_is_one() -> None:
    assert conversation_id("run-1") == "run-1"
    assert conversation_id("run-1", "thread-7") == "thread-7"


async def test_the_pinned_package_still_names_what_is_emitted() -> None:
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes

    carried = {
        value
        for name, value in vars(gen_ai_attributes).items()
        if name.startswith("GEN_AI_") and isinstance(value, str)
    }
    values = {member.value for member in gen_ai_attributes.GenAiOperationNameValues}
    spans, _ = await traced_run()
    emitted = set().union(*(gen_ai_keys(s) for s in spans))
    assert emitted <= carried, sorted(emitted - carried)
    used = {s.attributes["gen_ai.operation.name"] for s in spans if gen_ai_keys(s)}
    assert used <= values


async def test_every_turn_of_a_thread_shares_the_threads_conversation_id() -> None:
    from agentgraph.checkpoint import MemoryStore

    @node
    def echo(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    runner = GraphRunner(sinks=[OtelSink(provider)])
    store = MemoryStore()
    for text in ("first", "second"):
        await runner.run(echo, AgentContext(text), store=store, thread_id="chat-7")
    spans = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_workflow")]
    provider.shutdown()
    assert len(spans) == 2
    assert {s.attributes["gen_ai.conversation.id"] for s in spans} == {"chat-7"}
    assert len({s.attributes["agentgraph.run.id"] for s in spans}) == 2
