"""An agent whose `remember` call is killed right after the memory store committed it.

`python -m tests.memory.crash_tools RUNS_DB MEMORY_DB [--resume] [--kill]`: a
scripted model asks to remember two facts and a forget; with `--kill` the
process SIGKILLs itself the moment the memory store has committed the first
`remember`, before the checkpoint store records the call's result. Resumed,
the run makes the calls again; each store write carries the call's effect id.
"""

import argparse
import os
import signal
import time

import anyio

from agentgraph import AgentContext, GraphRunner, RunBusy, ToolCall
from agentgraph.checkpoint import SQLiteStore
from agentgraph.memory import SQLiteMemory, memory_tools
from agentgraph.memory._tools import fact_key
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel

RUN_ID = "remember"
FACTS = ("Alice is vegetarian.", "Alice loves spicy food.")


class KillAfterPut(SQLiteMemory):
    """Dies, as a process does, right after a put committed."""

    async def put_many(self, *args, **kwargs):
        items = await super().put_many(*args, **kwargs)
        print("written", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        return items


def reply(request):
    """The script, by how many tool results the conversation holds (a resume asks afresh)."""
    answered = sum(1 for m in request.messages if m.role == "tool")
    if answered == 0:
        return ScriptedModel.tool_calls(
            ToolCall("c1", "remember", {"fact": FACTS[0]}),
            ToolCall("c2", "forget", {"key": fact_key("Alice eats meat.")}),
        )
    if answered == 2:
        return ScriptedModel.tool_calls(ToolCall("c3", "remember", {"fact": FACTS[1]}))
    return "Noted."


def agent(memory):
    model = ScriptedModel(reply, repeat=True)
    tools = memory_tools(memory, lambda ctx: ("user", ctx.state["user_id"]))
    return react_agent(model, tools)


async def main(args):
    memory = (KillAfterPut if args.kill else SQLiteMemory)(args.memory)
    graph = agent(memory)
    async with SQLiteStore(args.runs, lease_term=0.3) as store:
        runner = GraphRunner()
        if args.resume:
            while True:  # the killed runner's lease lapses soon
                try:
                    out = await runner.resume(graph, RUN_ID, store)
                    break
                except RunBusy as busy:
                    await anyio.sleep(max(0.01, busy.expires - time.time()))
        else:
            ctx = AgentContext("Remember these", state={"user_id": "alice"})
            out = await runner.run(graph, ctx, store=store, run_id=RUN_ID)
    memory.close()
    for message in out.history:
        if message.role == "tool":
            print("tool", message.content, flush=True)
    print("answer", out.input, flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("runs")
    parser.add_argument("memory")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--kill", action="store_true")
    anyio.run(main, parser.parse_args())
