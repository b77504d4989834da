"""Random team conversations on every wire's fake server, with the transcript check on.

Tool calls (one or two a turn), handoffs back and forth under every history
policy, and thinking on either side: no request the engine builds is
refused, by the check or by the fake (which refuses what the service does).
"""

from collections.abc import Iterator

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgraph import AgentContext, GraphRunner, Message, Settings, tool
from agentgraph.teams import Agent, Handoff, Summary, swarm
from agentgraph.testing import FakeServer, ScriptedModel
from tests.llm.test_transcript import WIRES, model

call = ScriptedModel.tool_call
AGENTS = ("triage", "billing")
POLICIES = ["full", "summary", "none"]


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


MOVES = st.lists(
    st.one_of(
        st.tuples(st.just("tools"), st.integers(1, 2)),
        st.tuples(st.just("handoff"), st.booleans()),  # with a task or without
    ),
    max_size=6,
)


def script(moves, wire: str, thinking: dict[str, bool]) -> list[Message | str]:
    """The fake's replies, in order, for `moves` made by whichever agent holds the turn."""
    holder, replies, handoffs = "triage", [], 0
    for kind, detail in moves:
        thought = "Let me see." if thinking[holder] else None
        if kind == "tools":
            count = 1 if wire == "gigachat" else detail
            calls = tuple(call("lookup", order=str(n)).tool_calls[0] for n in range(count))
            replies.append(Message.assistant(tool_calls=calls, reasoning=thought))
        elif handoffs < 3:
            handoffs += 1
            other = AGENTS[1 - AGENTS.index(holder)]
            task = {"task": "look into it"} if detail else {}
            made = call(f"transfer_to_{other}", **task).tool_calls
            replies.append(Message.assistant(tool_calls=made, reasoning=thought))
            holder = other
    replies.append(Message.assistant("All done.", reasoning="Done." if thinking[holder] else None))
    return replies


@pytest.mark.parametrize("wire", WIRES)
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    moves=MOVES,
    policies=st.tuples(st.sampled_from(POLICIES), st.sampled_from(POLICIES)),
    thinks=st.tuples(st.booleans(), st.booleans()),
)
def test_no_request_of_a_random_team_conversation_is_refused(wire, server, moves, policies, thinks):
    can_think = wire in ("anthropic", "responses")
    thinking = {name: can_think and on for name, on in zip(AGENTS, thinks, strict=True)}
    server.reset()
    server.add(*script(moves, wire, thinking))

    async def main() -> str:
        async with model(wire, server) as m:
            writer = ScriptedModel(*["The earlier turns, in short."] * 10)

            def policy(name: str):
                return Summary(model=writer) if name == "summary" else name

            team = swarm(
                [
                    Agent(
                        name,
                        m,
                        tools=[lookup],
                        handoffs=[Handoff(other, history=policy(kind))],
                        settings=Settings(think=True) if thinking[name] else None,
                    )
                    for name, other, kind in zip(AGENTS, reversed(AGENTS), policies, strict=True)
                ],
                max_handoffs=5,
            )
            before = AgentContext("refund order 7").append(
                Message.user("where is order 7?"), Message.assistant("It shipped.")
            )
            out = await GraphRunner().run(team, before)
            return out.input

    assert anyio.run(main) == "All done."
