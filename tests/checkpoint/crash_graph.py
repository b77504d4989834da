"""A deterministic agent for the kill-and-resume trials.

As a script (`python -m tests.checkpoint.crash_graph DB COUNTER PAUSE`) it runs the
graph with an SQLite store under run id `trial`, printing each finished step's index,
so that the test can SIGKILL it at a chosen step. The test imports `build` to resume
the run and to compute the uninterrupted result.

Shape: `job` = setup -> turn (loops while the model calls tools) -> wrap, where `turn`
= think (a model call) -> tools (tool_use with the `bump` tool) -> note, and `note`
= tally -> check. Every step appends to the history.
"""

import sys
from pathlib import Path

import anyio

from agentgraph import AgentContext, GraphBuilder, GraphRunner, Message, node, tool
from agentgraph.checkpoint import SQLiteStore
from agentgraph.nodes import chat, tool_use
from agentgraph.testing import ScriptedModel

TURNS = 10
RUN_ID = "trial"


def reply(request):
    """The model: one `bump` call per turn (ids and arguments fixed by the turn), then an answer."""
    turn = sum(1 for m in request.messages if m.role == "assistant")
    if turn < TURNS:
        return ScriptedModel.tool_call("bump", call_id=f"c{turn}", n=turn)
    return "all bumped"


def build(counter: Path, pause: float = 0.0):
    """The graph; `bump` appends each execution to `counter`; each step sleeps `pause`."""

    @tool
    def bump(n: int) -> str:
        """Count one execution of call `n`."""
        with counter.open("a") as f:
            f.write(f"{n}\n")
        return f"bumped {n}"

    def appender(name):
        @node(name=name)
        async def step(ctx):
            await anyio.sleep(pause)
            return ctx.append(Message.user(f"{name} {len(ctx.history)}"))

        return step

    with GraphBuilder("note") as g:
        g.start.edge_to(appender("tally")).edge_to(appender("check")).edge_to(g.finish)
    note = g.build()

    think = chat(ScriptedModel(*[reply] * (TURNS + 2)), name="think")
    tools = tool_use([bump])
    with GraphBuilder("turn") as t:
        t.start.edge_to(think)
        think.edge_to(
            lambda ctx: tools if ctx.input.tool_calls else t.finish, targets=(tools, t.finish)
        )
        tools.edge_to(note).edge_to(t.finish)
    turn = t.build()

    wrap = appender("wrap")
    with GraphBuilder("job") as g:
        g.start.edge_to(appender("setup")).edge_to(turn)
        turn.edge_to(lambda ctx: turn if ctx.input.tool_calls else wrap, targets=(turn, wrap))
        wrap.edge_to(g.finish)
    return g.build()


def start() -> AgentContext[str]:
    return AgentContext("go")


async def main(db: str, counter: str, pause: float) -> None:
    def report(step, node, ctx):
        print(step.index, flush=True)

    async with SQLiteStore(db) as store:
        graph = build(Path(counter), pause)
        await GraphRunner(on_step=report).run(graph, start(), store=store, run_id=RUN_ID)
    print("done", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], float(sys.argv[3]))
