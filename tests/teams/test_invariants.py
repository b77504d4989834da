"""Invariants over randomized team conversations, and the real wire formats accepting them.

Whatever the agents do (own tools, handoffs, answers, in any order, under any
history policy): no request carries an orphan tool call, result or reasoning;
every agent is offered exactly its own tools and only they run; a `none`
handoff starts the receiver on the task alone; usage is the sum of every
model call's.
"""

import runpy
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgraph import AgentContext, GraphRunner, ModelResponded, ToolFinished, Usage, tool
from agentgraph.llm import Message
from agentgraph.teams import Agent, HandedOff, Handoff, HandoffLoop, conversation_problem, swarm
from agentgraph.testing import ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("a", "b", "c")


def own_tool(name):
    @tool(name=f"work_{name}")
    def work(step: int) -> str:
        """Do some work."""
        return f"{name} did {step}"

    return work


class Director:
    """Plays every agent from one list of moves: tool, handoff to a peer, or answer."""

    def __init__(self, moves):
        self.moves = list(moves)
        self.requests = []  # (agent, request)

    def model(self, name):
        def reply(request):
            self.requests.append((name, request))
            move = self.moves.pop(0) if self.moves else ("answer", 0)
            if request.tool_choice == "none" or move[0] == "answer":
                return f"{name} answers"
            if move[0] == "tool":
                return ScriptedModel.tool_call(f"work_{name}", step=move[1])
            peers = [p for p in NAMES if p != name]
            return ScriptedModel.tool_call(
                f"transfer_to_{peers[move[1] % 2]}", task=f"task {move[1]}"
            )

        return ScriptedModel(reply, repeat=True, name=name)


MOVES = st.lists(
    st.tuples(st.sampled_from(["tool", "handoff", "answer"]), st.integers(0, 3)), max_size=14
)
POLICIES = st.sampled_from(["full", "none", "summary", "keep_task"])


def keep_task(view):
    return [Message.user(view.task or "go on")]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moves=MOVES, policies=st.lists(POLICIES, min_size=6, max_size=6), returns=st.booleans())
def test_randomized_teams_keep_the_invariants(moves, policies, returns):
    director = Director(moves)
    policy_of = {}
    agents = []
    for i, name in enumerate(NAMES):
        peers = [p for p in NAMES if p != name]
        handoffs = []
        for j, peer in enumerate(peers):
            chosen = policies[2 * i + j]
            policy_of[(name, peer)] = chosen
            history = keep_task if chosen == "keep_task" else chosen
            handoffs.append(Handoff(peer, history=history, returns=returns and name == "a"))
        agents.append(
            Agent(
                name,
                director.model(name),
                tools=[own_tool(name)],
                system_prompt=f"You are {name}.",
                handoffs=handoffs,
                max_turns=3,
            )
        )
    team = swarm(agents, max_handoffs=6)
    events = []

    async def run():
        return await GraphRunner(sinks=[events.append], max_steps=400).run(
            team, AgentContext("start")
        )

    try:
        out = anyio.run(run)
    except HandoffLoop as loop:  # a legal end: the team's own cap, with the chain
        assert len(loop.chain) == 8
        out = None
    for name, request in director.requests:
        talk = [m for m in request.messages if m.role != "system"]
        assert conversation_problem(talk) is None, (name, talk)
        offered = {t.name for t in request.tools}
        assert f"work_{name}" in offered
        assert all(t == f"work_{name}" or t.startswith("transfer_to_") for t in offered)
        assert not any(t == f"transfer_to_{name}" for t in offered)
    for event in events:
        if isinstance(event, ToolFinished) and event.call.name.startswith("work_"):
            runner = event.path[-1].removesuffix("_tools")
            assert event.call.name == f"work_{runner}" or event.result.is_error
    handed = [e for e in events if isinstance(e, HandedOff) and e.history == "none"]
    for event in handed:
        firsts = [r for n, r in director.requests if n == event.target]
        assert any(
            [m for m in r.messages if m.role != "system"] == [Message.user(event.task)]
            for r in firsts
        )
    if out is not None:
        spent = sum((e.response.usage for e in events if isinstance(e, ModelResponded)), Usage())
        assert out.usage == spent


@pytest.mark.parametrize("example", ["swarm", "supervisor"])
def test_the_examples_run(example, capsys):
    found = runpy.run_path(str(ROOT / "examples" / f"{example}.py"))
    answer = anyio.run(found["main"])
    assert answer in capsys.readouterr().out
