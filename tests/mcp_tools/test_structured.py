"""Structured results: checked against the tool's `outputSchema`, handed on as data."""

from __future__ import annotations

import attrs
import mcp.types
import pytest
from mcp.server.lowlevel import Server

from agentgraph import AgentContext, GraphBuilder, GraphRunner, ToolCall, node
from agentgraph.mcp import MCPToolError, MCPTools
from agentgraph.tools import run_tool_calls

pytestmark = pytest.mark.anyio

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "high": {"type": "integer"}},
    "required": ["city", "high"],
}


@attrs.frozen
class Forecast:
    city: str
    high: int


def weather(structured: dict[str, object] | None) -> Server:
    async def list_tools(ctx, params) -> mcp.types.ListToolsResult:
        tool = mcp.types.Tool(
            name="forecast",
            input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
            output_schema=SCHEMA,
        )
        return mcp.types.ListToolsResult(tools=[tool])

    async def call_tool(ctx, params) -> mcp.types.CallToolResult:
        text = mcp.types.TextContent(type="text", text="sunny")
        return mcp.types.CallToolResult(content=[text], structured_content=structured)

    return Server("weather", on_list_tools=list_tools, on_call_tool=call_tool)


async def test_a_structured_result_reaches_a_node_as_typed_data():
    async with MCPTools(weather({"city": "Oslo", "high": 21}), allow=["forecast"]) as tools:

        @node
        async def look(ctx: AgentContext[str]) -> AgentContext[Forecast]:
            return ctx.with_input(await tools.call("forecast", {"city": ctx.input}, into=Forecast))

        with GraphBuilder[str, Forecast]("weather") as g:
            g.start.edge_to(look).edge_to(g.finish)
        out = await GraphRunner().run(g.build(), AgentContext("Oslo"))
        assert await tools.call("forecast", {"city": "Oslo"}) == {"city": "Oslo", "high": 21}
    assert out.input == Forecast("Oslo", 21)


@pytest.mark.parametrize(
    ("structured", "problem"),
    [
        ({"city": "Oslo", "high": "warm"}, "'warm' is not of type 'integer'"),
        ({"city": "Oslo"}, "'high' is a required property"),
        (None, "did not return structured content"),
    ],
)
async def test_a_structured_result_that_breaks_its_schema_is_a_typed_error(structured, problem):
    async with MCPTools(weather(structured), allow=["forecast"]) as tools:
        with pytest.raises(MCPToolError, match="forecast") as raised:
            await tools.call("forecast", {"city": "Oslo"})
        [outcome] = await run_tool_calls(tools.tools, [ToolCall("c", "forecast", {})])
    assert "the structured result breaks the tool's outputSchema" in str(raised.value)
    assert problem in str(raised.value)
    assert outcome.message.is_error and problem in outcome.message.content


async def test_a_result_checked_here_when_the_sdk_did_not():
    from agentgraph.mcp._calls import _answer, output_validator

    result = mcp.types.CallToolResult(content=[], structured_content={"city": 5})
    with pytest.raises(MCPToolError) as raised:
        _answer("weather", "forecast", result, output_validator(SCHEMA))
    text = str(raised.value)
    assert "breaks the tool's outputSchema" in text and "city: 5 is not of type 'string'" in text
    missing = mcp.types.CallToolResult(content=[])
    with pytest.raises(MCPToolError, match="has no structured content"):
        _answer("weather", "forecast", missing, output_validator(SCHEMA))


async def test_a_result_that_does_not_fit_the_type_asked_for_is_a_typed_error():
    @attrs.frozen
    class Other:
        rain: float

    async with MCPTools(weather({"city": "Oslo", "high": 21}), allow=["forecast"]) as tools:
        with pytest.raises(MCPToolError, match="does not fit Other"):
            await tools.call("forecast", {"city": "Oslo"}, into=Other)


async def test_the_model_still_reads_the_text_of_a_checked_result():
    async with MCPTools(weather({"city": "Oslo", "high": 21}), allow=["forecast"]) as tools:
        [outcome] = await run_tool_calls(tools.tools, [ToolCall("c", "forecast", {})])
    assert outcome.ok and outcome.message.content == "sunny"
