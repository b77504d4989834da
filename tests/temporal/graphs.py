"""Graphs for the Temporal tests, built alike by the test process and by worker processes.

The model and the tools write what they do to files in a folder (`model.log`:
one line per model request, with its turn; `bump.log` and `charge.log`: one
line per tool execution), so a test can count executions across processes.
A tool holds (sleeps) while the file `hold` exists, so that a test can kill
its worker mid-call.
"""

import os
from pathlib import Path

import anyio

from agentgraph import GraphBuilder, Message, node, tool
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel


def agent_parts(folder: Path):
    """The model and the two tools: `bump` (retry-safe) and `charge` (not retry-safe)."""

    def reply(request):
        turn = sum(1 for m in request.messages if m.role == "assistant")
        with (folder / "model.log").open("a") as f:
            f.write(f"{turn} {os.getpid()}\n")
        if turn == 0:
            question = request.messages[-1].content or ""
            name = "charge" if "charge" in question else "bump"
            return ScriptedModel.tool_call(name, call_id="c0", n=7)
        return "done"

    async def execute(log: str, n: int) -> str:
        with (folder / log).open("a") as f:
            f.write(f"{n} {os.getpid()}\n")
        print(f"tool {n}", flush=True)
        while (folder / "hold").exists():
            await anyio.sleep(0.05)
        return f"{log.split('.')[0]} {n} ok"

    @tool
    async def bump(n: int) -> str:
        """Count one call (safe to repeat)."""
        return await execute("bump.log", n)

    @tool(retry_safe=False)
    async def charge(n: int) -> str:
        """Charge once (never repeat)."""
        return await execute("charge.log", n)

    return ScriptedModel(reply, repeat=True), [bump, charge]


def agent(folder: Path, *, approve=()):
    model, tools = agent_parts(folder)
    return react_agent(model, tools, name="agent", approve=approve), model, tools


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def echo(value):
    """A function for `rt.once`: each call is an activity, which lengthens the history."""
    return value


def counter(steps: int, name: str = "counter", *, effects: bool = False):
    """A loop of `steps` steps, each appending its number to the history (after an
    activity, with `effects`)."""

    @node(name="tick")
    async def tick(ctx, rt):
        n = await rt.once("echo", echo, ctx.input) if effects else ctx.input
        return ctx.append(Message.user(f"tick {n}")).with_input(n + 1)

    with GraphBuilder[int, int](name) as g:
        g.start.edge_to(tick)
        tick.edge_to(lambda ctx: tick if ctx.input < steps else g.finish, targets=(tick, g.finish))
    return g.build()
