"""Invariants over randomized team conversations, and the real wire formats accepting them.

Whatever the agents do (own tools, handoffs, answers a router hands on, in any
order, under any history policy, with sub-tasks or without): no request carries
an orphan tool call, result or reasoning; every agent is offered exactly its own
tools and only they run; a `none` handoff starts the receiver on the task alone;
usage is the sum of every model call's. The cases are derandomized, so a run is
the same everywhere; `AGENTGRAPH_TEAM_CASES` sets how many (`make test-long`
runs thousands).
"""

import os
import runpy
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentgraph import AgentContext, GraphRunner, ModelResponded, ToolFinished, Usage, tool
from agentgraph.llm import Message
from agentgraph.teams import (
    Agent,
    HandedOff,
    Handoff,
    HandoffLoop,
    conversation_problem,
    swarm,
    team_state,
)
from agentgraph.testing import ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("a", "b", "c")
CASES = int(os.environ.get("AGENTGRAPH_TEAM_CASES", "300"))


def own_tool(name):
    @tool(name=f"work_{name}")
    def work(step: int) -> str:
        """Do some work."""
        return f"{name} did {step}"

    return work


def peer(name, index):
    peers = [p for p in NAMES if p != name]
    return peers[index % 2]


class Director:
    """Plays every agent from one list of moves: tool, handoff to a peer, answer, or an
    answer that asks the router for a peer."""

    def __init__(self, moves):
        self.moves = list(moves)
        self.requests = []  # (agent, request)

    def model(self, name):
        def reply(request):
            self.requests.append((name, request))
            move = self.moves.pop(0) if self.moves else ("answer", 0)
            if move[0] == "route":
                return f"route to {peer(name, move[1])}"
            if request.tool_choice == "none" or move[0] == "answer":
                return f"{name} answers"
            if move[0] == "tool":
                return ScriptedModel.tool_call(f"work_{name}", step=move[1])
            return ScriptedModel.tool_call(
                f"transfer_to_{peer(name, move[1])}", task=f"task {move[1]}"
            )

        return ScriptedModel(reply, repeat=True, name=name)


MOVES = st.lists(
    st.tuples(st.sampled_from(["tool", "handoff", "answer", "route"]), st.integers(0, 3)),
    max_size=14,
)
POLICIES = st.sampled_from(["full", "none", "summary", "keep_task"])


def keep_task(view):
    return [Message.user(view.task or "go on")]


def router(ctx):
    """Hands on the answers that ask for it, unless their agent waits for a sub-task."""
    asked = ctx.input.content.removeprefix("route to ")
    waiting = [frame["agent"] for frame in team_state(ctx)["stack"]]
    return asked if asked in NAMES and asked not in waiting else None


FULL = ["full"] * 6


@settings(
    max_examples=CASES,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    moves=MOVES,
    policies=st.lists(POLICIES, min_size=6, max_size=6),
    returns=st.sets(st.sampled_from(NAMES)),  # the agents whose handoffs are sub-tasks
    routed=st.booleans(),
)
# a peer handing back to an agent whose sub-task it works on (once left an open call)
@example([("handoff", 0), ("tool", 0), ("handoff", 0), ("handoff", 0)], FULL, {"a"}, False)
# returns lengthened the chain past the handoffs counted against max_handoffs
@example([("handoff", 0)] * 5 + [("tool", 0)] * 4 + [("handoff", 0)], FULL, {"a"}, False)
# a router handing an answer on, to a peer and back
@example([("route", 0), ("tool", 1), ("route", 0), ("route", 1)], FULL, set(), True)
@example([("handoff", 0), ("route", 1), ("route", 0)], FULL, {"a"}, True)
def test_randomized_teams_keep_the_invariants(moves, policies, returns, routed):
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
            handoffs.append(Handoff(peer, history=history, returns=name in returns))
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
    team = swarm(agents, max_handoffs=6, route=router if routed else None)
    events = []

    async def run():
        return await GraphRunner(sinks=[events.append], max_steps=400).run(
            team, AgentContext("start")
        )

    try:
        out = anyio.run(run)
    except HandoffLoop as loop:  # a legal end: the team's own cap, with the chain
        made = [e for e in events if isinstance(e, HandedOff) and e.history != "return"]
        assert len(made) == loop.limit == 6
        assert list(loop.chain[:-1]) == loop.context.state["team"]["chain"]
        out = None
    for name, request in director.requests:
        talk = [m for m in request.messages if m.role != "system"]
        assert conversation_problem(talk) is None, (name, talk)
        offered = {t.name for t in request.tools}
        assert f"work_{name}" in offered
        assert all(t == f"work_{name}" or t.startswith("transfer_to_") for t in offered)
        assert not any(t == f"transfer_to_{name}" for t in offered)
    for name, request in director.requests:  # a routed answer is withdrawn, never read
        said = [m.content or "" for m in request.messages if m.role == "assistant"]
        assert not any(text.startswith("route to ") for text in said), (name, said)
    for event in events:
        if isinstance(event, ToolFinished) and event.call.name.startswith("work_"):
            runner = event.path[-1].removesuffix("_tools")
            assert event.call.name == f"work_{runner}" or event.result.is_error
    moved = [e for e in events if isinstance(e, HandedOff)]
    assert all(e.source != e.target for e in moved)  # no agent answers its own sub-task
    handed = [e for e in moved if e.history == "none"]
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
