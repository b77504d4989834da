"""For every wire, the same scripted answer requested plainly and streamed ends the same.

The final message (text, reasoning, tool calls, the provider data later
requests need back) and the usage must not depend on how it was asked for.
"""

from collections.abc import Iterator

import attrs
import pytest

from agentgraph.llm import ChatRequest, Message, ResponseDone, ToolCall, ToolSpec
from agentgraph.testing import FakeServer
from tests.llm.test_transcript import WIRES, model

pytestmark = pytest.mark.anyio

LOOKUP = ToolSpec(
    "lookup", "Look a city up.", {"type": "object", "properties": {"city": {"type": "string"}}}
)
CALLS = (
    ToolCall("call_1", "lookup", {"city": "Oslo"}),
    ToolCall("call_2", "lookup", {"city": "Rome"}),
)


def answers(wire: str) -> list[Message]:
    calls = CALLS[:1] if wire == "gigachat" else CALLS  # GigaChat: one call per turn
    thought = None if wire in ("openai", "gigachat") else "Two cities, two lookups."
    return [
        Message.assistant("Looking both up.", tool_calls=calls, reasoning=thought),
        Message.assistant("Oslo has rain, Rome sun. " * 20, reasoning=thought),
    ]


FRESH_IDS = ("responses", "gigachat")
"""Wires whose answers carry ids made afresh per response (Responses item ids; GigaChat
has no call ids, so the client makes them, and a new state id)."""


def shape(message: Message) -> tuple[object, ...]:
    """A message without the ids made per response."""
    data = {key: len(value) for key, value in message.provider_data.items()}
    calls = tuple((c.name, dict(c.arguments)) for c in message.tool_calls)
    return (message.role, message.content, message.reasoning, calls, data)


@pytest.fixture(scope="module")
def shared() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server


@pytest.fixture
def server(shared: FakeServer) -> Iterator[FakeServer]:
    shared.reset()
    yield shared
    shared.reset()


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("turn", [0, 1], ids=["tool calls", "text"])
async def test_a_streamed_answer_ends_as_the_plain_one(wire, turn, server):
    reply = answers(wire)[turn]
    request = ChatRequest([Message.user("weather in Oslo and Rome?")], tools=[LOOKUP], think=True)
    server.add(reply, reply)
    async with model(wire, server) as m:
        plain = await m.request(request)
        deltas = []
        async with m.stream(request) as events:
            async for event in events:
                deltas.append(event)
    done = deltas[-1]
    assert isinstance(done, ResponseDone)
    streamed = done.response
    # The fake counts input tokens from the request body, which differs by the stream
    # flag; everything the answer itself carries must be the same.
    assert streamed.usage.input_tokens > 0 and plain.usage.input_tokens > 0
    same = {"input_tokens": 0}
    assert attrs.evolve(streamed.usage, **same) == attrs.evolve(plain.usage, **same)
    assert shape(streamed.message) == shape(plain.message)
    if wire not in FRESH_IDS:
        assert attrs.evolve(streamed.message, usage=None) == attrs.evolve(plain.message, usage=None)
    assert streamed.finish_reason == plain.finish_reason
    assert plain.message.content == reply.content
    assert [c.name for c in plain.message.tool_calls] == [c.name for c in reply.tool_calls]
