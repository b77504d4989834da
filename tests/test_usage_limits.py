"""Usage limits on a run or a subgraph: checked before each model call and after it."""

import pytest

from agentgraph import (
    AgentContext,
    GraphBuilder,
    GraphRunner,
    Message,
    Price,
    UsageLimitExceeded,
    UsageLimits,
    tool,
)
from agentgraph.llm import ChatResponse, Usage
from agentgraph.nodes import chat, react_agent
from agentgraph.testing import ScriptedModel

pytestmark = pytest.mark.anyio


@tool
def echo(text: str) -> str:
    """Echo."""
    return text


def looping_model(tokens: int = 10) -> ScriptedModel:
    call = ScriptedModel.tool_call("echo", text="again")
    usage = Usage(input_tokens=tokens, output_tokens=tokens, requests=1)
    return ScriptedModel(ChatResponse(call, finish_reason="tool_calls", usage=usage), repeat=True)


async def test_a_request_limit_stops_the_run_before_the_next_call_with_its_context():
    model = looping_model()
    agent = react_agent(model, [echo], max_turns=50)
    runner = GraphRunner(usage_limits=UsageLimits(requests=3))
    with pytest.raises(UsageLimitExceeded, match="request limit of 3") as stopped:
        await runner.run(agent, AgentContext("go"))
    assert len(model.requests) == 3
    error = stopped.value
    assert error.path[-1] == "chat" and error.context.input.tool_calls
    assert error.context.usage.requests == 3


async def test_token_and_cost_limits_use_the_real_usage_and_the_price_table():
    model = looping_model(tokens=600)
    agent = react_agent(model, [echo], max_turns=50)
    with pytest.raises(UsageLimitExceeded, match="total tokens spent, the limit is 2000"):
        await GraphRunner(usage_limits=UsageLimits(total_tokens=2000)).run(
            agent, AgentContext("go")
        )
    prices = {"scripted": Price(input=1.0, output=2.0)}  # dollars per million tokens
    limits = UsageLimits(cost=0.005, prices=prices)  # each call costs 0.0018
    model = looping_model(tokens=600)
    with pytest.raises(UsageLimitExceeded, match=r"cost limit is 0\.005"):
        await GraphRunner(usage_limits=limits).run(react_agent(model, [echo]), AgentContext("go"))
    assert len(model.requests) == 3
    unpriced = UsageLimits(cost=1.0)
    with pytest.raises(UsageLimitExceeded, match="has no price"):
        await GraphRunner(usage_limits=unpriced).run(chat(ScriptedModel("hi")), AgentContext("x"))


async def test_a_subgraph_limit_applies_each_time_it_runs_and_is_never_routed():
    model = ScriptedModel("one", "two", "three", repeat=True)
    ask = chat(model)
    with GraphBuilder[str, Message]("ask", usage_limits=UsageLimits(requests=1)) as inner:
        inner.start.edge_to(ask).edge_to(inner.finish)
    once = inner.build()
    first, second = once.with_name("first"), once.with_name("second")

    @__import__("agentgraph").node
    def recover(ctx):
        return ctx.with_input(Message.assistant("recovered"))

    with GraphBuilder[str, Message]("outer") as g:
        g.start.edge_to(first).edge_to(second).edge_to(g.finish)
        second.on_error(recover).edge_to(g.finish)
    out = await GraphRunner().run(g.build(), AgentContext("hi"))
    assert out.input.content == "two"  # a fresh meter per run of the subgraph
    twice = ScriptedModel("a", "b", repeat=True)
    ask_twice = chat(twice)
    with GraphBuilder[str, Message]("twice", usage_limits=UsageLimits(requests=1)) as t:
        t.start.edge_to(ask_twice).edge_to(chat(twice, name="again")).edge_to(t.finish)
    capped = t.build()
    with GraphBuilder[str, Message]("outer2") as g2:
        g2.start.edge_to(capped).edge_to(g2.finish)
        capped.on_error(recover).edge_to(g2.finish)
    with pytest.raises(UsageLimitExceeded) as stopped:
        await GraphRunner().run(g2.build(), AgentContext("hi"))
    assert stopped.value.path == ("outer2", "twice", "again")
