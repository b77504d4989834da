"""The graphs `benchmarks/server.py` serves: one async node that answers, and one that asks."""

from agentgraph import AgentContext, GraphBuilder, Runtime, node
from agentgraph.llm import Message


@node(name="answer")
async def _answer(ctx: AgentContext[str]) -> AgentContext[str]:
    return ctx.append(Message.user(ctx.input), Message.assistant(f"ok: {ctx.input}"))


@node(name="ask")
async def _ask(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
    told = await rt.interrupt("continue?")
    return ctx.append(Message.assistant(str(told)))


with GraphBuilder[str, str]("agent") as _g:
    _g.start.edge_to(_answer).edge_to(_g.finish)
agent = _g.build()

with GraphBuilder[str, str]("asks") as _h:
    _h.start.edge_to(_ask).edge_to(_h.finish)
asks = _h.build()
