"""Graphs, models and a server for the web tests (and the README screenshot)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
from ag_ui.core import Event
from pydantic import TypeAdapter

from agentgraph import AgentContext, Graph, GraphBuilder, GraphRunner, node, tool
from agentgraph.checkpoint import SQLiteStore
from agentgraph.llm import ChatRequest, Message
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel
from agentgraph.web import WebServer, dev_app

SECRET = "sk-proj-" + "Q7x" * 12
"""A key-shaped secret a tool returns: it must never leave the server."""

QUESTION = "What is the weather in Paris, and may I book a table?"
ANSWER = "It is sunny in Paris, 21 degrees; your table is booked."

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


@tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}, 21 degrees (fetched with key {SECRET})"


@tool
def book_table(city: str, people: int) -> str:
    """Book a table for some people (needs a person's approval)."""
    return f"booked a table for {people} in {city}"


REPLIES: tuple[Message | str, ...] = (
    ScriptedModel.tool_call("weather", city="Paris"),
    ScriptedModel.tool_call("book_table", city="Paris", people=2),
    ANSWER,
)


def agent_model() -> ScriptedModel:
    """Any number of runs: each request gets the reply for its turn of the current question."""

    def reply(request: ChatRequest) -> Message | str:
        turns = 0
        for message in reversed(request.messages):
            if message.role == "user":
                break
            turns += message.role == "assistant" and bool(message.tool_calls)
        return REPLIES[min(turns, len(REPLIES) - 1)]

    return ScriptedModel(reply, repeat=True, name="scripted", chunk_size=5)


def agent(*, stream: bool = True) -> Graph[str, str]:
    """A react agent whose booking tool waits for approval."""
    return react_agent(agent_model(), (weather, book_table), approve=("book_table",), stream=stream)


def stateful() -> Graph[str, str]:
    """Two nodes that read the client's history and state and change the state."""

    @node(name="remember")
    async def remember(ctx: AgentContext[str]) -> AgentContext[str]:
        seen = [m.content for m in ctx.history]
        state = {**ctx.state, "seen": seen, "question": ctx.input, "count": 1}
        return ctx.evolve(state=state)

    @node(name="count")
    async def count(ctx: AgentContext[str]) -> AgentContext[str]:
        state = {**ctx.state, "count": ctx.state["count"] + 1, "done": True}
        state.pop("question")
        return ctx.evolve(state=state).with_input(f"{len(ctx.state['seen'])} earlier messages")

    with GraphBuilder[str, str]("stateful") as g:
        g.start.edge_to(remember).edge_to(count).edge_to(g.finish)
    return g.build()


def gated() -> tuple[Any, dict[str, bool]]:
    """A graph whose middle node waits while `gate["closed"]` is True."""
    gate = {"closed": True}

    @node(name="before")
    async def before(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx.with_input(ctx.input + " before")

    @node(name="wait")
    async def wait(ctx: AgentContext[str]) -> AgentContext[str]:
        while gate["closed"]:
            await anyio.sleep(0.01)
        return ctx.with_input(ctx.input + " after")

    with GraphBuilder[str, str]("gated") as g:
        g.start.edge_to(before).edge_to(wait).edge_to(g.finish)
    return g.build(), gate


@contextlib.contextmanager
def serving(graph: Graph[Any, Any], folder: Path, **options: Any) -> Iterator[WebServer]:
    """The development app for `graph` on a loopback port, with a store in `folder`."""
    store = SQLiteStore(folder / "runs.db")
    runner = options.pop("runner", GraphRunner())
    app = dev_app(graph, store=store, runner=runner, **options)
    with WebServer(app) as server:
        yield server


def wait_for(client: httpx.Client, run_id: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while True:
        view = client.get(f"api/runs/{run_id}").json()
        if view["status"] == status or time.monotonic() > deadline:
            return view
        time.sleep(0.02)


def sse(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """The JSON payloads of a server-sent event stream."""
    data: list[str] = []
    for line in lines:
        if line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
        elif not line and data:
            yield orjson.loads("\n".join(data))
            data = []
    if data:
        yield orjson.loads("\n".join(data))


def agui_run(client: httpx.Client, body: dict[str, Any], url: str = "agui") -> list[dict[str, Any]]:
    """POST an AG-UI `RunAgentInput` and read every event, each validated by the SDK."""
    with client.stream("POST", url, json=body) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        events = list(sse(response.iter_lines()))
    for event in events:
        EVENTS.validate_python(event)
    return events


def run_input(run_id: str, *messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A `RunAgentInput` as a client sends it (camelCase JSON)."""
    return {"threadId": "thread-1", "runId": run_id, "messages": list(messages), **extra}


def user(text: str, message_id: str = "u1") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": text}
