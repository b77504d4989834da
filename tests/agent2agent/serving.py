"""Graphs to serve over A2A, and a loopback uvicorn server on the test's own event loop.

The A2A SDK's server runs on asyncio only, so these tests do too; the
server shares the test's loop, and so its checkpoint store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import uvicorn

from agentgraph import AgentContext, GraphBuilder, Runtime, node
from agentgraph._util._serving import bind
from agentgraph.llm import ToolCall

SECRET = "sk-ant-api03-" + "A" * 40


@node
async def asks(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
    """Asks which colour, then answers with the input and the colour."""
    colour = await rt.interrupt(f"which colour for {ctx.input}?")
    return ctx.with_input(f"{ctx.input} in {colour}")


@node
async def approves(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
    """Asks to approve a tool call, then says how it was answered."""
    ok = await rt.interrupt(ToolCall("c1", "delete", {"path": "/tmp/x"}))
    return ctx.with_input(f"approved={ok!r}")


@node
async def echo(ctx: AgentContext[str]) -> AgentContext[str]:
    return ctx.with_input(f"echo: {ctx.input}")


@node
async def leaks(ctx: AgentContext[str]) -> AgentContext[str]:
    raise ValueError(f"the key is {SECRET}")


@node
async def waits(ctx: AgentContext[str]) -> AgentContext[str]:
    await anyio.sleep_forever()
    return ctx


def graph_of(*steps: Any, name: str = "paint") -> Any:
    with GraphBuilder[str, str](name) as g:
        last = g.start
        for step in steps:
            last = last.edge_to(step)
        last.edge_to(g.finish)
    return g.build()


@asynccontextmanager
async def served(make: Callable[[str], Any]) -> AsyncIterator[str]:
    """Serve the app `make(url)` builds on a loopback port; yields its base URL."""
    sock = bind("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = make(url)
    config = uvicorn.Config(
        app, log_config=None, access_log=False, lifespan="on", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        while not server.started:
            await anyio.sleep(0.01)
        try:
            yield url
        finally:
            server.should_exit = True
