"""`generate` over real provider clients talking to the loopback fake provider server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from agentgraph import (
    AgentContext,
    GraphBuilder,
    GraphRunner,
    NodeFailed,
    OutputError,
    PartialOutput,
    generate,
    json_schema,
)
from agentgraph.llm import OllamaModel, OpenAIModel
from agentgraph.testing import FakeServer

pytestmark = pytest.mark.anyio

GOOD = '{"approve": true, "summary": "fine"}'


@attrs.frozen
class Verdict:
    approve: bool
    summary: str


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server


@pytest.fixture
def server(shared_server: FakeServer) -> Iterator[FakeServer]:
    shared_server.reset()
    yield shared_server
    shared_server.reset()


async def run(node: Any, ctx: AgentContext[Any]) -> AgentContext[Any]:
    with GraphBuilder[Any, Any]("g") as g:
        g.start.edge_to(node).edge_to(g.finish)
    return await GraphRunner().run(g.build(), ctx)


async def test_openai_client_recovers_from_a_malformed_first_answer(server):
    server.add("Here you go: {approve: yes}", f"```json\n{GOOD}\n```")
    async with OpenAIModel("fake-model", base_url=server.openai_url, api_key="sk-t") as model:
        # Prompt mode: the schema travels in the prompt, the answer is parsed leniently.
        node = generate(Verdict, instruction="Judge.", attempts=2, native=False, model=model)
        out = await run(node, AgentContext(None, system_prompt="You judge."))
    assert out.input == Verdict(True, "fine")
    assert out.usage.requests == 2 and out.usage.input_tokens > 0
    first, second = (r.body for r in server.requests)
    assert "response_format" not in first
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    assert second["messages"][2]["content"] == "Here you go: {approve: yes}"
    assert second["messages"][3]["content"].startswith(
        'Your answer could not be used:\n- approve: expected bool, got "yes"'
    )


async def test_openai_client_sends_the_schema_natively(server):
    server.add(GOOD)
    async with OpenAIModel("fake-model", base_url=server.openai_url, api_key="sk-t") as model:
        # The client advertises native structured output, so it is the default.
        assert model.supports_output_schema
        node = generate(Verdict, instruction="Judge.", model=model)
        out = await run(node, AgentContext(None))
    assert out.input == Verdict(True, "fine")
    (request,) = server.requests
    assert request.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "Verdict",
            "schema": json_schema(Verdict, strict=True),
            "strict": True,
        },
    }


async def test_ollama_client_sends_the_schema_as_format(server):
    server.add(GOOD)
    async with OllamaModel("fake-model", base_url=server.url) as model:
        node = generate(Verdict, instruction="Judge.", native=True, model=model)
        out = await run(node, AgentContext(None))
    assert out.input == Verdict(True, "fine")
    assert server.requests[0].body["format"] == json_schema(Verdict, strict=True)


async def test_streaming_over_http_emits_partials(server):
    server.add('{"approve": 1}', GOOD)
    async with OpenAIModel("fake-model", base_url=server.openai_url, api_key="sk-t") as model:
        node = generate(Verdict, instruction="Judge.", attempts=2, stream=True, model=model)
        with GraphBuilder[Any, Any]("g") as g:
            g.start.edge_to(node).edge_to(g.finish)
        async with GraphRunner().stream(g.build(), AgentContext(None)) as stream:
            events = [event async for event in stream]
    partials = [e for e in events if isinstance(e, PartialOutput)]
    assert {e.attempt for e in partials} == {1, 2}
    final = partials[-1].partial
    assert final.complete and final.result == Verdict(True, "fine")
    assert all(server.requests[i].body["stream"] is True for i in (0, 1))
    assert events[-1].context.input == Verdict(True, "fine")


async def test_every_answer_failing_over_http_keeps_every_raw_answer(server):
    server.add("nothing", '{"approve": true}')
    async with OpenAIModel("fake-model", base_url=server.openai_url, api_key="sk-t") as model:
        node = generate(Verdict, instruction="Judge.", attempts=2, model=model)
        with pytest.raises(NodeFailed) as info:
            await run(node, AgentContext(None))
    error = info.value.error
    assert isinstance(error, OutputError)
    assert error.attempts == ("nothing", '{"approve": true}')
    assert error.errors == ("summary: required field missing",)
