"""Per-request work the model path skips: events nobody listens to, a URL parsed per call."""

import pytest

from agentgraph import (
    AgentContext,
    GraphRunner,
    Message,
    ModelRequested,
    ModelResponded,
    ToolCall,
    ToolFinished,
    tool,
)
from agentgraph.llm import OpenAIModel
from agentgraph.llm._transport import HttpTransport
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class WatchedModel(ScriptedModel):
    """A scripted model that counts reads of what a `ModelRequested` event reports."""

    reads = 0

    @property
    def base_url(self) -> str:
        type(self).reads += 1
        return "http://model.test/v1"


def script() -> WatchedModel:
    WatchedModel.reads = 0
    return WatchedModel(
        Message.assistant(tool_calls=(ToolCall("c1", "add", {"a": 1, "b": 2}),)),
        "3",
    )


async def test_a_run_without_a_listener_builds_no_model_events():
    model = script()
    result = await GraphRunner().run(react_agent(model, [add]), AgentContext("1+2"))
    assert result.input == "3"
    assert result.usage.requests == 2
    assert WatchedModel.reads == 0  # no ModelRequested was built


async def test_a_listener_gets_every_model_and_tool_event():
    model = script()
    seen: list[object] = []
    agent = react_agent(model, [add])
    async with GraphRunner().stream(agent, AgentContext("1+2")) as events:
        async for event in events:
            if isinstance(event, ModelRequested | ModelResponded | ToolFinished):
                seen.append(event)
    kinds = [type(e).__name__ for e in seen]
    assert kinds == [
        "ModelRequested",
        "ModelResponded",
        "ToolFinished",
        "ModelRequested",
        "ModelResponded",
    ]
    requested = [e for e in seen if isinstance(e, ModelRequested)]
    assert [e.server for e in requested] == ["http://model.test/v1"] * 2
    assert WatchedModel.reads == 2
    responded = [e for e in seen if isinstance(e, ModelResponded)]
    assert all(e.latency >= 0 for e in responded)
    assert responded[-1].response.message.content == "3"


def test_display_url_follows_base_url_and_hides_credentials():
    transport = HttpTransport("openai", "http://user:secret@a.test/v1/")
    assert transport.display_url == "http://a.test/v1"
    assert transport.display_url == "http://a.test/v1"  # the cached answer, unchanged
    transport.base_url = "http://other:pw@b.test:8080/api"
    assert transport.display_url == "http://b.test:8080/api"
    assert "secret" not in repr(transport)


def test_models_do_not_share_a_display_url():
    first = OpenAIModel("m", base_url="http://k:pw@one.test/v1")
    assert first.base_url == "http://one.test/v1"
    second = OpenAIModel("m", base_url="http://two.test/v1")
    assert (first.base_url, second.base_url) == ("http://one.test/v1", "http://two.test/v1")
