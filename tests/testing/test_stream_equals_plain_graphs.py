"""For every wire, a graph streaming its model calls runs as the one asking plainly.

The same scripted answers (text, several tool calls, reasoning, usage) give the
same final message, usage and step events whether the model is asked plainly
or streamed: at the top level, in a graph used as a node, and in an agent
offered as a tool. An error mid-answer is the same typed error either way, and
leaves nothing of the failed answer in the history.
"""

import re
from collections.abc import Iterator
from typing import Any

import anyio
import attrs
import pytest

from agentgraph import (
    AgentContext,
    Event,
    GraphBuilder,
    GraphRunner,
    ModelResponded,
    ModelStreamed,
    NodeFinished,
    NodeStarted,
    ProviderStatusError,
    RetryPolicy,
    RunFinished,
    RunStarted,
    ServerError,
    ToolFinished,
    tool,
)
from agentgraph.llm import Message, ToolCall, Usage
from agentgraph.nodes import react_agent
from agentgraph.teams import agent_tool
from agentgraph.testing import ErrorResponse, FakeServer, StreamError
from tests.llm.test_transcript import WIRES, model

PLACES = ("top", "nested", "agent tool")
ONCE = GraphRunner(retry=RetryPolicy(attempts=1))
"""A runner that retries no node: an error after part of a streamed answer is never
retried (the text was already reported), so the plain run must not retry either."""


ARMED: list[tuple[FakeServer, StreamError | ErrorResponse]] = []
"""A fault the next lookup injects, so that the model call after it fails."""


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    while ARMED:
        fake, fault = ARMED.pop()
        fake.inject(fault, times=None)
    return f"{city}: rain"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def answers(wire: str, place: str) -> list[Message]:
    """The fake's replies in order: the tool agent's caller first asks it, then answers."""
    cities = ("Oslo", "Rome") if wire != "gigachat" else ("Oslo",)  # one call a turn
    calls = tuple(ToolCall(f"call_{c}", "lookup", {"city": c}) for c in cities)
    thought = None if wire in ("openai", "gigachat") else "Two cities, two lookups."
    inner = [
        Message.assistant("Looking them up.", tool_calls=calls, reasoning=thought),
        Message.assistant("Oslo has rain, Rome too. " * 8, reasoning=thought),
    ]
    if place != "agent tool":
        return inner
    ask = Message.assistant(tool_calls=(ToolCall("call_ask", "weather", {"task": "Oslo"}),))
    return [ask, *inner, Message.assistant("The helper says: rain.")]


def graph(wire: str, server: FakeServer, place: str, stream: bool) -> Any:
    m = model(wire, server)
    agent = react_agent(m, [lookup], stream=stream, name="weather")
    if place == "top":
        return m, agent
    if place == "agent tool":
        return m, react_agent(m, [agent_tool(agent)], stream=stream, name="caller")
    with GraphBuilder[str, str]("outer") as g:
        g.start.edge_to(agent).edge_to(g.finish)
    return m, g.build()


def shape(message: Message) -> tuple[object, ...]:
    """A message without the ids some wires make afresh per response.

    A failed agent tool's result keeps what failed, not the provider's wording
    (which an error line inside a stream and an error status word differently).
    """
    content = re.sub(r"(attempts?): .*", r"\1", message.content, flags=re.S)
    calls = tuple((c.name, dict(c.arguments)) for c in message.tool_calls)
    return (message.role, content, message.reasoning, calls, len(message.provider_data))


def no_input(usage: Usage) -> Usage:
    """Usage without its input tokens, which the fake counts from the body (the stream flag)."""
    return attrs.evolve(usage, input_tokens=0)


def seen(event: Event) -> tuple[object, ...] | None:
    """What an event says that must not depend on streaming (None: an event to skip)."""
    if isinstance(event, ModelStreamed | RunStarted):
        return None
    if isinstance(event, NodeStarted):
        return ("started", event.index, event.path, event.parent)
    if isinstance(event, NodeFinished):
        messages = tuple(shape(m) for m in event.context.history)
        return ("finished", event.step.index, event.step.path, messages)
    if isinstance(event, ModelResponded):
        response = event.response
        usage = no_input(response.usage)
        return ("answer", event.path, shape(response.message), usage, response.finish_reason)
    if isinstance(event, ToolFinished):
        return ("tool", event.path, event.call.name, shape(event.result))
    if isinstance(event, RunFinished):
        messages = tuple(shape(m) for m in event.context.history)
        return ("end", event.steps, messages, type(event.error))
    return (type(event).__name__, getattr(event, "path", ()))


async def run(
    graph: Any, m: Any, runner: GraphRunner
) -> tuple[list[tuple[object, ...]], BaseException | None]:
    events: list[tuple[object, ...]] = []
    failure: BaseException | None = None
    pieces = 0
    async with m:
        try:
            async with runner.stream(graph, AgentContext("weather in Oslo?")) as stream:
                async for event in stream:
                    pieces += isinstance(event, ModelStreamed)
                    said = seen(event)
                    if said is not None:
                        events.append(said)
        except Exception as exc:
            failure = exc
    return events, failure, pieces


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("place", PLACES)
def test_a_streaming_graph_runs_as_the_plain_one(wire, place, server):
    outcomes = []
    for stream in (False, True):
        server.reset()
        server.add(*answers(wire, place))
        m, built = graph(wire, server, place, stream)
        outcomes.append(anyio.run(run, built, m, GraphRunner()))
        assert server.remaining == 0
    (plain, plain_error, none), (streamed, streamed_error, pieces) = outcomes
    assert plain_error is None and streamed_error is None
    assert none == 0 and pieces > 0
    assert streamed == plain
    assert plain[-1][0] == "end"
    last = plain[-1][2][-1]
    assert last[0] == "assistant" and last[1].strip()


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("place", PLACES)
def test_an_error_mid_answer_is_the_same_error_and_leaves_nothing(wire, place, server):
    outcomes = []
    for stream in (False, True):
        server.reset()
        server.add(*answers(wire, place))
        # The model call after the tool calls fails on every attempt: mid-answer when streamed.
        ARMED.append((server, StreamError(after_events=2) if stream else ErrorResponse(500)))
        m, built = graph(wire, server, place, stream)
        outcomes.append(anyio.run(run, built, m, ONCE))
    (plain, plain_error, _), (streamed, streamed_error, _) = outcomes
    assert plain_error is not None and streamed_error is not None
    assert type(streamed_error) is type(plain_error)
    cause, plain_cause = streamed_error.__cause__, plain_error.__cause__
    if wire == "ollama":
        # Ollama's error line inside a stream has no type: the generic status error,
        # of which the plain answer's HTTP 500 (ServerError) is a kind.
        assert type(cause) is ProviderStatusError and isinstance(plain_cause, ServerError)
    else:
        assert type(cause) is type(plain_cause)
    assert streamed == plain
    end = plain[-1]
    assert end[0] == "end" and end[3] is type(plain_error)
    # The history ends with the tool results: nothing of the failed answer.
    assert end[2][-1][0] == "tool"
