"""A small MCP server for the tests, on the official SDK's `MCPServer`.

Run as a script it serves over stdio (`python server.py`) or streamable HTTP on
a loopback port (`python server.py http PORT`); `build()` gives the same server
for in-process use. A last argument `bookings` serves `bookings()` instead.
"""

from __future__ import annotations

import os
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel


def build(seen: list[str] | None = None) -> MCPServer:
    """The test server; `seen` (in process only) records each call that reached a tool."""
    server = MCPServer("test-tools", log_level="WARNING")
    record = seen if seen is not None else []

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        record.append("add")
        return a + b

    @server.tool()
    def echo(text: str) -> str:
        """Say the text back."""
        return text

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool()
    def fail(message: str) -> str:
        """Always fails with the message."""
        raise ToolError(message)

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep, then answer."""
        record.append("slow")
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            record.append("slow cancelled")
            raise
        return "done"

    @server.tool()
    def crash() -> str:
        """End the server process at once, mid-call."""
        os._exit(3)

    @server.tool()
    def delete_everything() -> str:
        """A tool no test allows."""
        raise AssertionError("a tool outside the allowlist was called")

    return server


class Booking(BaseModel):
    name: str


def bookings() -> MCPServer:
    """`book` asks who books with `elicitation/create` (handshake era), once `together` calls
    are in (so that each question comes while they all are in flight)."""
    server = MCPServer("bookings", log_level="WARNING")
    arrived: list[int] = []
    changed = anyio.Event()

    @server.tool()
    async def book(table: int, ctx: Context, together: int = 2) -> str:
        """Book a table; asks who books it."""
        nonlocal changed
        arrived.append(table)
        changed.set()
        changed = anyio.Event()
        while len(arrived) < together:
            await changed.wait()
        reply = await ctx.elicit(f"Who books table {table}?", Booking)
        if reply.action != "accept":
            return f"not booked: {reply.action}"
        return f"booked for {reply.data.name}"

    return server


if __name__ == "__main__":
    made = bookings() if sys.argv[-1] == "bookings" else build()
    if sys.argv[1:2] == ["http"]:
        made.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        made.run("stdio")
