"""A run that writes memory and is killed right after the write, before its journal hears of it.

`python -m tests.memory.crash_memory RUNS_DB MEMORY_DB [--resume] [--kill]`: the
graph reads a visit count from memory, writes it back one higher, and goes on;
with `--kill` the process SIGKILLs itself the moment the memory store has
committed the write, so the checkpoint store never records it.
"""

import argparse
import os
import signal
import time

import anyio

from agentgraph import AgentContext, GraphBuilder, GraphRunner, RunBusy, Runtime, node
from agentgraph.checkpoint import SQLiteStore
from agentgraph.memory import SQLiteMemory

USER = ("user", "42")
RUN_ID = "visit"


class KillAfterPut(SQLiteMemory):
    """Dies, as a process does, right after a put committed."""

    async def put_many(self, *args, **kwargs):
        items = await super().put_many(*args, **kwargs)
        print("written", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        return items


def build(memory):
    @node
    async def visit(ctx: AgentContext[int], rt: Runtime) -> AgentContext[int]:
        mem = rt.memory(memory)
        seen = await mem.get(USER, "visits")
        count = 0 if seen is None else seen.value["n"]
        item = await mem.put(USER, "visits", {"n": count + 1})
        return ctx.with_input(item.version)

    @node
    async def done(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx

    with GraphBuilder[int, int]("visits") as g:
        g.start.edge_to(visit).edge_to(done).edge_to(g.finish)
    return g.build()


async def main(args):
    memory = (KillAfterPut if args.kill else SQLiteMemory)(args.memory)
    async with SQLiteStore(args.runs, lease_term=0.3) as store:
        runner = GraphRunner()
        graph = build(memory)
        if args.resume:
            while True:  # the killed runner's lease lapses soon
                try:
                    out = await runner.resume(graph, RUN_ID, store)
                    break
                except RunBusy as busy:
                    await anyio.sleep(max(0.01, busy.expires - time.time()))
        else:
            out = await runner.run(graph, AgentContext(0), store=store, run_id=RUN_ID)
    memory.close()
    print("version", out.input, flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("runs")
    parser.add_argument("memory")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--kill", action="store_true")
    anyio.run(main, parser.parse_args())
