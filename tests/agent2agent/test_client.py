"""A remote A2A agent (served by the official SDK) as a node of a graph."""

from __future__ import annotations

import pytest
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import a2a_pb2 as pb
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from agentgraph import AgentContext, GraphRunner, Interrupted, UsageError
from agentgraph.a2a import A2AFormatError, RemoteAgent, RemoteTaskFailed, remote_agent
from agentgraph.checkpoint import MemoryStore

from .serving import graph_of, served

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Tailor(AgentExecutor):
    """Asks for a size on a new task, then answers in two streamed chunks."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def execute(self, context, queue) -> None:
        said = context.get_user_input()
        self.calls.append(said)
        updater = TaskUpdater(queue, context.task_id, context.context_id)
        if context.current_task is None:
            await queue.enqueue_event(
                pb.Task(
                    id=context.task_id,
                    context_id=context.context_id,
                    status=pb.TaskStatus(state=pb.TASK_STATE_SUBMITTED),
                    history=[context.message],
                )
            )
        if said == "fail":
            await updater.failed(updater.new_agent_message([pb.Part(text="out of cloth")]))
            return
        if context.current_task is None:
            await updater.requires_input(updater.new_agent_message([pb.Part(text="which size?")]))
            return
        await updater.add_artifact([pb.Part(text="a suit ")], artifact_id="a", append=False)
        await updater.add_artifact(
            [pb.Part(text=f"in {said}")], artifact_id="a", append=True, last_chunk=True
        )
        await updater.complete()

    async def cancel(self, context, queue) -> None:
        raise NotImplementedError


def sdk_app(executor: AgentExecutor, url: str) -> Starlette:
    card = pb.AgentCard(
        name="tailor",
        description="Makes suits.",
        version="1",
        supported_interfaces=[
            pb.AgentInterface(url=url, protocol_binding=b, protocol_version="1.0")
            for b in ("JSONRPC", "HTTP+JSON")
        ],
        capabilities=pb.AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[pb.AgentSkill(id="suits", name="suits", description="Makes suits.", tags=["t"])],
    )
    handler = DefaultRequestHandler(executor, InMemoryTaskStore(), card)
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, "/"),
        *create_rest_routes(handler),
    ]
    return Starlette(routes=routes)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_remote_agent_asks_is_answered_and_is_not_called_on_replay(binding):
    tailor = Tailor()
    store = MemoryStore()
    async with served(lambda url: sdk_app(tailor, url)) as url:
        graph = graph_of(remote_agent(RemoteAgent(url, bindings=[binding]), name="tailor"))
        runner = GraphRunner()
        with pytest.raises(Interrupted) as asked:
            await runner.run(graph, AgentContext("a suit please"), store=store)
        assert asked.value.question == "which size?"
        out = await runner.resume(graph, asked.value.run_id, store, answer="M")
        assert out.input == "a suit in M"
        assert tailor.calls == ["a suit please", "M"]
        replayed = await runner.replay(graph, asked.value.run_id, store)
    assert replayed.input == "a suit in M"
    assert tailor.calls == ["a suit please", "M"]  # the replay did not call the agent
    roles = [(m.role, m.content) for m in out.history]
    assert roles == [
        ("user", "a suit please"),
        ("assistant", "which size?"),
        ("user", "M"),
        ("assistant", "a suit in M"),
    ]
    # The answer went to the task that asked, in the same context.
    asked_data, answered = out.history[1].provider_data, out.history[3].provider_data
    assert asked_data["a2a.state"] == "input-required"
    assert answered["a2a.task"] == asked_data["a2a.task"]
    assert answered["a2a.context"] == asked_data["a2a.context"]


async def test_the_answer_streams_as_model_events():
    from agentgraph import ModelStreamed

    tailor, seen = Tailor(), []
    async with served(lambda url: sdk_app(tailor, url)) as url:
        graph = graph_of(remote_agent(url))
        runner = GraphRunner(sinks=[seen.append])
        store = MemoryStore()
        with pytest.raises(Interrupted) as asked:
            await runner.run(graph, AgentContext("suit"), store=store)
        assert [e for e in seen if isinstance(e, ModelStreamed)] == []  # a question, no text
        await runner.resume(graph, asked.value.run_id, store, answer="L")
    # The resumed run streams the recorded question as it was recorded, then the new answer live.
    streamed = [e.text for e in seen if isinstance(e, ModelStreamed)]
    assert streamed == ["which size?", "a suit ", "in L"]


async def test_a_failed_remote_task_is_a_typed_error():
    async with served(lambda url: sdk_app(Tailor(), url)) as url:
        agent = RemoteAgent(url)
        from agentgraph.llm import ChatRequest, Message

        with pytest.raises(RemoteTaskFailed) as failed:
            await agent.request(ChatRequest([Message.user("fail")]))
    assert failed.value.state == "failed" and failed.value.detail == "out of cloth"


async def test_a_card_breaking_the_schema_names_the_field():
    card = {"name": "x", "supportedInterfaces": [{"url": 3, "protocolBinding": "JSONRPC"}]}

    def app(url: str) -> Starlette:
        async def serve_card(request):
            return JSONResponse(card)

        return Starlette(routes=[Route("/.well-known/agent-card.json", serve_card)])

    async with served(app) as url:
        with pytest.raises(A2AFormatError) as bad:
            await RemoteAgent(url).card()
    assert bad.value.field == "supportedInterfaces.url"
    card["supportedInterfaces"] = []
    async with served(app) as url:
        with pytest.raises(A2AFormatError) as empty:
            await RemoteAgent(url).card()
    assert empty.value.field == "supportedInterfaces"


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_trio_is_refused_with_a_clear_error():
    from agentgraph.llm import ChatRequest, Message

    agent = RemoteAgent("http://127.0.0.1:9")
    with pytest.raises(UsageError, match="needs asyncio"):
        await agent.request(ChatRequest([Message.user("hi")]))


async def test_a_served_graphs_typed_output_reads_with_its_integers():
    import attrs

    from agentgraph import GraphBuilder, node
    from agentgraph.a2a import a2a_app

    @attrs.frozen
    class Room:
        nights: int
        price: float

    @node
    def room(ctx: AgentContext[str]) -> AgentContext[Room]:
        return ctx.with_input(Room(2, 90.0))

    with GraphBuilder[str, Room]("rooms") as g:
        g.start.edge_to(room).edge_to(g.finish)
    async with served(lambda url: a2a_app(g.build(), url=url)) as url:
        out = await GraphRunner().run(graph_of(remote_agent(url)), AgentContext("a room"))
    assert out.input == '{"nights":2,"price":90.0}'
