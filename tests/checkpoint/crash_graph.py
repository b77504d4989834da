"""A deterministic agent for the kill-and-resume trials.

As a script (`python -m tests.checkpoint.crash_graph DB COUNTER PAUSE [options]`) it
runs the graph with an SQLite store (or a Postgres one, when DB is a `postgresql://` URL
and `--schema` names the schema) under run id `trial` (or resumes it, `--resume`),
printing each finished step's index, so that the test can SIGKILL it at a chosen step;
a resume that finds the run leased prints `busy` and exits with status 3; with `--hold
FILE`, steps wait for FILE to exist. The test
imports `build` to resume the run and to compute the uninterrupted result.

Shape: `job` = setup -> turn (loops while the model calls tools) -> wrap, where `turn`
= think (a model call) -> tools (tool_use with the `bump` tool) -> note, and `note`
= tally -> check. Every step appends to the history.
"""

import argparse
import os
import sys
import time
from pathlib import Path

import anyio

from agentgraph import AgentContext, GraphBuilder, GraphRunner, Message, RunBusy, node, tool
from agentgraph.checkpoint import PostgresStore, SQLiteStore
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


def build(counter: Path, pause: float = 0.0, *, unsafe: bool = False):
    """The graph; `bump` appends each execution (and the process id) to `counter`.

    Each step sleeps `pause`. An `unsafe` bump is not retry-safe, announces itself
    on stdout (`tool N`) and takes a while, so that a kill can land while it runs.
    """

    @tool(retry_safe=not unsafe)
    async def bump(n: int) -> str:
        """Count one execution of call `n`."""
        with counter.open("a") as f:
            f.write(f"{n} {os.getpid()}\n")
        if unsafe:
            print(f"tool {n}", flush=True)
            await anyio.sleep(30)
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


def open_store(db: str, *, lease: float = 30.0, schema: str | None = None):
    """The trial's store: SQLite in file `db`, or Postgres at URL `db` in `schema`."""
    if db.startswith("postgresql://"):
        assert schema is not None, "a Postgres trial names its schema"
        return PostgresStore(db, schema=schema, lease_term=lease)
    return SQLiteStore(db, lease_term=lease)


async def main(args: argparse.Namespace) -> None:
    def report(step, node, ctx):
        if args.hold:  # the test lets this runner go on once the other resumer was refused
            until = time.monotonic() + 30
            while not os.path.exists(args.hold) and time.monotonic() < until:
                time.sleep(0.005)
        print(step.index, flush=True)

    async with open_store(args.db, lease=args.lease, schema=args.schema) as store:
        graph = build(Path(args.counter), args.pause, unsafe=args.unsafe)
        runner = GraphRunner(on_step=report)
        if args.start_at:  # several workers begin at one moment, whatever their start-up took
            await anyio.sleep(max(0.0, args.start_at - time.time()))
        if not args.resume:
            await runner.run(graph, start(), store=store, run_id=RUN_ID)
        else:
            try:
                await runner.resume(graph, RUN_ID, store)
            except RunBusy:
                print("busy", flush=True)
                sys.exit(3)
    print("done", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("counter")
    parser.add_argument("pause", type=float)
    parser.add_argument("--lease", type=float, default=30.0)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--unsafe", action="store_true")
    parser.add_argument("--start-at", type=float, default=0.0)
    parser.add_argument("--schema", default=None)
    parser.add_argument("--hold", default="", help="a file whose existence lets steps go on")
    anyio.run(main, parser.parse_args())
