"""Random conversations on a thread, on every wire's fake server, with the transcript check on.

Turns with tool calls, runs cancelled in the middle of a tool call (by their
handle or by a cancel scope around them), runs resumed from the checkpoint
store after such a cancel, and compaction under a small budget: no request
the engine builds from its own histories is refused, by the check or by the
fake (which refuses what the service does), and the thread's next turn after
a cancel is valid. `AGENTGRAPH_TRANSCRIPT_CASES` sets how many conversations a
wire gets (`make test-long` runs many more).
"""

import os
from collections.abc import Callable, Iterator

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgraph import AgentContext, GraphCancelled, GraphRunner, RunHandle, tool
from agentgraph.checkpoint import Compaction, MemoryStore, read_thread
from agentgraph.llm import Message, ToolCall, check_transcript
from agentgraph.nodes import react_agent
from agentgraph.testing import FakeServer, ScriptedModel

from .test_transcript import WIRES, model

CASES = int(os.environ.get("AGENTGRAPH_TRANSCRIPT_CASES", "4"))
KINDS = ("turn", "handle", "scope", "resume")
MOVES = st.lists(st.tuples(st.sampled_from(KINDS), st.integers(1, 3)), min_size=1, max_size=5)

ARMED: list[Callable[[], None]] = []
"""The cancel the next `stall` call makes, while it is running."""


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: rain, " * 10


@tool
async def stall(city: str) -> str:
    """Look a city up, slowly."""
    while ARMED:
        ARMED.pop()()
    await anyio.sleep(0.01)
    return f"{city}: sun"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def calls(wire: str, turn: int, count: int, last: str) -> Message:
    """`count` tool calls (one on GigaChat) with ids unique in the thread, `last` named last."""
    count = 1 if wire == "gigachat" else count
    names = ["lookup"] * (count - 1) + [last]
    made = tuple(ToolCall(f"c{turn}_{i}", n, {"city": f"c{i}"}) for i, n in enumerate(names))
    return Message.assistant(tool_calls=made)


async def conversation(wire: str, server: FakeServer, moves: list[tuple[str, int]]) -> None:
    store = MemoryStore()
    policy = Compaction(200, model=ScriptedModel("They talked about weather.", repeat=True))
    runner = GraphRunner()
    async with model(wire, server) as m:
        agent = react_agent(m, [lookup, stall], system_prompt="You are brief.")

        async def turn(n: int, **more: object) -> object:
            ctx = AgentContext(f"Weather, part {n}?")
            return await runner.run(
                agent, ctx, store=store, thread_id="t", compaction=policy, **more
            )

        for n, (kind, count) in enumerate(moves):
            server.reset()
            last = "lookup" if kind == "turn" else "stall"
            server.add(calls(wire, n, count, last), f"Answer {n}: " + "it rains. " * 12)
            if kind == "turn":
                await turn(n)
            elif kind == "scope":
                with anyio.CancelScope() as scope:
                    ARMED.append(scope.cancel)
                    await turn(n)
                assert scope.cancelled_caught
            else:
                handle = RunHandle()
                ARMED.append(handle.cancel)
                with pytest.raises(GraphCancelled):
                    await turn(n, handle=handle)
                if kind == "resume":
                    assert handle.run_id is not None
                    await runner.resume(agent, handle.run_id, store)
            assert not ARMED
        # The thread's next turn after whatever came last is taken.
        server.reset()
        server.add("All done.")
        out = await turn(len(moves))
        assert getattr(out, "input", None) == "All done."
        thread = await read_thread(store, "t")
        check_transcript(list(thread.messages), wire=wire)  # type: ignore[arg-type]


@pytest.mark.parametrize("wire", WIRES)
@settings(
    max_examples=CASES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(moves=MOVES)
def test_no_request_of_a_random_thread_is_refused(wire, server, moves):
    ARMED.clear()
    anyio.run(conversation, wire, server, moves)
