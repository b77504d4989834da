"""Tool results, model calls and `once` values are recorded and never redone on resume."""

from collections import Counter

import anyio
import pytest

from agentgraph import (
    AgentContext,
    GraphBuilder,
    GraphRunner,
    Message,
    ResumeError,
    RunHandle,
    node,
    parallel,
    tool,
)
from agentgraph.nodes import chat, tool_use
from agentgraph.testing import ScriptedModel
from tests.checkpoint.support import Crash, chain

pytestmark = pytest.mark.anyio


class Tools:
    """Tools that count their executions; `send` is not safe to run twice."""

    def __init__(self):
        self.runs = Counter()
        self.crash_in = None

        @tool
        def lookup(city: str) -> str:
            """Look a city up."""
            self.runs[f"lookup {city}"] += 1
            return f"{city}: sunny"

        @tool(retry_safe=False)
        async def send(to: str) -> str:
            """Send a message."""
            self.runs[f"send {to}"] += 1
            if self.crash_in == to:
                self.crash_in = None
                await anyio.sleep(0.05)  # the other calls finish meanwhile
                raise Crash(to)  # the process dies while the message is going out
            return f"sent to {to}"

        self.lookup, self.send = lookup, send


def crashing_once(name="after"):
    seen = Counter()

    @node(name=name)
    async def after(ctx):
        seen[name] += 1
        if seen[name] == 1:
            raise Crash(name)
        return ctx.append(Message.user("after"))

    return after, seen


def agent_graph(model, tools, after):
    think = chat(model, name="think", tools=[t.spec for t in tools])
    with GraphBuilder("agent") as g:
        g.start.edge_to(think).edge_to(tool_use(tools)).edge_to(after).edge_to(g.finish)
    return g.build()


async def test_committed_tool_results_and_model_calls_are_never_redone(store):
    tools = Tools()
    model = ScriptedModel(
        ScriptedModel.tool_calls(("lookup", {"city": "Oslo"}), ("lookup", {"city": "Rome"}))
    )
    after, seen = crashing_once()
    graph = agent_graph(model, [tools.lookup], after)
    handle = RunHandle()
    with pytest.raises(Crash):
        await GraphRunner().run(graph, AgentContext("weather?"), store=store, handle=handle)
    out = await GraphRunner().resume(graph, handle.run_id, store)
    assert tools.runs == Counter({"lookup Oslo": 1, "lookup Rome": 1})
    assert len(model.requests) == 1 and seen["after"] == 2
    assert [m.content for m in out.history[2:]] == ["Oslo: sunny", "Rome: sunny", "after"]
    assert out.history[0] == Message.user("weather?")  # chat sent the input as the first turn


async def test_a_longer_agent_resumes_without_calling_models_or_tools_again(store):
    tools = Tools()
    model = ScriptedModel(ScriptedModel.tool_calls(("lookup", {"city": "Oslo"})))
    send_after = ScriptedModel(ScriptedModel.tool_call("lookup", city="Rome"))
    first = chat(model, name="first", tools=[tools.lookup.spec])
    second = chat(send_after, name="second", tools=[tools.lookup.spec])
    crash = Counter()

    @node
    async def boom(ctx):
        crash["boom"] += 1
        if crash["boom"] == 1:
            raise Crash("boom")
        return ctx

    with GraphBuilder("g") as g:
        g.start.edge_to(first).edge_to(tool_use([tools.lookup], name="t1")).edge_to(second)
        second.edge_to(tool_use([tools.lookup], name="t2")).edge_to(boom).edge_to(g.finish)
    graph = g.build()
    handle = RunHandle()
    with pytest.raises(Crash):
        await GraphRunner().run(graph, AgentContext("go"), store=store, handle=handle)
    out = await GraphRunner().resume(graph, handle.run_id, store)
    assert tools.runs == Counter({"lookup Oslo": 1, "lookup Rome": 1})
    assert len(model.requests) == len(send_after.requests) == 1
    assert [m.content for m in out.history if m.role == "tool"] == ["Oslo: sunny", "Rome: sunny"]


async def test_an_unsafe_tool_in_flight_at_the_crash_stops_the_resume(store):
    tools = Tools()
    tools.crash_in = "bob"
    model = ScriptedModel(
        ScriptedModel.tool_calls(("lookup", {"city": "Oslo"}), ("send", {"to": "bob"}))
    )
    after, _ = crashing_once()
    graph = agent_graph(model, [tools.lookup, tools.send], after)
    handle = RunHandle()
    with pytest.raises(BaseExceptionGroup) as crashed:  # two calls ran in a task group
        await GraphRunner().run(graph, AgentContext("go"), store=store, handle=handle)
    assert crashed.group_contains(Crash)
    with pytest.raises(ResumeError) as info:
        await GraphRunner().resume(graph, handle.run_id, store)
    error = info.value
    assert 'send({"to":"bob"}) [id call_2]' in str(error)
    assert "not safe to retry were in flight" in str(error)
    assert error.path == ("agent", "tools") and error.step == 2
    assert error.context.input.tool_calls[1].name == "send"
    assert tools.runs["send bob"] == 1  # the resume did not send it again
    # Asked again, the resume still refuses: the intent stays without a result.
    with pytest.raises(ResumeError):
        await GraphRunner().resume(graph, handle.run_id, store)
    assert tools.runs["send bob"] == 1


async def test_a_safe_tool_in_flight_at_the_crash_runs_again(store):
    runs = Counter()
    crash = {"first": True}

    @tool
    async def fetch(url: str) -> str:
        """Fetch a page."""
        runs[url] += 1
        if crash["first"]:
            crash["first"] = False
            raise Crash(url)
        return "page"

    model = ScriptedModel(ScriptedModel.tool_call("fetch", url="a"))
    after, _ = crashing_once()
    graph = agent_graph(model, [fetch], after)
    handle = RunHandle()
    with pytest.raises(Crash):
        await GraphRunner().run(graph, AgentContext("go"), store=store, handle=handle)
    after_crash = Counter()

    @node(name="after")
    async def fine(ctx):
        after_crash["after"] += 1
        return ctx

    out = await GraphRunner().resume(agent_graph(model, [fetch], fine), handle.run_id, store)
    assert runs["a"] == 2 and out.history[-1].content == "page"


async def test_once_records_a_value_that_a_resumed_step_gets_back(store):
    calls = Counter()
    crashes = Counter()

    def roll(sides: int) -> int:
        calls["roll"] += 1
        return 4

    async def fetch() -> dict:
        calls["fetch"] += 1
        await anyio.sleep(0)
        return {"items": (1, 2)}

    @node
    async def step(ctx, rt):
        value = await rt.once("roll", roll, 6)
        data = await rt.once("fetch", fetch)
        crashes["step"] += 1
        if crashes["step"] == 1:
            raise Crash("after the work")
        return ctx.with_input((value, data))

    graph = chain("g", step)
    handle = RunHandle()
    with pytest.raises(Crash):
        await GraphRunner().run(graph, AgentContext(None), store=store, handle=handle)
    out = await GraphRunner().resume(graph, handle.run_id, store)
    assert out.input == (4, {"items": (1, 2)})
    assert calls == Counter({"roll": 1, "fetch": 1})
    # Without a store, once simply calls.
    assert (await GraphRunner().run(graph, AgentContext(None))).input == (4, {"items": (1, 2)})
    assert calls == Counter({"roll": 2, "fetch": 2})


async def test_effects_inside_a_fan_out_are_keyed_by_branch_not_by_start_order(store):
    calls = Counter()
    crashes = Counter()

    def branch(name):
        @node(name=name)
        async def work(ctx, rt):
            value = await rt.once("work", lambda: calls.update([name]) or name.upper())
            await anyio.sleep(0)
            return ctx.with_input(value)

        return work

    @node
    async def boom(ctx):
        crashes["boom"] += 1
        if crashes["boom"] == 1:
            raise Crash("boom")
        return ctx

    both = parallel(
        branch("x"),
        branch("y"),
        branch("z"),
        merge=lambda ctx, outs: ctx.with_input([o.input for o in outs]),
        name="fan",
    )
    graph = chain("g", chain("inner", both, boom))
    handle = RunHandle()
    with pytest.raises(Crash):
        await GraphRunner().run(graph, AgentContext(None), store=store, handle=handle)
    out = await GraphRunner().resume(graph, handle.run_id, store)
    assert out.input == ["X", "Y", "Z"]
    assert calls == Counter({"x": 1, "y": 1, "z": 1})
    keys = sorted(e.key for e in (await store.load(handle.run_id)).effects)
    assert keys == ["2.1/1.1.1:work", "2.1/2.1.1:work", "2.1/3.1.1:work"]


async def test_once_without_a_store_simply_calls():
    calls = Counter()

    @node
    async def ask(ctx, rt):
        calls["x"] += 1
        return ctx.with_input(await rt.once("x", lambda: 7))

    out = await GraphRunner().run(chain("g", ask), AgentContext(None))
    assert out.input == 7 and calls["x"] == 1
