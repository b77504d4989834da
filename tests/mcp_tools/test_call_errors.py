"""Calls that go wrong on this side: odd argument names, tools outside `allow`, a bad `into=`."""

from __future__ import annotations

import re

import pytest
from mcp.server.mcpserver import MCPServer

from agentgraph import ToolCall, UnsupportedType
from agentgraph.mcp import MCPToolError, MCPTools
from agentgraph.tools import run_tool_calls

from .server import build

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


async def test_call_refuses_a_tool_outside_the_allowlist_and_sends_nothing():
    seen: list[str] = []
    async with MCPTools(build(seen), allow=["add"]) as tools:
        with pytest.raises(MCPToolError, match="not in allow \\('add'\\)") as hidden:
            await tools.call("delete_everything", {})
        with pytest.raises(MCPToolError, match="not in allow"):
            await tools.call("no_such_tool", {})
        assert await tools.call("add", {"a": 1, "b": 2}) == {"result": 3}
    assert (hidden.value.server, hidden.value.tool) == ("test-tools", "delete_everything")
    assert seen == ["add"]


@pytest.mark.parametrize("into", [str | None, list[int], dict[str, str] | None])
async def test_a_result_that_does_not_fit_a_union_or_generic_is_a_typed_error(into):
    async with MCPTools(build(), allow=["add"]) as tools:
        with pytest.raises(MCPToolError, match=f"does not fit {re.escape(repr(into))}"):
            await tools.call("add", {"a": 1, "b": 2}, into=into)
        assert await tools.call("add", {"a": 1, "b": 2}, into=dict[str, int] | None) == {
            "result": 3
        }


async def test_an_into_type_that_cannot_be_checked_is_refused_before_the_call():
    class Opaque:  # no fields to check a result against
        pass

    seen: list[str] = []
    async with MCPTools(build(seen), allow=["add"]) as tools:
        with pytest.raises(UnsupportedType):
            await tools.call("add", {"a": 1, "b": 2}, into=Opaque)
    assert seen == []
