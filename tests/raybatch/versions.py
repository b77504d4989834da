"""Two versions of one graph for a batch: v2 renames the node the v1 runs stopped before.

`work` fails while the file named by `AGENTGRAPH_TEST_ARMED` exists, so a
run started on v1 stops after `prepare`, to be resumed by a batch later.
"""

import os

from agentgraph import AgentContext, GraphBuilder, node


@node
async def prepare(ctx: AgentContext[int]) -> AgentContext[int]:
    return ctx.with_input(ctx.input + 1)


@node
async def work(ctx: AgentContext[int]) -> AgentContext[str]:
    armed = os.environ.get("AGENTGRAPH_TEST_ARMED", "")
    if armed and os.path.exists(armed):
        raise RuntimeError("stopped before the deploy")
    return ctx.with_input(f"v1 {ctx.input}")


@node
async def work_v2(ctx: AgentContext[int]) -> AgentContext[str]:
    return ctx.with_input(f"v2 {ctx.input}")


with GraphBuilder[int, str]("batch-flow", version=1) as g:
    g.start.edge_to(prepare).edge_to(work).edge_to(g.finish)
V1 = g.build()

with GraphBuilder[int, str]("batch-flow", version=2) as g:
    g.start.edge_to(prepare).edge_to(work_v2.with_name("work2")).edge_to(g.finish)
V2 = g.build()
