"""A graph served over A2A by a process the restart tests SIGKILL mid-run.

As a script (`python -m tests.agent2agent.restart_server DB DIR`) it serves
`gated(DIR)` with an SQLite store in file DB on a loopback port, printing its
URL; its lease lapses 0.5 s after the process dies. The test imports `gated`
to serve the same graph from a second server over the same file.

`gated(DIR)`: `note` (appends a line to DIR/notes.txt) -> `gate` (creates
DIR/entered, then waits until DIR/open exists).
"""

import sys
from pathlib import Path

import anyio
import uvicorn

from agentgraph import AgentContext, node
from agentgraph._util._serving import bind
from agentgraph.a2a import a2a_app
from agentgraph.checkpoint import SQLiteStore

from .serving import graph_of


def gated(where: Path):
    @node
    async def note(ctx: AgentContext[str]) -> AgentContext[str]:
        with (where / "notes.txt").open("a") as f:
            f.write(ctx.input + "\n")
        return ctx.with_input(f"noted {ctx.input}")

    @node
    async def gate(ctx: AgentContext[str]) -> AgentContext[str]:
        (where / "entered").touch()
        while not (where / "open").exists():
            await anyio.sleep(0.01)
        return ctx.with_input(f"{ctx.input}, through the gate")

    return graph_of(note, gate, name="gated")


async def main(db: str, where: str) -> None:
    sock = bind("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    async with SQLiteStore(db, lease_term=0.5) as store:
        app = a2a_app(gated(Path(where)), url=url, store=store)
        config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on")
        server = uvicorn.Server(config)
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            while not server.started:
                await anyio.sleep(0.01)
            print(url, flush=True)


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:3], backend="asyncio")
