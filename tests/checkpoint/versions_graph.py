"""Two versions of one graph, and a worker that starts runs on v1 and waits to be killed.

v1: `prepare` (state `owner`: one name) -> `review` (asks) -> finish.
v2: `review` is renamed `approve`, and state `owner` became `owners` (a list).
"""

import argparse
import sys
from collections import Counter

import anyio

from agentgraph import AgentContext, GraphBuilder, GraphRunner, GraphVersions, Interrupted, node
from tests.checkpoint.crash_graph import open_store

MIGRATIONS: Counter[str] = Counter()
"""Calls of the v2 migration, by run input."""


def v1():
    @node
    async def prepare(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx.evolve(state={"owner": f"ann{ctx.input}"})

    @node
    async def review(ctx: AgentContext[int], rt) -> AgentContext[str]:
        answer = await rt.interrupt("approve?")
        return ctx.with_input(f"v1 {answer} {ctx.state['owner']}")

    with GraphBuilder[int, str]("review-flow", version=1) as g:
        g.start.edge_to(prepare).edge_to(review).edge_to(g.finish)
    return g.build()


def to_owners(ctx: AgentContext[int]) -> AgentContext[int]:
    MIGRATIONS[str(ctx.input)] += 1
    return ctx.evolve(state={"owners": [ctx.state["owner"]]})


def v2(*, migrate: bool = False):
    @node
    async def prepare(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx.evolve(state={"owners": [f"ann{ctx.input}"]})

    @node
    async def approve(ctx: AgentContext[int], rt) -> AgentContext[str]:
        answer = await rt.interrupt("approve?")
        return ctx.with_input(f"v2 {answer} {','.join(ctx.state['owners'])}")

    more = {"migrations": {2: to_owners}, "renamed": {"review": "approve"}} if migrate else {}
    with GraphBuilder[int, str]("review-flow", version=2, **more) as g:
        g.start.edge_to(prepare).edge_to(approve).edge_to(g.finish)
    return g.build()


def v2_migrating():
    """v2 with the migration of `owner` to `owners` and the rename declared."""
    return v2(migrate=True)


KEEPING_V1 = GraphVersions(v1(), v2_migrating(), policy="pinned")
"""A registry that still runs v1: its runs resume there, nothing to migrate."""

V2_ONLY = GraphVersions(v2_migrating(), policy="pinned")
"""A registry without v1: its runs would be stranded, so they are migrated."""


async def main(args: argparse.Namespace) -> None:
    graph = v1() if args.version == 1 else v2(migrate=True)
    async with open_store(args.db, schema=args.schema) as store:
        for i in range(args.runs):
            try:
                await GraphRunner().run(
                    graph, AgentContext(i), store=store, run_id=f"{args.prefix}{i}"
                )
            except Interrupted:
                continue
            raise SystemExit(f"run {i} finished without asking")
        print("waiting", flush=True)
        await anyio.sleep(600)  # until the test kills the process


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("prefix")
    parser.add_argument("runs", type=int)
    parser.add_argument("--version", type=int, default=1)
    parser.add_argument("--schema", default=None)
    anyio.run(main, parser.parse_args())
    sys.exit(0)
