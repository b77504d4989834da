"""The graphs the MCP server tests serve (`agentgraph mcp tests.mcp_server.graphs:plan`)."""

from __future__ import annotations

import attrs

from agentgraph import AgentContext, GraphBuilder, Runtime, node


@attrs.frozen
class Trip:
    city: str
    days: int = 1


@attrs.frozen
class Plan:
    city: str
    nights: int
    note: str


@node
def plan_trip(ctx: AgentContext[Trip]) -> AgentContext[Plan]:
    trip = ctx.input
    return ctx.with_input(Plan(trip.city, trip.days - 1, f"{trip.days} days in {trip.city}"))


with GraphBuilder[Trip, Plan]("plan") as g:
    g.start.edge_to(plan_trip).edge_to(g.finish)
plan = g.build()


@node
async def ask_name(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
    name = await rt.interrupt(f"What name goes on the {ctx.input} booking?")
    return ctx.with_input(f"booked {ctx.input} for {name}")


with GraphBuilder[str, str]("book") as g:
    g.start.edge_to(ask_name).edge_to(g.finish)
book = g.build()


@node
def leak(ctx: AgentContext[str]) -> AgentContext[str]:
    return ctx.with_input(f"key is sk-proj-{'a1' * 20}")


with GraphBuilder[str, str]("leaky") as g:
    g.start.edge_to(leak).edge_to(g.finish)
leaky = g.build()
