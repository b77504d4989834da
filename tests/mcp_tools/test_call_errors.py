"""Calls that go wrong on this side: odd argument names, tools outside the allowlist, bad `into=`."""

from __future__ import annotations

import pytest
from mcp.server.mcpserver import MCPServer

from agentgraph import ToolCall
from agentgraph.mcp import MCPTools
from agentgraph.tools import run_tool_calls

pytestmark = pytest.mark.anyio


async def test_a_tool_with_an_argument_named_self_is_called():
    server = MCPServer("odd")

    @server.tool()
    def bump(self: int) -> int:
        """Add one."""
        return self + 1

    async with MCPTools(server, allow=["bump"]) as tools:
        [outcome] = await run_tool_calls(tools.tools, [ToolCall("c", "bump", {"self": 2})])
        direct = await tools.call("bump", {"self": 5})
    assert outcome.ok and outcome.message.content == "3"
    assert direct == {"result": 6}
