"""`agentgraph.tools.effect_id`: each tool call of a journaled run names itself, stably."""

import pytest

from agentgraph import AgentContext, GraphBuilder, GraphRunner, Runtime, ToolCall, node, tool
from agentgraph.checkpoint import MemoryStore
from agentgraph.tools import effect_id, execute_calls
from tests.checkpoint.support import Crash

pytestmark = pytest.mark.anyio


def recorder(seen, crash=None):
    @tool
    async def note(text: str) -> str:
        """Note something."""
        seen.append((text, effect_id()))
        return "ok"

    @tool
    def sync_note(text: str) -> str:
        """Note something, from a worker thread."""
        seen.append((text, effect_id()))
        return "ok"

    @node
    async def calls(ctx: AgentContext[list], rt: Runtime) -> AgentContext[list]:
        batch = [ToolCall(i, name, {"text": t}) for i, name, t in ctx.input]
        await rt.call_tools([note, sync_note], batch)
        if crash:
            crash.pop()
            raise Crash("after the tools")
        return ctx

    with GraphBuilder[list, list]("notes") as g:
        g.start.edge_to(calls).edge_to(g.finish)
    return g.build()


BATCH = [("c1", "note", "a"), ("c2", "sync_note", "b"), ("c3", "note", "c")]


class LosesResults(MemoryStore):
    """Tool results never reach the record, as when a crash beats the journal's write."""

    def write(self, records):
        super().write([r for r in records if getattr(r, "kind", None) != "result"])


async def test_each_call_of_a_batch_sees_its_own_id_and_a_resume_the_same_ones():
    seen, store = [], LosesResults()
    with pytest.raises(Crash):
        await GraphRunner().run(
            recorder(seen, crash=[True]), AgentContext(BATCH), store=store, run_id="r"
        )
    first = dict(seen)
    assert len(set(first.values())) == 3
    assert all(e.startswith("r/") and "tool" in e for e in first.values())
    assert "c2" in first["b"] and "sync_note" in first["b"]
    seen.clear()
    # The results were lost: the resumed step makes the calls again, under the same ids.
    await GraphRunner().resume(recorder(seen), "r", store)
    assert dict(seen) == first


async def test_no_id_outside_a_journaled_run_or_for_an_ambiguous_call():
    seen = []
    await GraphRunner().run(recorder(seen), AgentContext(BATCH))
    assert {e for _, e in seen} == {None}
    seen.clear()
    twice = [("c1", "note", "a"), ("c1", "note", "b"), ("c2", "note", "c")]
    await GraphRunner().run(recorder(seen), AgentContext(twice), store=MemoryStore())
    ids = dict(seen)
    assert ids["a"] is None and ids["b"] is None and ids["c"] is not None
    assert effect_id() is None


async def test_an_id_does_not_leak_past_its_call():
    after = []

    @tool
    async def probe() -> str:
        """Probe."""
        return str(effect_id())

    [message] = await execute_calls([probe], [ToolCall("c1", "probe", {})])
    after.append(effect_id())
    assert message.content == "None" and after == [None]
