"""What the model reads of a tool's result: text blocks in order, other blocks named briefly."""

from __future__ import annotations

import base64

import mcp.types
import pytest
from mcp.server.lowlevel import Server

from agentgraph import ToolCall
from agentgraph.mcp import MCPToolError, MCPTools
from agentgraph.tools import run_tool_calls

pytestmark = pytest.mark.anyio

PNG = base64.b64encode(b"\x89PNG" + bytes(96)).decode()


def answering(result: mcp.types.CallToolResult) -> Server:
    async def list_tools(ctx, params) -> mcp.types.ListToolsResult:
        schema = {"type": "object", "properties": {}}
        return mcp.types.ListToolsResult(tools=[mcp.types.Tool(name="t", input_schema=schema)])

    async def call_tool(ctx, params) -> mcp.types.CallToolResult:
        return result

    return Server("results", on_list_tools=list_tools, on_call_tool=call_tool)


async def read(result: mcp.types.CallToolResult):
    async with MCPTools(answering(result), allow=["t"]) as mcp_tools:
        [outcome] = await run_tool_calls(mcp_tools.tools, [ToolCall("c", "t", {})])
    return outcome


async def test_text_and_other_blocks_in_order():
    resource = mcp.types.TextResourceContents(uri="file:///notes.txt", text="a note")
    outcome = await read(
        mcp.types.CallToolResult(
            content=[
                mcp.types.TextContent(text="first"),
                mcp.types.ImageContent(data=PNG, mime_type="image/png"),
                mcp.types.EmbeddedResource(resource=resource),
                mcp.types.ResourceLink(uri="file:///big.csv", name="big", mime_type="text/csv"),
            ]
        )
    )
    assert outcome.ok
    assert outcome.message.content.splitlines() == [
        "first",
        "[image (image/png), 100 bytes, not shown]",
        "a note",
        '[resource link {"uri":"file:///big.csv","name":"big","mimeType":"text/csv"}]',
    ]


async def test_structured_content_alone_is_sent_as_json():
    outcome = await read(
        mcp.types.CallToolResult(content=[], structured_content={"total": 3, "ok": True})
    )
    assert outcome.ok and outcome.message.content == '{"total":3,"ok":true}'


async def test_an_error_without_words_still_says_it_failed():
    outcome = await read(mcp.types.CallToolResult(content=[], is_error=True))
    assert outcome.message.is_error and isinstance(outcome.exception, MCPToolError)
    assert outcome.message.content.endswith("the tool reported an error without a message")
