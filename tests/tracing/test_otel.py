"""OpenTelemetry spans, checked with the SDK's in-memory exporter."""

import orjson
import pytest

pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from agentgraph import AgentContext, GraphRunner, NodeFailed
from agentgraph.tracing import OtelSink

from .support import FAKE_KEY, mask_emails, nested_graph, scripted_agent
from .support import secret_context as secret_ctx

pytestmark = pytest.mark.anyio


@pytest.fixture
def exporter():
    exporter = InMemorySpanExporter()
    yield exporter
    exporter.shutdown()


@pytest.fixture
def provider(exporter):
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider
    provider.shutdown()


def by_name(spans):
    return {span.name: span for span in spans}


def parent_name(span, spans):
    if span.parent is None:
        return None
    return next(s.name for s in spans if s.context.span_id == span.parent.span_id)


async def test_a_nested_run_with_a_retry_and_a_failure_is_a_tree_of_spans(exporter, provider):
    with pytest.raises(NodeFailed):
        await GraphRunner(sinks=[OtelSink(provider)]).run(nested_graph(fail=True), AgentContext(1))
    spans = exporter.get_finished_spans()
    assert sorted(s.name for s in spans) == sorted(
        ["invoke_workflow outer", "prepare", "invoke_workflow inner", "flaky", "check"]
        + ["double"] * 4
    )
    assert len({s.context.trace_id for s in spans}) == 1
    named = by_name(spans)
    parents = {s.name: parent_name(s, spans) for s in spans}
    assert parents == {
        "invoke_workflow outer": None,
        "prepare": "invoke_workflow outer",
        "invoke_workflow inner": "invoke_workflow outer",
        "flaky": "invoke_workflow inner",
        "double": "invoke_workflow inner",
        "check": "invoke_workflow inner",
    }
    run = named["invoke_workflow outer"]
    assert run.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert run.attributes["gen_ai.workflow.name"] == "outer"
    assert run.attributes["agentgraph.run.steps"] == 8
    assert run.status.status_code is StatusCode.ERROR
    flaky = named["flaky"]
    assert flaky.status.status_code is StatusCode.UNSET
    assert flaky.attributes["agentgraph.step.attempts"] == 2
    assert flaky.attributes["agentgraph.node.path"] == "outer/inner/flaky"
    (retry,) = flaky.events
    assert retry.name == "retry" and retry.attributes["error.type"] == "TimeoutError"
    assert retry.attributes["agentgraph.retry.wait"] == 0.25
    check = named["check"]
    assert check.status.status_code is StatusCode.ERROR
    assert check.attributes["error.type"] == "ValueError"
    assert check.events[0].attributes["exception.message"] == "32 is too big"
    assert named["invoke_workflow inner"].attributes["agentgraph.node.kind"] == "graph"
    assert named["invoke_workflow inner"].status.status_code is StatusCode.ERROR
    for span in spans:  # children sit inside their parents in time
        assert span.start_time <= span.end_time
        if span.parent is not None:
            parent = next(s for s in spans if s.context.span_id == span.parent.span_id)
            assert parent.start_time <= span.start_time and span.end_time <= parent.end_time


async def test_model_and_tool_calls_follow_the_gen_ai_conventions(exporter, provider):
    agent, _ = scripted_agent()
    sink = OtelSink(provider)
    await GraphRunner(sinks=[sink]).run(agent, secret_ctx("2 + 3?"))
    spans = exporter.get_finished_spans()
    chats = [s for s in spans if s.name == "chat scripted-model"]
    assert len(chats) == 2 and all(s.kind is SpanKind.CLIENT for s in chats)
    assert [parent_name(s, spans) for s in chats] == ["chat", "chat"]
    first = chats[0].attributes
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.request.model"] == "scripted-model"
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert first["gen_ai.usage.input_tokens"] > 0 and first["gen_ai.usage.output_tokens"] > 0
    assert "gen_ai.input.messages" not in first  # content only when asked for
    tools = sorted((s for s in spans if s.name.startswith("execute_tool")), key=lambda s: s.name)
    assert [s.name for s in tools] == ["execute_tool add", "execute_tool lookup"]
    add, lookup = tools
    assert add.attributes["gen_ai.tool.name"] == "add"
    assert (
        add.attributes["gen_ai.tool.call.id"] and add.attributes["gen_ai.tool.type"] == "function"
    )
    assert parent_name(add, spans) == "tools" and add.status.status_code is StatusCode.UNSET
    assert lookup.status.status_code is StatusCode.ERROR
    run = by_name(spans)["invoke_agent react_agent"]
    assert run.attributes["gen_ai.usage.input_tokens"] == sum(
        s.attributes["gen_ai.usage.input_tokens"] for s in chats
    )


async def test_captured_content_is_redacted(exporter, provider):
    agent, _ = scripted_agent()
    sink = OtelSink(provider, capture_content=True, redact=mask_emails)
    await GraphRunner(sinks=[sink]).run(agent, secret_ctx("mail bob@example.org"))
    spans = exporter.get_finished_spans()
    chat = next(s for s in spans if s.name == "chat scripted-model")
    messages = orjson.loads(chat.attributes["gen_ai.input.messages"])
    assert messages[-1]["content"] == "mail <email>"
    assert messages[1]["content"] == "my key is ***, keep it safe"
    tool = next(s for s in spans if s.name == "execute_tool add")
    assert orjson.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"a": 2, "b": 3}
    assert tool.attributes["gen_ai.tool.call.result"] == "5"
    everything = orjson.dumps([dict(s.attributes) for s in spans]).decode()
    assert FAKE_KEY not in everything and "example.org" not in everything


async def test_a_model_call_that_fails_ends_its_span_with_the_error(exporter, provider):
    from agentgraph import ServerError
    from agentgraph.nodes import react_agent
    from agentgraph.testing import ScriptedModel

    from .support import add

    model = ScriptedModel(ServerError("overloaded", status=503), "fine now", name="m")
    agent = react_agent(model, [add])
    await GraphRunner(sinks=[OtelSink(provider)]).run(agent, AgentContext("hi"))
    spans = exporter.get_finished_spans()
    chats = [s for s in spans if s.name == "chat m"]
    assert [s.status.status_code for s in chats] == [StatusCode.ERROR, StatusCode.UNSET]
    assert chats[0].attributes["error.type"] == "ServerError"
    assert by_name(spans)["chat"].events[0].name == "retry"


async def test_close_ends_the_spans_of_an_abandoned_run(exporter, provider):
    from agentgraph import RunStarted

    sink = OtelSink(provider)
    sink(RunStarted("g", AgentContext(0)))
    assert exporter.get_finished_spans() == ()
    sink.close()
    (span,) = exporter.get_finished_spans()
    assert span.name == "invoke_workflow g" and span.status.status_code is StatusCode.ERROR


def test_without_opentelemetry_the_sink_says_which_extra(monkeypatch):
    import builtins

    real = builtins.__import__

    def refuse(name, *args, **kwargs):
        if name.startswith("opentelemetry"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", refuse)
    with pytest.raises(ImportError, match=r"agentgraph-engine\[otel\]"):
        OtelSink()


async def test_steps_in_concurrent_branches_nest_under_their_own_branch(exporter, provider):
    import anyio

    from agentgraph import GraphBuilder, map_each, node

    @node(name="a")
    async def a(ctx):
        await anyio.sleep(0.01 * ctx.input)
        return ctx.with_input(ctx.input + 100)

    @node(name="c")
    async def c(ctx):
        return ctx.with_input(ctx.input + 1000)

    with GraphBuilder[int, int]("inner") as inner:
        inner.start.edge_to(a).edge_to(c).edge_to(inner.finish)
    each = map_each(inner.build(), items=lambda ctx: [1, 2], name="each")
    with GraphBuilder[int, list]("outer") as g:
        g.start.edge_to(each).edge_to(g.finish)
    sink = OtelSink(provider)
    await GraphRunner(sinks=[sink]).run(g.build(), AgentContext(0))
    spans = exporter.get_finished_spans()
    branches = [s for s in spans if s.name == "invoke_workflow inner"]
    assert len(branches) == 2
    for branch in branches:
        children = [
            s for s in spans if s.parent is not None and s.parent.span_id == branch.context.span_id
        ]
        assert sorted(s.name for s in children) == ["a", "c"]


async def test_inference_spans_name_the_provider_and_server_with_known_attributes(
    exporter, provider
):
    import httpx
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
    from opentelemetry.semconv.attributes import server_attributes

    from agentgraph import AgentContext as Context
    from agentgraph.llm import OpenAIModel
    from agentgraph.nodes import chat

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            json={
                "id": "c1",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "hi"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": 3,
                    "completion_tokens": 1,
                    "total_tokens": 4,
                    "prompt_tokens_details": {"cached_tokens": 2},
                },
            },
        )

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    model = OpenAIModel(
        "gpt-4o-mini", api_key="sk-test", base_url="https://llm.test:8443/v1", http_client=client
    )
    await GraphRunner(sinks=[OtelSink(provider)]).run(chat(model), Context("hello"))
    await client.aclose()
    (span,) = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    assert span.attributes["gen_ai.provider.name"] == "openai"
    assert span.attributes["server.address"] == "llm.test"
    assert span.attributes["server.port"] == 8443
    assert span.attributes["gen_ai.usage.cache_read.input_tokens"] == 2
    assert "gen_ai.usage.cache_creation.input_tokens" not in span.attributes  # none reported
    known = {
        value
        for module in (gen_ai_attributes, server_attributes)
        for name, value in vars(module).items()
        if name.isupper() and isinstance(value, str)
    }
    for attribute in span.attributes:
        if attribute.startswith(("gen_ai.", "server.")):
            assert attribute in known, attribute
