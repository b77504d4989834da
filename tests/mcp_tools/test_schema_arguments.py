"""Arguments are checked against the server's JSON Schema, never coerced, never fetched."""

from __future__ import annotations

import mcp.types
import pytest
from mcp.server.lowlevel import Server

from agentgraph import ToolCall, ToolError
from agentgraph.mcp import MCPToolError, MCPTools
from agentgraph.mcp._schema import SchemaArguments
from agentgraph.tools import run_tool_calls

pytestmark = pytest.mark.anyio

NESTED = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"qty": {"type": "integer", "minimum": 1}},
                "required": ["qty"],
            },
        },
        "odd key": {"$ref": "#/$defs/colour"},
        "remote": {"$ref": "https://example.invalid/schema.json"},
    },
    "required": ["items"],
    "$defs": {"colour": {"enum": ["red", "green"]}},
}


def low_level(schema: dict, seen: list, *, copies: int = 1) -> Server:
    """A server on the SDK's low-level API, listing one tool with `schema` as it is."""

    async def list_tools(ctx, params) -> mcp.types.ListToolsResult:
        tool = mcp.types.Tool(name="order", description="Order things.", input_schema=schema)
        return mcp.types.ListToolsResult(tools=[tool] * copies)

    async def call_tool(ctx, params) -> mcp.types.CallToolResult:
        seen.append(params.arguments)
        text = mcp.types.TextContent(type="text", text="ordered")
        return mcp.types.CallToolResult(content=[text], structured_content={"ok": True})

    return Server("orders", on_list_tools=list_tools, on_call_tool=call_tool)


async def outcome_of(schema: dict, arguments: dict):
    seen: list = []
    async with MCPTools(low_level(schema, seen), allow=["order"]) as mcp_tools:
        [outcome] = await run_tool_calls(mcp_tools.tools, [ToolCall("c", "order", arguments)])
    return outcome, seen


async def test_problems_carry_their_paths_in_the_arguments():
    outcome, seen = await outcome_of(NESTED, {"items": [{"qty": 0}, {}], "odd key": "blue"})
    assert outcome.error == "bad_arguments" and seen == []
    assert outcome.message.content.splitlines()[1:4] == [
        "- items[0].qty: 0 is less than the minimum of 1",
        "- items[1]: 'qty' is a required property",
        "- [\"odd key\"]: 'blue' is not one of ['red', 'green']",
    ]


async def test_valid_arguments_go_to_the_server_unchanged():
    arguments = {"items": [{"qty": 2}], "odd key": "red"}
    outcome, seen = await outcome_of(NESTED, arguments)
    assert outcome.ok and outcome.message.content == "ordered"
    assert seen == [arguments]


async def test_a_remote_reference_is_refused_not_fetched():
    outcome, seen = await outcome_of(NESTED, {"items": [], "remote": 1})
    assert outcome.error == "bad_arguments" and seen == []
    assert "the tool's schema could not be applied" in outcome.message.content


async def test_a_schema_that_is_not_json_schema_is_refused_at_connect():
    with pytest.raises(ToolError, match="its input schema is not valid JSON Schema"):
        await outcome_of({"type": "object", "properties": {"a": {"type": "integr"}}}, {})


async def test_a_tool_whose_arguments_are_not_an_object_is_refused_at_connect():
    # The SDK's server refuses to list it; the listing's error is typed and named.
    with pytest.raises(MCPToolError, match="'tools/list': Handler returned an invalid result"):
        await outcome_of({"type": "array"}, {})


def test_the_backstop_refuses_what_a_server_should_not_list():
    with pytest.raises(ToolError, match="must describe an object"):
        SchemaArguments("t", {"type": "array"})


async def test_a_server_listing_an_allowed_name_twice_is_refused():
    schema = {"type": "object", "properties": {}}
    with pytest.raises(ToolError, match=r"lists the tools \['order'\] more than once"):
        async with MCPTools(low_level(schema, [], copies=2), allow=["order"]):
            pass


async def test_call_checks_the_arguments_as_the_model_path_does_and_sends_nothing():
    arguments = {"items": [{"qty": 0}, {}], "odd key": "blue"}
    model, _ = await outcome_of(NESTED, arguments)
    seen: list = []
    async with MCPTools(low_level(NESTED, seen), allow=["order"]) as mcp_tools:
        with pytest.raises(MCPToolError) as bad:
            await mcp_tools.call("order", arguments)
        with pytest.raises(MCPToolError, match="the call was not sent"):
            await mcp_tools.call("order", {"items": "none"})
        assert await mcp_tools.call("order", {"items": [{"qty": 1}]}) == "ordered"
    assert seen == [{"items": [{"qty": 1}]}]  # only the valid call reached the server
    assert (bad.value.server, bad.value.tool) == ("orders", "order")
    problems = [line for line in model.message.content.splitlines() if line.startswith("- ")]
    assert bad.value.detail.splitlines() == [
        "invalid arguments, so the call was not sent:",
        *problems,
    ]
