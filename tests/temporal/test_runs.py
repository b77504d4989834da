"""Runs on a real Temporal dev server: a react_agent, effects as activities, interrupts,
cancellation, payloads past Temporal's limit, continue-as-new and replay."""

import anyio
import pytest
from temporalio.service import RPCError
from temporalio.workflow import NondeterminismError

from agentgraph import (
    AgentContext,
    GraphBuilder,
    GraphCancelled,
    GraphRunner,
    GraphTimeout,
    Message,
    NodeFinished,
    ServerError,
    StepLimitExceeded,
    UsageError,
    node,
    tool,
)
from agentgraph.checkpoint import MemoryStore
from agentgraph.llm import ChatRequest
from agentgraph.nodes import chat, tool_use
from agentgraph.temporal import (
    ActivityPolicy,
    RunFailed,
    TemporalRunner,
    replayer,
    worker,
)
from agentgraph.testing import ScriptedModel
from tests.temporal.graphs import agent, counter, echo, lines

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

FAST = ActivityPolicy(heartbeat=2.0, initial=0.1, timeout=30.0)


async def test_a_react_agent_runs_as_a_workflow_with_its_effects_as_activities(
    client, queue, tmp_path
):
    graph, model, tools = agent(tmp_path)
    ctx = AgentContext("please bump")
    async with worker(client, task_queue=queue, graphs=[graph], models=[model], tools=tools):
        out = await TemporalRunner(client, task_queue=queue).run(graph, ctx)
    local_graph, _, _ = agent(tmp_path / "local")
    (tmp_path / "local").mkdir()
    local = await GraphRunner().run(local_graph, ctx)
    assert out == local
    assert out.input == "done"
    assert [line.split()[0] for line in lines(tmp_path / "model.log")] == ["0", "1"]
    assert len(lines(tmp_path / "bump.log")) == 1


async def test_an_interrupt_is_answered_after_the_worker_restarted(client, queue, tmp_path):
    graph, model, tools = agent(tmp_path, approve=["charge"])
    seen: list[int] = []
    runner = GraphRunner(
        sinks=[lambda e: seen.append(e.step.index) if isinstance(e, NodeFinished) else None]
    )
    common = dict(task_queue=queue, graphs=[graph], models=[model], tools=tools, runner=runner)
    temporal = TemporalRunner(client, task_queue=queue)
    async with worker(client, **common):
        run = await temporal.start(graph, AgentContext("please charge"))
        with anyio.fail_after(30):
            state = await run.asked(poll=0.05)
    assert state.question.name == "charge" and state.step == 2
    assert state.context.history.last().tool_calls[0].name == "charge"
    # A new worker, with no cached workflow and caching off: every task replays the history.
    async with worker(client, max_cached_workflows=0, **common):
        again = temporal.get(graph, run.run_id)  # as another process would find the run
        assert (await again.state()).question == state.question
        await again.answer(True)
        out = await again.result()
    assert out.input == "done"
    assert len(lines(tmp_path / "charge.log")) == 1
    assert [line.split()[0] for line in lines(tmp_path / "model.log")] == ["0", "1"]
    # The sink saw each step once, though the new worker replayed the steps before.
    assert sorted(seen) == sorted(set(seen)) and max(seen) == 5


async def test_cancelling_a_run_raises_graph_cancelled_with_the_last_context(client, queue):
    @node(name="first")
    async def first(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx.append(Message.user("first done"))

    @node(name="ask")
    async def ask(ctx, rt):
        await rt.interrupt("anyone?")
        return ctx

    with GraphBuilder[str, str]("cancel") as g:
        g.start.edge_to(first).edge_to(ask).edge_to(g.finish)
    graph = g.build()
    async with worker(client, task_queue=queue, graphs=[graph]):
        run = await TemporalRunner(client, task_queue=queue).start(graph, AgentContext("go"))
        with anyio.fail_after(30):
            await run.asked(poll=0.05)
        await run.cancel()
        with pytest.raises(GraphCancelled) as caught:
            await run.result()
    assert caught.value.step == 1
    assert caught.value.context.history.last().content == "first done"


async def test_a_run_error_keeps_its_kind_and_context(client, queue):
    graph = counter(50)
    runner = GraphRunner(max_steps=5)
    async with worker(client, task_queue=queue, graphs=[graph], runner=runner):
        with pytest.raises(StepLimitExceeded) as caught:
            await TemporalRunner(client, task_queue=queue).run(graph, AgentContext(0))
    assert caught.value.context.input == 5


async def test_effects_of_unregistered_objects_fail_the_run_clearly(client, queue):
    model = ScriptedModel("hi", repeat=True)

    @node(name="ask_model")
    async def ask_model(ctx, rt):
        response = await rt.call_model(model, ChatRequest(messages=(Message.user("hi"),)))
        return ctx.with_input(response.message.content)

    with GraphBuilder[str, str]("unregistered") as g:
        g.start.edge_to(ask_model).edge_to(g.finish)
    graph = g.build()
    async with worker(client, task_queue=queue, graphs=[graph]):
        with pytest.raises(RunFailed, match="not registered with the worker") as caught:
            await TemporalRunner(client, task_queue=queue).run(graph, AgentContext("x"))
    assert caught.value.kind == "NodeFailed"
    assert caught.value.context.input == "x"


async def test_a_graph_the_worker_does_not_run_is_refused(client, queue):
    async with worker(client, task_queue=queue, graphs=[counter(2)]):
        with pytest.raises(UsageError, match="no graph named 'other'"):
            await TemporalRunner(client, task_queue=queue).run(counter(2, "other"), AgentContext(0))


async def test_once_embeddings_and_streams_are_activities(client, queue):
    calls: list[str] = []

    def lookup(key: str) -> str:
        calls.append(key)
        return key.upper()

    class Embedder:
        dimensions = 2

        async def embed(self, texts):
            calls.append("embed")
            return [[float(len(t)), 1.0] for t in texts]

    model = ScriptedModel("streamed answer", repeat=True)
    embedder = Embedder()

    @node(name="effects")
    async def effects(ctx, rt):
        value = await rt.once("lookup", lookup, "key")
        vectors = await rt.embed(embedder, ["abc"])
        request = ChatRequest(messages=(Message.user("hi"),))
        text = ""
        async with rt.stream_model(model, request) as events:
            async for event in events:
                text += getattr(event, "text", "")
        return ctx.with_input(f"{value} {vectors[0][0]} {text}")

    with GraphBuilder[str, str]("effects") as g:
        g.start.edge_to(effects).edge_to(g.finish)
    graph = g.build()
    options = dict(models=[model], embedders=[embedder], functions=[lookup])
    async with worker(client, task_queue=queue, graphs=[graph], **options):
        out = await TemporalRunner(client, task_queue=queue).run(graph, AgentContext("x"))
    assert out.input == "KEY 3.0 streamed answer"
    assert calls == ["key", "embed"]


async def test_payloads_over_temporals_limit_go_to_blob_storage(client, queue):
    big = "x" * 3_000_000  # over Temporal's 2 MB payload limit
    graph = counter(2)
    ctx = AgentContext(0).append(Message.user(big))
    with pytest.raises(RPCError):  # the limit is real: without the codec the start is refused
        await TemporalRunner(client, task_queue=queue).start(graph, ctx)
    blobs = MemoryStore()
    async with worker(client, task_queue=queue, graphs=[graph], blobs=blobs):
        out = await TemporalRunner(client, task_queue=queue, blobs=blobs).run(graph, ctx)
    assert out.input == 2 and next(iter(out.history)).content == big
    assert len(blobs._blobs) >= 2  # the input and the result, each by its digest


async def test_a_long_run_continues_as_new_and_carries_its_context(client, queue):
    graph = counter(16, effects=True)  # each step's activity adds events to the history
    options = dict(graphs=[graph], functions=[echo], history_events=20)
    async with worker(client, task_queue=queue, **options):
        run = await TemporalRunner(client, task_queue=queue).start(graph, AgentContext(0))
        out = await run.result()
    assert out.input == 16
    assert [m.content for m in out.history] == [f"tick {i}" for i in range(16)]
    first = client.get_workflow_handle(run.run_id, run_id=run.workflow.first_execution_run_id)
    events = [e async for e in first.fetch_history_events()]
    assert events[-1].HasField("workflow_execution_continued_as_new_event_attributes")
    assert len(events) <= 30


async def test_recorded_histories_replay_without_nondeterminism(client, queue, tmp_path):
    graph, model, tools = agent(tmp_path, approve=["charge"])
    loop = counter(12, effects=True)
    common = dict(graphs=[graph, loop], models=[model], tools=tools, functions=[echo])
    ids = []
    async with worker(client, task_queue=queue, history_events=20, **common):
        temporal = TemporalRunner(client, task_queue=queue)
        run = await temporal.start(graph, AgentContext("please charge"))
        with anyio.fail_after(30):
            await run.asked(poll=0.05)
        await run.answer(False)
        await run.result()
        looped = await temporal.start(loop, AgentContext(0))
        await looped.result()
        ids = [run.run_id, looped.run_id]
    check = replayer(**common)
    for workflow_id in ids:
        history = await client.get_workflow_handle(workflow_id).fetch_history()
        await check.replay_workflow(history)
    # A changed graph is caught: the same history against a graph that calls no tool.
    changed = replayer(graphs=[counter(12, "agent"), loop], functions=[echo])
    history = await client.get_workflow_handle(ids[0]).fetch_history()
    with pytest.raises(NondeterminismError):
        await changed.replay_workflow(history)


async def test_waiting_for_a_question_from_a_run_that_never_asks_is_refused(client, queue):
    graph = counter(1)
    async with worker(client, task_queue=queue, graphs=[graph]):
        run = await TemporalRunner(client, task_queue=queue).start(graph, AgentContext(0))
        await run.result()
        with anyio.fail_after(30), pytest.raises(UsageError, match="closed without asking"):
            await run.asked(poll=0.01)


@pytest.mark.parametrize(
    ("failure", "requests"),
    [
        # The provider client already spent its own retries: Temporal does not add more.
        (ServerError("overloaded", provider="p", status=503, retryable=True), 1),
        # Anything else (here, a bug that may be a lost connection) gets the policy's attempts.
        (RuntimeError("flaky"), 2),
    ],
)
async def test_temporal_retries_what_the_provider_client_did_not(client, queue, failure, requests):
    model = ScriptedModel(failure, repeat=True)

    @node(name="ask_model")
    async def ask_model(ctx, rt):
        await rt.call_model(model, ChatRequest(messages=(Message.user("hi"),)))
        return ctx

    with GraphBuilder[str, str]("retries") as g:
        g.start.edge_to(ask_model).edge_to(g.finish)
    graph = g.build()
    policy = ActivityPolicy(attempts=2, initial=0.05)
    async with worker(client, task_queue=queue, graphs=[graph], models=[model], policy=policy):
        with pytest.raises(RunFailed, match=type(failure).__name__) as caught:
            await TemporalRunner(client, task_queue=queue).run(graph, AgentContext("x"))
    assert caught.value.kind == "NodeFailed"
    assert len(model.requests) == requests


async def test_a_run_past_its_timeout_raises_graph_timeout_with_the_last_context(client, queue):
    @node(name="first")
    async def first(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx.append(Message.user("first done"))

    @node(name="slow")
    async def slow(ctx: AgentContext[str]) -> AgentContext[str]:
        await anyio.sleep(3600)  # a durable timer, cut short by the run's deadline
        return ctx

    with GraphBuilder[str, str]("slow") as g:
        g.start.edge_to(first).edge_to(slow).edge_to(g.finish)
    graph = g.build()
    runner = GraphRunner(timeout=0.5)
    async with worker(client, task_queue=queue, graphs=[graph], runner=runner):
        with pytest.raises(GraphTimeout) as caught:
            await TemporalRunner(client, task_queue=queue).run(graph, AgentContext("go"))
    assert caught.value.step == 1 and caught.value.timeout == 0.5
    assert caught.value.context.history.last().content == "first done"


@tool
def shout(n: int) -> str:
    """A result far longer than the tool node lets the model read."""
    return "x" * n


def bounded_graph():
    model = ScriptedModel(ScriptedModel.tool_call("shout", call_id="c0", n=5_000))
    with GraphBuilder[str, object]("bounded") as g:
        asks = chat(model, name="asks")
        g.start.edge_to(asks).edge_to(tool_use([shout], max_result_chars=1_000)).edge_to(g.finish)
    return g.build(), model


async def test_a_tool_nodes_result_bound_holds_in_the_activity_too(client, queue):
    graph, model = bounded_graph()
    ctx = AgentContext("shout")
    async with worker(client, task_queue=queue, graphs=[graph], models=[model], tools=[shout]):
        out = await TemporalRunner(client, task_queue=queue).run(graph, ctx)
    local = await GraphRunner().run(bounded_graph()[0], ctx)
    (result,) = [m for m in out.history if m.role == "tool"]
    assert 1_000 <= len(result.content) < 1_500
    assert "of this result's 5,000 characters" in result.content
    assert out == local
