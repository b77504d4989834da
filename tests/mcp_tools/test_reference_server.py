"""MCPTools against the protocol's reference server, `@modelcontextprotocol/server-everything`.

The server is the npm package pinned in tests/js (installed by `make test`),
run with Node over stdio and over streamable HTTP on a loopback port. Over
HTTP it answers a session it does not know (after a restart) with HTTP 400,
not the 404 the specification names; both must lead to a new session.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentgraph import AgentContext, GraphRunner, ToolCall, ToolError
from agentgraph.mcp import CALL_TIMEOUT, Elicitation, MCPAnswerError, MCPTools
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel
from agentgraph.tools import MAX_RESULT_CHARS, run_tool_calls
from tests.npm import need_npm_package

from .conftest import HttpServer

pytestmark = pytest.mark.anyio

PACKAGE = "@modelcontextprotocol/server-everything"
TOOLS = ("echo", "get-sum", "trigger-long-running-operation")
# Over HTTP the reference server speaks the handshake-era protocol, which the SDK
# closes cleanly on asyncio only (see Transport._mode_here); stdio runs on both.
ASYNCIO = pytest.mark.parametrize("anyio_backend", ["asyncio"])


def entry() -> tuple[str, str]:
    node, folder = need_npm_package(PACKAGE)
    return node, str(folder / "dist" / "index.js")


class ReferenceHttpServer(HttpServer):
    def __init__(self) -> None:
        super().__init__()
        self.node, self.script = entry()

    def command(self) -> tuple[list[str], dict[str, str] | None]:
        env = {**os.environ, "PORT": str(self.port)}
        return [self.node, self.script, "streamableHttp"], env


@pytest.fixture
def reference_http() -> Iterator[ReferenceHttpServer]:
    server = ReferenceHttpServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def stdio(**options: object) -> MCPTools:
    node, script = entry()
    return MCPTools.stdio(node, script, "stdio", **{"allow": TOOLS, **options})


async def one(tools: MCPTools, name: str, **arguments: object):
    [outcome] = await run_tool_calls(tools.tools, [ToolCall("c1", name, arguments)])
    return outcome


async def test_a_react_agent_uses_the_reference_server_over_stdio():
    async with stdio() as mcp_tools:
        assert "server-everything/dist/index.js stdio" in mcp_tools.label
        assert all(t.timeout == CALL_TIMEOUT for t in mcp_tools.tools)
        model = ScriptedModel(
            ScriptedModel.tool_calls(("get-sum", {"a": 20, "b": 22}), ("echo", {"message": "hi"})),
            "done",
        )
        out = await GraphRunner().run(react_agent(model, mcp_tools.tools), AgentContext("go"))
    assert [m.content for m in out.history[2:4]] == ["The sum of 20 and 22 is 42.", "Echo: hi"]


async def test_a_huge_result_from_the_reference_server_is_clipped_for_the_model():
    message = "A" + "b" * 149_998 + "Z"
    async with stdio() as mcp_tools:
        outcome = await one(mcp_tools, "echo", message=message)
    text = outcome.message.content
    assert outcome.ok and text.startswith("Echo: Abbb") and text.endswith("bbbZ")
    assert len(text) < MAX_RESULT_CHARS + 300
    assert "50,006 of this result's 150,006 characters were cut here" in text


@ASYNCIO
async def test_a_call_the_reference_server_is_slow_to_answer_times_out_and_the_next_runs():
    async with stdio(timeout=0.5) as mcp_tools:
        slow = await one(mcp_tools, "trigger-long-running-operation", duration=30, steps=1)
        assert slow.error == "timeout" and "did not finish within 0.5s" in slow.message.content
        assert (await one(mcp_tools, "echo", message="still here")).message.content == (
            "Echo: still here"
        )


@ASYNCIO
async def test_the_reference_server_restarted_over_http_gets_a_new_session(reference_http):
    # Unsafe, and still sent again: a refused session means the call never ran.
    options = {"allow": ["echo"], "unsafe": ["echo"]}
    async with MCPTools.http(reference_http.url, **options) as mcp_tools:
        assert (await one(mcp_tools, "echo", message="one")).message.content == "Echo: one"
        reference_http.restart()
        again = await one(mcp_tools, "echo", message="two")
        assert again.ok, again.message.content
        assert again.message.content == "Echo: two" and mcp_tools.connections == 2
        third = await one(mcp_tools, "echo", message="three")
        assert third.message.content == "Echo: three" and mcp_tools.connections == 2


@ASYNCIO
async def test_a_plain_url_gets_the_same_reconnection(reference_http):
    async with MCPTools(reference_http.url, allow=["get-sum"]) as mcp_tools:
        assert (await mcp_tools.call("get-sum", {"a": 1, "b": 2})) == "The sum of 1 and 2 is 3."
        reference_http.restart()
        assert (await mcp_tools.call("get-sum", {"a": 2, "b": 2})) == "The sum of 2 and 2 is 4."
        assert mcp_tools.connections == 2


def test_the_call_timeout_is_minutes_unless_none_is_asked_for():
    node, script = "node", "index.js"
    assert stdio.__name__ and CALL_TIMEOUT == 300.0
    assert MCPTools.stdio(node, script, allow=["echo"]).timeout == CALL_TIMEOUT
    assert MCPTools.http("http://127.0.0.1:1/mcp", allow=["echo"]).timeout == CALL_TIMEOUT
    assert MCPTools.stdio(node, script, allow=["echo"], timeout=None).timeout is None


def test_the_package_is_where_the_makefile_installs_it():
    _, script = entry()
    assert Path(script).is_file()


async def test_the_reference_server_asks_only_a_client_that_declared_it_can_answer():
    asked: list[Elicitation] = []

    async def answer(question: Elicitation) -> dict[str, object]:
        asked.append(question)
        return {"name": "Ada Lovelace", "check": True, "integer": 7}

    node, script = entry()
    elicit = "trigger-elicitation-request"
    async with MCPTools.stdio(node, script, "stdio", allow=[elicit], elicitation=answer) as tools:
        text = await tools.call(elicit, {})
    assert "Ada Lovelace" in text and "User provided the requested information" in text
    [question] = asked
    assert question.tool == elicit and "name" in question.schema["required"]
    # Without a way to answer, the capability is not declared: the server lists no such tool.
    with pytest.raises(ToolError, match="does not list the allowed tools"):
        async with MCPTools.stdio(node, script, "stdio", allow=[elicit]):
            pass


async def test_an_answer_the_reference_server_would_reject_is_never_sent():
    async def answer(question: Elicitation) -> dict[str, object]:
        return {"name": "Ada", "integer": 1000}  # above the form's maximum

    node, script = entry()
    elicit = "trigger-elicitation-request"
    async with MCPTools.stdio(node, script, "stdio", allow=[elicit], elicitation=answer) as tools:
        with pytest.raises(MCPAnswerError, match="integer: 1000 is greater than the maximum"):
            await tools.call(elicit, {})
