"""Each stream mode's parts as `langgraph-sdk` reads them, one id per message across the
modes, the `custom` mode, and graphs whose input is a class of fields; on SQLite and PostgreSQL."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import attrs
import httpx
import pydantic
import pytest
from langgraph_sdk import get_client

from agentgraph import AgentContext, Graph, GraphBuilder, Message, Runtime, node, tool
from agentgraph.nodes import react_agent
from agentgraph.server import ServerSettings, server_app
from agentgraph.testing import ScriptedModel
from agentgraph.web import WebServer
from tests.pg_server import drop_schema, fresh_schema

from .support import said

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def agent() -> Graph[str, str]:
    """A streaming ReAct agent: a tool call with some text, then the answer."""
    model = ScriptedModel(
        ScriptedModel.tool_calls(("lookup", {"city": "Oslo"}), content="Let me look."),
        "It is sunny in Oslo.",
        chunk_size=4,
        repeat=True,
    )
    return react_agent(model, [lookup], stream=True, name="agent")


def progress() -> Graph[str, str]:
    """Sends custom data twice, keeps a count in its state, then answers."""

    @node(name="work")
    async def work(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
        await rt.emit_custom({"progress": 0.5})
        await rt.emit_custom("done", name="status")
        answer = f"worked on {ctx.input}"
        return ctx.append(Message.user(ctx.input), Message.assistant(answer)).evolve(
            state={**ctx.state, "count": int(ctx.state.get("count", 0)) + 1}
        )

    with GraphBuilder[str, str]("progress") as g:
        g.start.edge_to(work).edge_to(g.finish)
    return g.build()


@attrs.frozen
class Question:
    question: str
    limit: int = 3


@dataclasses.dataclass(frozen=True)
class Answer:
    answer: str
    words: int


class Order(TypedDict):
    item: str
    count: NotRequired[int]


class Ticket(pydantic.BaseModel):
    title: str
    urgent: bool = False


def typed(name: str, in_type: Any, fn: Any) -> Graph[Any, Any]:
    @node(name="answer")
    async def answer(ctx: AgentContext[Any]) -> AgentContext[Any]:
        return ctx.with_input(fn(ctx.input))

    with GraphBuilder[in_type, Any](name) as g:  # type: ignore[valid-type]
        g.start.edge_to(answer).edge_to(g.finish)
    return g.build()


def graphs() -> dict[str, Graph[Any, Any]]:
    def ask(q: Question) -> Answer:
        return Answer(f"{q.question}? yes", q.limit)

    return {
        "agent": agent(),
        "progress": progress(),
        "question": typed("question", Question, ask),
        "order": typed("order", Order, lambda o: {"ordered": o["item"], **o}),
        "ticket": typed("ticket", Ticket, lambda t: f"{t.title} urgent={t.urgent}"),
        "mapping": typed("mapping", dict[str, int], lambda d: {"total": sum(d.values())}),
        "count": typed("count", int, lambda n: f"{n} items"),
    }


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Where the server keeps its queue: a SQLite file, or a schema on a real PostgreSQL."""
    if request.param == "sqlite":
        yield str(tmp_path / "server.db"), "agentgraph"
        return
    postgres = request.getfixturevalue("postgres_server")
    schema = fresh_schema()
    yield postgres.dsn, schema
    drop_schema(postgres.dsn, schema)


@contextlib.contextmanager
def serving(where: tuple[str, str]) -> Iterator[str]:
    app = server_app(graphs(), where[0], settings=ServerSettings(grace=0.5), schema=where[1])
    with WebServer(app) as server:
        yield server.url.rstrip("/")


async def test_the_custom_mode_streams_what_nodes_send(store: tuple[str, str]):
    with serving(store) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            parts = [
                p
                async for p in client.runs.stream(
                    tid, "progress", input=said("x"), stream_mode=["custom", "updates", "events"]
                )
            ]
            assert [p.event for p in parts if p.event != "events"] == [
                "metadata",
                "custom",
                "custom",
                "updates",
            ]
            assert [p.data for p in parts if p.event == "custom"] == [{"progress": 0.5}, "done"]
            customs = [p.data for p in parts if p.event == "events"]
            customs = [e for e in customs if e["event"] == "on_custom_event"]
            assert [(e["name"], e["data"]) for e in customs] == [
                ("custom", {"progress": 0.5}),
                ("status", "done"),
            ]
            assert customs[0]["metadata"]["langgraph_node"] == "work"
            # Stored: a client that joins afterwards gets them too, once.
            run_id = parts[0].data["run_id"]
            joined = [p async for p in client.runs.join_stream(tid, run_id, last_event_id="-1")]
            assert [p.data for p in joined if p.event == "custom"] == [{"progress": 0.5}, "done"]
            v2 = [
                p
                async for p in client.runs.stream(
                    tid, "progress", input=said("y"), stream_mode="custom", version="v2"
                )
            ]
            assert [(p["type"], p["ns"], p["data"]) for p in v2 if p["type"] == "custom"] == [
                ("custom", [], {"progress": 0.5}),
                ("custom", [], "done"),
            ]


async def test_a_streamed_message_keeps_one_id_in_every_mode_and_in_the_thread(
    store: tuple[str, str],
):
    modes = ["messages-tuple", "messages", "values", "updates", "events"]
    with serving(store) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            parts = [
                p
                async for p in client.runs.stream(
                    tid, "agent", input=said("weather?"), stream_mode=modes
                )
            ]
            values = [p.data for p in parts if p.event == "values"][-1]
            final = {m["id"]: m for m in values["messages"]}
            assert [m["type"] for m in values["messages"]] == ["human", "ai", "tool", "ai"]
            assert len(final) == 4  # four ids, none shared

            # messages-tuple: the answers in chunks, concatenated by id; the other
            # messages whole, once; nothing sent both ways.
            tuples = [p.data for p in parts if p.event == "messages"]
            chunks: dict[str, str] = {}
            whole: list[str] = []
            for message, meta in tuples:
                assert meta["thread_id"] == tid and isinstance(meta["tags"], list)
                assert meta["langgraph_node"] and isinstance(meta["langgraph_step"], int)
                if message["type"] == "AIMessageChunk":
                    chunks[message["id"]] = chunks.get(message["id"], "") + message["content"]
                else:
                    whole.append(message["id"])
            ais = [m for m in values["messages"] if m["type"] == "ai"]
            assert chunks == {m["id"]: m["content"] for m in ais}
            assert sorted(whole) == sorted(set(final) - set(chunks))
            calling = [
                m for m, _ in tuples if m["type"] == "AIMessageChunk" and m["tool_call_chunks"]
            ]
            assert [c["name"] for c in calling[0]["tool_call_chunks"]] == ["lookup"]
            assert calling[0]["id"] == ais[0]["id"]

            # messages: partials and completes name the message as values does.
            partial_ids = {p.data[0]["id"] for p in parts if p.event == "messages/partial"}
            assert partial_ids == {m["id"] for m in ais}
            complete = [p.data[0] for p in parts if p.event == "messages/complete"]
            assert {m["id"]: m["content"] for m in complete} == {
                k: m["content"] for k, m in final.items()
            }
            ends = [p.data for p in parts if p.event == "events"]
            ends = [e["data"]["output"]["id"] for e in ends if e["event"] == "on_chat_model_end"]
            assert ends == [m["id"] for m in ais]

            # The thread keeps the ids, and a later turn does not rename them.
            state = await client.threads.get_state(tid)
            assert [m["id"] for m in state["values"]["messages"]] == list(final)
            await client.runs.wait(tid, "agent", input=said("and tomorrow?"))
            later = (await client.threads.get_state(tid))["values"]["messages"]
            assert [m["id"] for m in later[:4]] == list(final)
            assert len({m["id"] for m in later}) == len(later) > 4


async def test_each_mode_has_the_shape_the_sdk_types_say(store: tuple[str, str]):
    with serving(store) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            parts = [
                p
                async for p in client.runs.stream(
                    tid,
                    "progress",
                    input={**said("x"), "topic": "t"},
                    stream_mode=["values", "updates", "messages-tuple"],
                    version="v2",
                )
            ]
            kinds = [p["type"] for p in parts]
            assert kinds == ["metadata", "values", "updates", "messages", "messages"]
            assert parts[0]["data"]["run_id"] and parts[0]["data"]["thread_id"] == tid
            values = parts[1]["data"]
            assert values["topic"] == "t" and values["count"] == 1
            assert [m["content"] for m in values["messages"]] == ["x", "worked on x"]
            assert parts[1]["interrupts"] == []
            # updates: keyed by node, what the node changed (not the input's `topic`).
            assert list(parts[2]["data"]) == ["work"]
            update = parts[2]["data"]["work"]
            assert update["count"] == 1 and "topic" not in update
            assert update["messages"] == values["messages"]
            message, meta = parts[3]["data"]
            assert message == values["messages"][0]
            assert meta["langgraph_node"] == "work" and meta["langgraph_step"] == 1
            assert meta["run_id"] == parts[0]["data"]["run_id"]
            assert meta["graph_id"] == "progress" and meta["tags"] == []
            again = [
                p["data"]
                async for p in client.runs.stream(
                    tid, "progress", input=said("y"), stream_mode="updates", version="v2"
                )
            ]
            assert again[1] == {"work": {"messages": again[1]["work"]["messages"], "count": 2}}
            assert [m["content"] for m in again[1]["work"]["messages"]] == ["y", "worked on y"]


async def test_a_graph_taking_a_class_of_fields_takes_the_input_decoded(
    store: tuple[str, str],
):
    with serving(store) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            out = await client.runs.wait(tid, "question", input={"question": "rain", "limit": 2})
            assert out == {"messages": [], "answer": "rain? yes", "words": 2}
            out = await client.runs.wait(None, "order", input={"item": "tea"})
            assert out == {"messages": [], "ordered": "tea", "item": "tea"}
            out = await client.runs.wait(None, "count", input=3)
            assert out == {"messages": [], "output": "3 items"}
            out = await client.runs.wait(None, "mapping", input={"a": 1, "b": 2})
            assert out == {"messages": [], "total": 3}
            # Messages, when the type has no field of that name, are the history added.
            out = await client.runs.wait(
                None, "question", input={"question": "q", **said("earlier")}
            )
            assert [m["content"] for m in out["messages"]] == ["earlier"]
            state = await client.threads.get_state(tid)
            assert state["values"]["answer"] == "rain? yes"

            refusals = [
                ("question", {"question": "q", "limit": "many"}, "limit"),
                ("question", {"limit": 1}, "question"),
                ("question", {"question": "q", "colour": "red"}, "colour"),
                ("order", {"count": 2}, "item"),
                ("count", "three", "int"),
                # A pydantic model is no context data: its graph cannot take a client's input.
                ("ticket", {"title": "down"}, "Ticket"),
                ("mapping", {"a": "one"}, "a"),
            ]
            for graph, given, field in refusals:
                with pytest.raises(httpx.HTTPStatusError) as refused:
                    await client.runs.create(tid, graph, input=given)
                assert refused.value.response.status_code == 422
                detail = refused.value.response.json()["detail"]
                assert field in detail and "input type" in detail, detail
            assert len(await client.runs.list(tid)) == 1  # nothing stored for the refusals
