"""Handoff by router: `swarm(..., route=fn)` hands an answer on to the agent `fn` names.

The routed answer is withdrawn from the conversation (no agent reads a trailing
answer) and becomes the handoff's task; the receiving agent reads the
conversation before it by the history policy; bad choices are `HandoffError`s.
"""

import pytest

from agentgraph import AgentContext, GraphRunner, Message, NodeFailed, UsageError, tool
from agentgraph.teams import (
    Agent,
    HandedOff,
    Handoff,
    HandoffError,
    HandoffLoop,
    conversation_problem,
    swarm,
    team_state,
)
from agentgraph.testing import ScriptedModel
from tests.teams.test_spans import agents, spans_of

pytestmark = pytest.mark.anyio
call = ScriptedModel.tool_call


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: paid"


def to_billing(ctx):
    """Hands on what the front desk says is about billing."""
    if team_state(ctx)["agent"] == "desk" and "billing" in ctx.input.content:
        return "billing"
    return None


def desk_and_billing(desk, billing, *, policy=None, route=to_billing, **team):
    handoffs = [Handoff("billing", history=policy)] if policy is not None else []
    return swarm(
        [
            Agent("desk", desk, tools=[lookup], system_prompt="Front desk.", handoffs=handoffs),
            Agent("billing", billing, system_prompt="Billing."),
        ],
        route=route,
        **team,
    )


async def test_a_routed_answer_is_withdrawn_and_becomes_the_task():
    desk = ScriptedModel(call("lookup", order="7"), "A billing question about order 7.")
    billing = ScriptedModel("Order 7 is refunded.")
    events = []
    team = desk_and_billing(desk, billing)
    out = await GraphRunner(sinks=[events.append]).run(team, AgentContext("refund order 7"))
    assert out.input == "Order 7 is refunded."
    sent = billing.requests[0].messages
    assert sent[0] == Message.system("Billing.")
    assert [m.role for m in sent[1:]] == ["user", "assistant", "tool"]  # ends on the result
    assert conversation_problem(sent[1:]) is None
    assert [t.name for t in billing.requests[0].tools] == []
    (handed,) = [e for e in events if isinstance(e, HandedOff)]
    assert (handed.source, handed.target, handed.history) == ("desk", "billing", "full")
    assert handed.task == "A billing question about order 7."
    state = out.state["team"]
    assert (state["chain"], state["handoffs"], state["stack"]) == (["desk", "billing"], 1, [])
    assert out.usage.requests == 3  # the withdrawn answer's call counts


async def test_the_none_policy_gives_the_routed_answer_as_the_task():
    desk = ScriptedModel("A billing question: refund order 7.")
    billing = ScriptedModel("Done.")
    team = desk_and_billing(desk, billing, history="none")
    await GraphRunner().run(team, AgentContext("hi"))
    assert billing.requests[0].messages[1:] == (
        Message.user("A billing question: refund order 7."),
    )


async def test_the_source_s_handoff_policy_wins_over_the_team_s():
    seen = []

    def recap(view):
        seen.append(view)
        return [Message.user(f"{view.source} says: {view.task}")]

    desk = ScriptedModel("Send this to billing.")
    billing = ScriptedModel("Done.")
    await GraphRunner().run(desk_and_billing(desk, billing, policy=recap), AgentContext("hi"))
    assert billing.requests[0].messages[1:] == (Message.user("desk says: Send this to billing."),)
    assert [m.role for m in seen[0].history] == ["user"]  # the answer is not in the view


async def test_an_answer_the_router_lets_stand_ends_the_run():
    asked = []

    def watch(ctx):
        asked.append((team_state(ctx)["agent"], ctx.input.content))
        return to_billing(ctx)

    desk = ScriptedModel("Opening hours are 9 to 5.")
    billing = ScriptedModel()
    out = await GraphRunner().run(desk_and_billing(desk, billing, route=watch), AgentContext("hi"))
    assert out.input == "Opening hours are 9 to 5."
    assert out.history[-1] == Message.assistant("Opening hours are 9 to 5.", usage=out.usage)
    assert asked == [("desk", "Opening hours are 9 to 5.")]
    assert not billing.requests


async def test_an_answer_in_a_sub_task_can_be_routed_and_the_last_answer_goes_back():
    boss = ScriptedModel(call("transfer_to_desk", task="check order 7"), "Order 7 is paid.")
    desk = ScriptedModel("A billing question.")
    billing = ScriptedModel("It is paid.")
    team = swarm(
        [
            Agent("boss", boss, handoffs=[Handoff("desk", returns=True)]),
            Agent("desk", desk),
            Agent("billing", billing),
        ],
        route=to_billing,
        history="none",
    )
    out = await GraphRunner().run(team, AgentContext("is order 7 paid?"))
    assert out.input == "Order 7 is paid."
    assert billing.requests[0].messages == (Message.user("A billing question."),)
    back = boss.requests[1].messages
    assert back[-1].role == "tool" and back[-1].content == "It is paid."
    assert out.state["team"]["chain"] == ["boss", "desk", "billing", "boss"]


@pytest.mark.parametrize(
    ("choice", "problem"),
    [
        ("nobody", "the team has no agent 'nobody' \\(its agents: desk, billing\\)"),
        ("desk", "'desk' may not hand to itself"),
        (3, "the router returned a int, not an agent's name or None"),
    ],
)
async def test_a_bad_choice_is_a_handoff_error_with_the_context(choice, problem):
    desk = ScriptedModel("Something.")
    team = desk_and_billing(desk, ScriptedModel(), route=lambda ctx: choice)
    with pytest.raises(HandoffError, match=problem) as info:
        await GraphRunner().run(team, AgentContext("hi"))
    assert info.value.source == "desk"
    assert info.value.context.input.content == "Something."


async def test_routing_to_an_agent_waiting_for_a_sub_task_names_the_stack():
    boss = ScriptedModel(call("transfer_to_desk"))
    team = swarm(
        [
            Agent("boss", boss, handoffs=[Handoff("desk", returns=True)]),
            Agent("desk", desk := ScriptedModel("x")),
        ],
        route=lambda ctx: "boss" if team_state(ctx)["agent"] == "desk" else None,
    )
    with pytest.raises(HandoffError, match=r"'boss' waits for .* \(waiting: boss\)") as info:
        await GraphRunner().run(team, AgentContext("hi"))
    assert (info.value.source, info.value.target) == ("desk", "boss")
    assert len(desk.requests) == 1


async def test_a_router_that_raises_fails_its_step_with_the_cause():
    def broken(ctx):
        raise LookupError("no table")

    team = desk_and_billing(ScriptedModel("x"), ScriptedModel(), route=broken)
    with pytest.raises(NodeFailed, match="route") as info:
        await GraphRunner().run(team, AgentContext("hi"))
    assert isinstance(info.value.__cause__, LookupError)


def test_a_router_must_be_a_plain_function():
    async def later(ctx):
        return None

    for bad in (later, "billing"):
        with pytest.raises(UsageError, match="route= takes a plain function"):
            desk_and_billing(ScriptedModel(), ScriptedModel(), route=bad)


async def test_a_router_that_always_hands_on_ends_in_a_handoff_loop():
    def other(ctx):
        return "pong" if team_state(ctx)["agent"] == "ping" else "ping"

    team = swarm(
        [
            Agent("ping", ScriptedModel("ping", repeat=True)),
            Agent("pong", ScriptedModel("pong", repeat=True)),
        ],
        route=other,
        max_handoffs=3,
    )
    with pytest.raises(HandoffLoop, match="ping -> pong -> ping -> pong -> ping"):
        await GraphRunner().run(team, AgentContext("go"))


async def test_the_route_step_is_part_of_the_answering_agent_s_turn():
    desk = ScriptedModel("A billing question.")
    team = desk_and_billing(desk, ScriptedModel("Done."))
    spans = await spans_of(team, "hi")
    turns = agents(spans)
    assert [s.name for s in turns] == ["invoke_agent desk", "invoke_agent billing"]
    by_id = {s.context.span_id: s for s in spans}
    routes = sorted((s for s in spans if s.name == "route"), key=lambda s: s.start_time)
    assert [by_id[s.parent.span_id].name for s in routes] == [s.name for s in turns]
