"""`python -m agentgraph mcp` over stdio and streamable HTTP, driven by both official clients:
the Python SDK's `mcp.Client` and the TypeScript SDK's (tests/js/mcp_client.mjs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp
import mcp.types
import pytest
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.mcp_tools.conftest import HttpServer
from tests.npm import JS, need_npm_package

ROOT = str(Path(__file__).resolve().parents[2])
TARGETS = ["tests.mcp_server.graphs:plan", "tests.mcp_server.graphs:book"]
ENV = {"PYTHONPATH": ROOT, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
CALLS = [
    {"name": "plan", "arguments": {"city": "Oslo", "days": 2}},
    {"name": "book", "arguments": {"input": "flight"}},
    {"name": "nope", "arguments": {}},
]
PLANNED = {"city": "Oslo", "nights": 1, "note": "2 days in Oslo"}
QUESTION = "What name goes on the flight booking?"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's HTTP client closes handshake-era sessions cleanly there


class CommandServer(HttpServer):
    def command(self) -> tuple[list[str], dict[str, str] | None]:
        args = ["-m", "agentgraph", "mcp", *TARGETS, "--http", "--port", str(self.port)]
        return [sys.executable, *args], {**os.environ, **ENV}


@pytest.fixture
def http_url() -> Iterator[str]:
    server = CommandServer()
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def stdio_params() -> mcp.StdioServerParameters:
    return mcp.StdioServerParameters(
        command=sys.executable, args=["-m", "agentgraph", "mcp", *TARGETS], env=ENV, cwd=ROOT
    )


async def python_calls(transport: Any, *, answer: str | None) -> list[mcp.types.CallToolResult]:
    async def elicit(context: Any, params: Any) -> mcp.types.ElicitResult:
        assert params.message == QUESTION
        return mcp.types.ElicitResult(action="accept", content={"answer": answer})

    callback = elicit if answer is not None else None
    async with mcp.Client(transport, elicitation_callback=callback) as client:
        planned = await client.call_tool("plan", {"city": "Oslo", "days": 2})
        booked = await client.call_tool("book", {"input": "flight"})
    return [planned, booked]


@pytest.mark.anyio
@pytest.mark.parametrize("over", ["stdio", "http"])
async def test_the_python_client_calls_a_served_graph(over: str, request: Any) -> None:
    def transport() -> Any:
        if over == "stdio":
            return stdio_client(stdio_params(), errlog=subprocess.DEVNULL)  # type: ignore[arg-type]
        return streamable_http_client(request.getfixturevalue("http_url"))

    planned, booked = await python_calls(transport(), answer="Ada")
    assert planned.structured_content == PLANNED
    assert booked.structured_content == {"result": "booked flight for Ada"}
    _, waiting = await python_calls(transport(), answer=None)
    assert waiting.is_error and waiting.meta is not None
    assert waiting.meta["agentgraph/question"] == QUESTION


def typescript(plan: dict[str, Any]) -> dict[str, Any]:
    node, _ = need_npm_package("@modelcontextprotocol/sdk")
    done = subprocess.run(
        [node, str(JS / "mcp_client.mjs"), json.dumps(plan)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=JS,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


@pytest.mark.parametrize("over", ["stdio", "http"])
def test_the_typescript_client_calls_a_served_graph(over: str, request: Any) -> None:
    if over == "stdio":
        target: dict[str, Any] = {
            "stdio": {
                "command": sys.executable,
                "args": stdio_params().args,
                "env": ENV,
                "cwd": ROOT,
            }
        }
    else:
        target = {"http": request.getfixturevalue("http_url")}
    answer = {"action": "accept", "content": {"answer": "Grace"}}
    seen = typescript({**target, "elicit": answer, "calls": CALLS})
    assert [t["name"] for t in seen["tools"]] == ["plan", "book"]
    assert seen["tools"][0]["outputSchema"]["required"] == ["city", "nights", "note"]
    planned, booked, unknown = seen["results"]
    # The TypeScript client checks structured content against the outputSchema itself.
    assert planned["structuredContent"] == PLANNED and not planned["isError"]
    assert booked["structuredContent"] == {"result": "booked flight for Grace"}
    assert seen["asked"][0]["message"] == QUESTION
    assert seen["asked"][0]["schema"]["required"] == ["answer"]
    assert unknown["protocolError"]["code"] == -32602

    fallback = typescript({**target, "elicit": None, "calls": CALLS[1:2]})
    (waiting,) = fallback["results"]
    assert waiting["isError"] and fallback["asked"] == []
    assert waiting["_meta"]["agentgraph/question"] == QUESTION
    assert waiting["_meta"]["agentgraph/run_id"] in waiting["content"][0]["text"]
