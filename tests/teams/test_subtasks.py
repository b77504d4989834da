"""Sub-tasks (`returns=True` handoffs): the caller waits, and only the answer goes back.

A peer that hands the conversation to an agent waiting for its sub-task is
answered with an error naming the waiting agents, and the sub-task's answer
still goes back to them; the caller's open call is found by position, not by
an id another model may have used too; returns are not counted as handoffs.
"""

import pytest

from agentgraph import AgentContext, GraphRunner, tool
from agentgraph.teams import (
    Agent,
    HandedOff,
    Handoff,
    HandoffLoop,
    conversation_problem,
    supervisor,
    swarm,
)
from agentgraph.testing import ScriptedModel

pytestmark = pytest.mark.anyio
call = ScriptedModel.tool_call


@tool
def work(step: int) -> str:
    """Do some work."""
    return f"did {step}"


def talks(model):
    """The conversations a scripted model was sent, system prompts left out."""
    return [[m for m in r.messages if m.role != "system"] for r in model.requests]


async def test_a_peer_handing_to_an_agent_that_waits_for_it_is_told_to_answer():
    a = ScriptedModel(call("transfer_to_b", task="look"), "a is done.")
    b = ScriptedModel(call("work", step=1), call("transfer_to_a"), "b found it.")
    team = swarm(
        [
            Agent("a", a, handoffs=[Handoff("b", returns=True)]),
            Agent("b", b, tools=[work], handoffs=["a"]),
        ]
    )
    events = []
    out = await GraphRunner(sinks=[events.append]).run(team, AgentContext("start"))
    assert out.input == "a is done."
    refused = b.requests[2].messages[-1]
    assert refused.is_error and refused.tool_call_id == b.requests[2].messages[-2].tool_calls[0].id
    assert "a waits for the answer of a sub-task (waiting: a)" in refused.content
    back = talks(a)[1]
    assert back[-1].role == "tool" and back[-1].content == "b found it."
    assert all(conversation_problem(talk) is None for m in (a, b) for talk in talks(m))
    moved = [(e.source, e.target, e.history) for e in events if isinstance(e, HandedOff)]
    assert moved == [("a", "b", "full"), ("b", "a", "return")]
    assert out.state["team"]["stack"] == []


async def test_a_waiting_agent_deeper_in_the_stack_is_refused_too():
    a = ScriptedModel(call("transfer_to_b"), "a answers.")
    b = ScriptedModel(call("transfer_to_c"), "b answers.")
    c = ScriptedModel(call("transfer_to_a"), "c answers.")
    team = swarm(
        [
            Agent("a", a, handoffs=[Handoff("b", returns=True)]),
            Agent("b", b, handoffs=[Handoff("c", returns=True)]),
            Agent("c", c, handoffs=["a"]),
        ]
    )
    out = await GraphRunner().run(team, AgentContext("start"))
    assert out.input == "a answers."
    assert "(waiting: b, then a)" in talks(c)[1][-1].content
    assert talks(b)[1][-1].content == "c answers."
    assert talks(a)[1][-1].content == "b answers."


async def test_the_caller_s_call_is_kept_open_even_when_another_model_used_its_id():
    # Scripted models number their calls from call_1 each, as providers may: the
    # first agent's handoff and the boss's sub-task call share an id.
    first = ScriptedModel(call("work", step=1), call("transfer_to_boss"))
    boss = ScriptedModel(call("work", step=2), call("transfer_to_math", task="2+2"), "It is 4.")
    team = swarm(
        [
            Agent("first", first, tools=[work], handoffs=["boss"]),
            Agent("boss", boss, tools=[work], handoffs=[Handoff("math", returns=True)]),
            Agent("math", ScriptedModel("4")),
        ]
    )
    out = await GraphRunner().run(team, AgentContext("what is 2+2?"))
    assert out.input == "It is 4."
    back = talks(boss)[2]
    assert conversation_problem(back) is None
    assert [m.content for m in back if m.role == "tool"] == [
        "did 1",
        "Transferred to boss.",
        "did 2",
        "4",
    ]


async def test_returns_do_not_count_against_max_handoffs():
    asks = [call("transfer_to_math", task=f"{n}+{n}") for n in range(3)]
    boss = ScriptedModel(*asks, "Done.")
    team = supervisor(
        Agent("boss", boss), [Agent("math", ScriptedModel("x", repeat=True))], max_handoffs=3
    )
    out = await GraphRunner().run(team, AgentContext("add"))
    assert out.input == "Done."
    assert out.state["team"]["handoffs"] == 3
    assert out.state["team"]["chain"] == ["boss", "math"] * 3 + ["boss"]


async def test_the_fourth_sub_task_past_a_limit_of_three_is_a_loop():
    asks = [call("transfer_to_math", task=f"{n}+{n}") for n in range(4)]
    team = supervisor(
        Agent("boss", ScriptedModel(*asks)),
        [Agent("math", ScriptedModel("x", repeat=True))],
        max_handoffs=3,
    )
    with pytest.raises(HandoffLoop, match="more than 3 times") as info:
        await GraphRunner().run(team, AgentContext("add"))
    assert info.value.chain == ("boss", "math") * 4
