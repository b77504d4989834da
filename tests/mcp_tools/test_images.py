"""Images in MCP tool results reach the model as images, beside the result's text.

From a server on the Python SDK's `MCPServer` (in process) and from the
protocol's reference server, `@modelcontextprotocol/server-everything`, whose
`get-tiny-image` tool answers with text, a PNG and more text (over stdio).
"""

from __future__ import annotations

import base64

import mcp.types
import pytest
from mcp.server.mcpserver import Image as SDKImage
from mcp.server.mcpserver import MCPServer

from agentgraph import AgentContext, GraphRunner, ToolCall
from agentgraph.llm import Image
from agentgraph.mcp import MCPTools
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel
from agentgraph.tools import run_tool_calls

from .test_reference_server import entry
from .test_results import answering

pytestmark = pytest.mark.anyio

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d4944415478da63f8cfc0f01f0005000201a5f5a1e20000000049454e44ae426082"
)


def drawing() -> MCPServer:
    server = MCPServer("drawing", log_level="WARNING")

    @server.tool(structured_output=False)  # content blocks, not data
    def chart(city: str) -> list[object]:
        """The weather chart of a city."""
        return [f"The chart for {city}:", SDKImage(data=PNG, format="png")]

    return server


async def one(tools: MCPTools, name: str, **arguments: object):
    [outcome] = await run_tool_calls(tools.tools, [ToolCall("c1", name, arguments)])
    return outcome


async def test_an_sdk_server_image_becomes_an_image_part():
    async with MCPTools(drawing(), allow=["chart"]) as mcp_tools:
        outcome = await one(mcp_tools, "chart", city="Paris")
    assert outcome.ok
    assert outcome.message.parts == ("The chart for Paris:", Image.from_bytes(PNG))
    assert outcome.message.content == "The chart for Paris:"


async def test_images_false_describes_them_in_words_as_before():
    async with MCPTools(drawing(), allow=["chart"], images=False) as mcp_tools:
        outcome = await one(mcp_tools, "chart", city="Paris")
    assert outcome.message.parts == ()
    assert outcome.message.content.splitlines() == [
        "The chart for Paris:",
        f"[image (image/png), {len(PNG)} bytes, not shown]",
    ]


async def test_images_no_provider_takes_stay_words_beside_the_ones_they_do():
    svg = base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg'/>").decode()
    result = mcp.types.CallToolResult(
        content=[
            mcp.types.ImageContent(data=svg, mime_type="image/svg+xml"),
            mcp.types.ImageContent(data=base64.b64encode(PNG).decode(), mime_type="image/png"),
            mcp.types.TextContent(text="two pictures"),
        ]
    )
    async with MCPTools(answering(result), allow=["t"]) as mcp_tools:
        outcome = await one(mcp_tools, "t")
    assert outcome.message.parts == (
        "[image (image/svg+xml), 41 bytes, not shown]",
        Image.from_bytes(PNG),
        "two pictures",
    )


async def test_call_gives_the_text_of_a_result_with_images():
    # `call` is for code, not a model: it gives text (images described), as documented.
    async with MCPTools(drawing(), allow=["chart"]) as mcp_tools:
        text = await mcp_tools.call("chart", {"city": "Oslo"})
    assert text.startswith("The chart for Oslo:\n[image (image/png)")


async def test_the_reference_servers_tiny_image_reaches_the_model_over_stdio():
    node, script = entry()
    model = ScriptedModel(ScriptedModel.tool_call("get-tiny-image"), "The MCP logo.")
    async with MCPTools.stdio(node, script, "stdio", allow=["get-tiny-image"]) as mcp_tools:
        out = await GraphRunner().run(react_agent(model, mcp_tools.tools), AgentContext("Show me."))
    result = out.history[2]
    first, image, last = result.parts
    assert isinstance(image, Image) and image.media_type == "image/png"
    assert (first, last) == ("Here's the image you requested:", "The image above is the MCP logo.")
    sent = model.requests[1].messages[-1]
    assert sent == result  # the model was handed the image itself
