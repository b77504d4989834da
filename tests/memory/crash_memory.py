"""A run that writes memory and is killed right after the write, before its journal hears of it.

`python -m tests.memory.crash_memory RUNS_DB MEMORY_DB [--resume] [--kill]`: the
graph reads a visit count from memory, writes it back one higher, and goes on;
with `--kill` the process SIGKILLs itself the moment the memory store has
committed the write, so the checkpoint store never records it. It prints the
count the step worked out and the version of the item it wrote.
"""

from agentgraph import AgentContext, GraphBuilder, Runtime, node
from tests.memory.crash import crash_run

USER = ("user", "42")
RUN_ID = "visit"


def build(memory):
    @node
    async def visit(ctx: AgentContext[int], rt: Runtime) -> AgentContext[tuple[int, int]]:
        mem = rt.memory(memory)
        seen = await mem.get(USER, "visits")
        count = 0 if seen is None else seen.value["n"]
        item = await mem.put(USER, "visits", {"n": count + 1})
        return ctx.with_input((count + 1, item.version))

    @node
    async def done(ctx: AgentContext[tuple[int, int]]) -> AgentContext[tuple[int, int]]:
        return ctx

    with GraphBuilder[int, tuple[int, int]]("visits") as g:
        g.start.edge_to(visit).edge_to(done).edge_to(g.finish)
    return g.build()


if __name__ == "__main__":
    out = crash_run(build, AgentContext(0), RUN_ID)
    visit, version = out.input
    print("visit", visit, "version", version, flush=True)
