"""Handoffs: history policies, own tools only, returning sub-tasks, and the bad input."""

import pytest

from agentgraph import (
    AgentContext,
    GraphDefinitionError,
    GraphRunner,
    Message,
    StepLimitExceeded,
    tool,
)
from agentgraph.teams import (
    Agent,
    HandedOff,
    Handoff,
    HandoffError,
    HandoffLoop,
    Summary,
    conversation_problem,
    supervisor,
    swarm,
)
from agentgraph.testing import ScriptedModel

pytestmark = pytest.mark.anyio

transfer = ScriptedModel.tool_call


@tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


def pair(policy, *, first=None, second=None):
    first = first or ScriptedModel(
        transfer("lookup", order="7"), transfer("transfer_to_billing", task="refund order 7")
    )
    second = second or ScriptedModel("Refunded order 7.")
    team = swarm(
        [
            Agent(
                "triage",
                first,
                tools=[lookup],
                system_prompt="You triage.",
                handoffs=[Handoff("billing", history=policy)],
            ),
            Agent("billing", second, tools=[refund], system_prompt="You refund."),
        ]
    )
    return team, first, second


async def test_full_history_reaches_the_target_with_its_own_prompt_and_tools():
    team, first, second = pair("full")
    events = []
    out = await GraphRunner(sinks=[events.append]).run(team, AgentContext("refund order 7"))
    assert out.input == "Refunded order 7."
    request = second.requests[0]
    assert request.messages[0] == Message.system("You refund.")
    assert [t.name for t in request.tools] == ["refund"]
    assert [m.role for m in request.messages[1:]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert request.messages[-1].content == "Transferred to billing."
    assert [t.name for t in first.requests[0].tools] == ["lookup", "transfer_to_billing"]
    handed = [e for e in events if isinstance(e, HandedOff)]
    assert [(e.source, e.target, e.history, e.task) for e in handed] == [
        ("triage", "billing", "full", "refund order 7")
    ]
    assert out.usage.requests == 3


async def test_none_gives_the_target_only_the_task():
    team, _, second = pair("none")
    await GraphRunner().run(team, AgentContext("refund order 7"))
    assert second.requests[0].messages[1:] == (Message.user("refund order 7"),)


async def test_none_without_a_task_gives_the_user_s_message():
    first = ScriptedModel(transfer("transfer_to_billing"))
    team, _, second = pair("none", first=first)
    await GraphRunner().run(team, AgentContext("refund order 7"))
    assert second.requests[0].messages[1:] == (Message.user("refund order 7"),)


async def test_none_without_a_task_after_a_handoff_with_one_gives_the_user_s_message():
    # The first handoff's task is in the history billing reads; a second handoff
    # without a task still gives the next agent what the user said.
    first = ScriptedModel(transfer("transfer_to_billing", task="check order 7"))
    second = ScriptedModel(transfer("transfer_to_refunds"))
    third = ScriptedModel("Refunded order 7.")
    team = swarm(
        [
            Agent("triage", first, handoffs=[Handoff("billing", history="none")]),
            Agent("billing", second, handoffs=[Handoff("refunds", history="none")]),
            Agent("refunds", third),
        ]
    )
    out = await GraphRunner().run(team, AgentContext("refund order 7"))
    assert out.input == "Refunded order 7."
    assert second.requests[0].messages == (Message.user("check order 7"),)
    assert third.requests[0].messages == (Message.user("refund order 7"),)


async def test_summary_replaces_earlier_turns_and_its_usage_counts():
    first = ScriptedModel(transfer("transfer_to_billing", task="refund"))
    writer = ScriptedModel("The user asked about order 7 before.")
    team, _, second = pair(Summary(model=writer), first=first)
    before = AgentContext("refund it").append(
        Message.user("where is order 7?"), Message.assistant("It shipped.")
    )
    out = await GraphRunner().run(team, before)
    sent = second.requests[0].messages
    assert sent[1].role == "system" and "order 7 before" in sent[1].content
    assert [m.role for m in sent[2:]] == ["user", "assistant", "tool"]
    assert out.usage.requests == 3  # triage, the summary, billing


async def test_a_history_function_sees_the_view_and_decides():
    seen = []

    def only_task(view):
        seen.append(view)
        return [Message.user(f"{view.source} asks: {view.task}")]

    team, _, second = pair(only_task)
    await GraphRunner().run(team, AgentContext("refund order 7"))
    assert seen[0].source == "triage" and seen[0].target == "billing"
    assert second.requests[0].messages[1:] == (Message.user("triage asks: refund order 7"),)


@pytest.mark.parametrize(
    ("policy", "problem"),
    [
        (lambda view: view.history[:-1], "have no results"),
        (lambda view: [Message.tool("x", "?")], "no open call made"),
        (lambda view: ["hello"], "not a Message"),
        (lambda view: "hello", "not a list of messages"),
        (lambda view: [], "empty"),
        (lambda view: [Message.user("a"), Message.assistant("b")], "ends with an assistant"),
        (
            lambda view: [Message.user("a"), Message.assistant(reasoning="hmm"), Message.user("b")],
            "reasoning without",
        ),
        (lambda view: 1 / 0, "ZeroDivisionError"),
    ],
)
async def test_a_malformed_history_is_a_handoff_error_with_the_context(policy, problem):
    team, _, second = pair(policy)
    with pytest.raises(HandoffError, match=problem) as info:
        await GraphRunner().run(team, AgentContext("refund order 7"))
    error = info.value
    assert (error.source, error.target) == ("triage", "billing")
    assert error.path == ("swarm", "handoff")
    assert error.context.history[-1].content == "Transferred to billing."
    assert not second.requests


async def test_a_foreign_tool_call_is_refused_listing_the_agent_s_own():
    second = ScriptedModel(transfer("lookup", order="7"), "ok")
    team, _, second = pair("full", second=second)
    out = await GraphRunner().run(team, AgentContext("refund order 7"))
    refused = out.history[-2]
    assert refused.is_error and '"refund"' in refused.content and "lookup" in refused.content


async def test_a_handoff_to_a_name_outside_the_team_is_refused_to_the_model():
    first = ScriptedModel(transfer("transfer_to_nobody"), "I will answer myself.")
    team, _, _ = pair("full", first=first)
    out = await GraphRunner().run(team, AgentContext("hi"))
    assert out.input == "I will answer myself."
    assert out.history[2].is_error and "transfer_to_billing" in out.history[2].content


def test_a_team_that_names_an_agent_it_lacks_does_not_build():
    with pytest.raises(GraphDefinitionError, match="'ghost', which is not in the team"):
        swarm([Agent("a", ScriptedModel("x"), handoffs=["ghost"])])
    with pytest.raises(GraphDefinitionError, match="start agent 'b'"):
        swarm([Agent("a", ScriptedModel("x"))], start="b")


def test_an_agent_named_like_a_node_of_the_team_is_refused_by_name():
    model = ScriptedModel("x")
    with pytest.raises(GraphDefinitionError, match="agent 'handoff' would make a node named"):
        swarm([Agent("handoff", model), Agent("b", model)])
    with pytest.raises(GraphDefinitionError, match="'a_tools', as agent 'a' does"):
        swarm([Agent("a", model), Agent("a_tools", model)])
    with pytest.raises(GraphDefinitionError, match="'route', as the team does"):
        swarm([Agent("route", model), Agent("b", model)], route=lambda ctx: None)
    assert swarm([Agent("route", model), Agent("b", model)]).name == "swarm"  # no router


async def test_two_handoffs_in_one_turn_the_first_wins_and_both_are_answered():
    first = ScriptedModel(
        ScriptedModel.tool_calls(("transfer_to_billing", {}), ("transfer_to_triage2", {}))
    )
    team = swarm(
        [
            Agent("triage", first, handoffs=["billing", "triage2"]),
            Agent("billing", ScriptedModel("billed")),
            Agent("triage2", ScriptedModel("never")),
        ]
    )
    out = await GraphRunner().run(team, AgentContext("x"))
    assert out.input == "billed"
    results = [m for m in out.history if m.role == "tool"]
    assert [m.is_error for m in results] == [False, True]
    assert conversation_problem(out.history[:-1]) is None


def ping_pong(max_handoffs):
    """Two agents that hand the conversation to each other, never answering."""
    ping = ScriptedModel(transfer("transfer_to_pong"), repeat=True)
    pong = ScriptedModel(transfer("transfer_to_ping"), repeat=True)
    return swarm(
        [Agent("ping", ping, handoffs=["pong"]), Agent("pong", pong, handoffs=["ping"])],
        max_handoffs=max_handoffs,
    )


async def test_a_loop_of_handoffs_is_named_in_the_error():
    team = ping_pong(max_handoffs=3)
    with pytest.raises(HandoffLoop, match="ping -> pong -> ping -> pong -> ping") as info:
        await GraphRunner().run(team, AgentContext("go"))
    assert isinstance(info.value, StepLimitExceeded)
    assert info.value.chain == ("ping", "pong", "ping", "pong", "ping")
    assert info.value.context.state["team"]["agent"] == "pong"


async def test_without_a_team_limit_the_run_s_step_cap_stops_the_loop():
    team = ping_pong(max_handoffs=10_000)
    with pytest.raises(StepLimitExceeded) as info:
        await GraphRunner(max_steps=40).run(team, AgentContext("go"))
    assert len(info.value.context.state["team"]["chain"]) > 5


async def test_a_returning_handoff_answers_the_caller_s_call():
    boss = ScriptedModel(transfer("transfer_to_math", task="2+2"), "It is 4.")
    math = ScriptedModel("4")
    team = supervisor(Agent("boss", boss, system_prompt="Delegate."), [Agent("math", math)])
    events = []
    out = await GraphRunner(sinks=[events.append]).run(team, AgentContext("what is 2+2?"))
    assert out.input == "It is 4."
    assert math.requests[0].messages == (Message.user("2+2"),)
    back = boss.requests[1].messages
    assert back[0] == Message.system("Delegate.")
    assert back[-1].role == "tool" and back[-1].content == "4"
    assert back[-1].tool_call_id == back[-2].tool_calls[0].id
    handed = [(e.source, e.target, e.history) for e in events if isinstance(e, HandedOff)]
    assert handed == [("boss", "math", "none"), ("math", "boss", "return")]
    assert out.usage.requests == 3
