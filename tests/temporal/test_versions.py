"""`rt.patched` inside a Temporal workflow is `workflow.patched`: its marker is in the history."""

import pytest

from agentgraph import AgentContext, GraphBuilder, node
from agentgraph.temporal import TemporalRunner, worker

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]


@node
async def branch(ctx: AgentContext[str], rt) -> AgentContext[str]:
    return ctx.with_input("new" if rt.patched("shorter") else "old")


with GraphBuilder[str, str]("patched-flow", version=2, patches={"shorter"}) as g:
    g.start.edge_to(branch).edge_to(g.finish)
PATCHED = g.build()


async def test_rt_patched_is_workflow_patched(client, queue):
    async with worker(client, task_queue=queue, graphs=[PATCHED]):
        run = await TemporalRunner(client, task_queue=queue).start(PATCHED, AgentContext("x"))
        out = await run.result()
    assert out.input == "new"
    history = await run.workflow.fetch_history()
    markers = [e for e in history.events if e.HasField("marker_recorded_event_attributes")]
    assert [m.marker_recorded_event_attributes.marker_name for m in markers] == ["core_patch"]
