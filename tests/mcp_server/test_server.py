"""`GraphServer` driven in process by the Python SDK's client, in both protocol eras.

"auto" speaks the current protocol (questions come back as `InputRequiredResult`
and the client calls again with the answer); "legacy" the handshake era
(questions are requests to the client in the middle of the call).
"""

from __future__ import annotations

from typing import Any

import mcp
import mcp.types
import pytest
from mcp.shared.exceptions import MCPError

from agentgraph import AgentContext, GraphBuilder, GraphRunner, Runtime, node, tool
from agentgraph.checkpoint import MemoryStore
from agentgraph.llm import Message, ToolCall
from agentgraph.mcp import GraphServer
from agentgraph.nodes import tool_use

from .graphs import book, leaky, plan

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's server runs on asyncio


MODES = pytest.mark.parametrize("mode", ["auto", "legacy"])


def answering(*replies: mcp.types.ElicitResult) -> tuple[Any, list[str]]:
    asked: list[str] = []
    pending = list(replies)

    async def elicit(context: Any, params: Any) -> mcp.types.ElicitResult:
        asked.append(params.message)
        return pending.pop(0)

    return elicit, asked


@MODES
async def test_a_graph_is_a_tool_with_schemas_from_its_types(mode: str) -> None:
    async with mcp.Client(GraphServer([plan, book]).server, mode=mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert listed["plan"].input_schema["required"] == ["city"]
        assert listed["plan"].output_schema is not None
        assert listed["plan"].output_schema["required"] == ["city", "nights", "note"]
        # A type that is not an object is wrapped: {"input": ...} in, {"result": ...} out.
        assert listed["book"].input_schema["properties"] == {"input": {"type": "string"}}
        assert listed["book"].output_schema["properties"] == {"result": {"type": "string"}}
        result = await client.call_tool("plan", {"city": "Oslo", "days": 3})
    assert not result.is_error
    assert result.structured_content == {"city": "Oslo", "nights": 2, "note": "3 days in Oslo"}


@MODES
async def test_a_question_is_an_elicitation_the_client_answers(mode: str) -> None:
    elicit, asked = answering(mcp.types.ElicitResult(action="accept", content={"answer": "Ada"}))
    server = GraphServer([book])
    async with mcp.Client(server.server, mode=mode, elicitation_callback=elicit) as client:
        result = await client.call_tool("book", {"input": "hotel"})
    assert asked == ["What name goes on the hotel booking?"]
    assert result.structured_content == {"result": "booked hotel for Ada"}


@MODES
async def test_without_the_capability_the_run_waits_in_the_store(mode: str) -> None:
    store = MemoryStore()
    async with mcp.Client(GraphServer([book], store=store).server, mode=mode) as client:
        result = await client.call_tool("book", {"input": "hotel"})
    assert result.is_error and result.meta is not None
    run_id = result.meta["agentgraph/run_id"]
    assert result.meta["agentgraph/question"] == "What name goes on the hotel booking?"
    text = result.content[0].text  # type: ignore[union-attr]
    assert "What name goes on the hotel booking?" in text and run_id in text
    done = await GraphRunner().resume(book, run_id, store, answer="Lin")
    assert done.input == "booked hotel for Lin"


@MODES
@pytest.mark.parametrize(
    "reply",
    [
        mcp.types.ElicitResult(action="accept", content={"name": "Ada"}),
        mcp.types.ElicitResult(action="decline"),
        mcp.types.ElicitResult(action="cancel"),
    ],
)
async def test_an_unanswered_question_leaves_the_run_waiting(
    mode: str, reply: mcp.types.ElicitResult
) -> None:
    store = MemoryStore()
    elicit, _ = answering(reply)
    server = GraphServer([book], store=store)
    async with mcp.Client(server.server, mode=mode, elicitation_callback=elicit) as client:
        result = await client.call_tool("book", {"input": "car"})
    assert result.is_error and result.meta is not None
    done = await GraphRunner().resume(book, result.meta["agentgraph/run_id"], store, answer="Bo")
    assert done.input == "booked car for Bo"


async def _refuses(context: Any, params: Any) -> mcp.types.ErrorData:
    return mcp.types.ErrorData(
        code=mcp.types.INTERNAL_ERROR, message=f"no form here sk-{'a1' * 20}"
    )


async def _breaks(context: Any, params: Any) -> mcp.types.ElicitResult:
    raise RuntimeError("the form window crashed")


@pytest.mark.parametrize("elicit", [_refuses, _breaks])
async def test_a_client_that_fails_to_answer_leaves_the_run_waiting(elicit: Any) -> None:
    store = MemoryStore()
    server = GraphServer([book], store=store)
    async with mcp.Client(server.server, mode="legacy", elicitation_callback=elicit) as client:
        result = await client.call_tool("book", {"input": "car"})
    assert result.is_error and result.meta is not None
    text = result.content[0].text  # type: ignore[union-attr]
    assert "the client did not answer the question" in text and "waits" in text
    assert "sk-" not in text and "Traceback" not in text
    done = await GraphRunner().resume(book, result.meta["agentgraph/run_id"], store, answer="Bo")
    assert done.input == "booked car for Bo"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@node
def ask_to_delete(ctx: AgentContext[str]) -> AgentContext[Message]:
    call = ToolCall("c1", "delete_file", {"path": ctx.input})
    return ctx.with_input(Message.assistant(tool_calls=(call,)))


@node
def outcome(ctx: AgentContext[Message]) -> AgentContext[str]:
    return ctx.with_input(ctx.history[-1].content)


with GraphBuilder[str, str]("cleanup") as g:
    g.start.edge_to(ask_to_delete).edge_to(
        tool_use([delete_file], approve=["delete_file"])
    ).edge_to(outcome).edge_to(g.finish)
cleanup = g.build()


@MODES
@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (mcp.types.ElicitResult(action="accept", content={"approve": True}), "deleted a.txt"),
        (
            mcp.types.ElicitResult(action="accept", content={"approve": False, "reason": "no"}),
            "the call to tool 'delete_file' was refused by the user: no",
        ),
        (
            mcp.types.ElicitResult(action="decline"),
            "the call to tool 'delete_file' was refused by the user",
        ),
    ],
)
async def test_a_tool_approval_is_a_yes_no_form(
    mode: str, reply: mcp.types.ElicitResult, expected: str
) -> None:
    elicit, asked = answering(reply)
    server = GraphServer([cleanup])
    async with mcp.Client(server.server, mode=mode, elicitation_callback=elicit) as client:
        result = await client.call_tool("cleanup", {"input": "a.txt"})
    assert asked == ['Allow the call to tool \'delete_file\' with arguments {"path":"a.txt"}?']
    assert result.structured_content == {"result": expected}


@MODES
async def test_bad_requests_get_protocol_answers_never_a_traceback(mode: str) -> None:
    async with mcp.Client(GraphServer([plan]).server, mode=mode) as client:
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("nope", {})
        assert unknown.value.code == mcp.types.INVALID_PARAMS
        assert "no tool named 'nope' here; the tools are: 'plan'" in str(unknown.value)
        bad = await client.call_tool("plan", {"city": 5})
        assert bad.is_error
        assert "city: expected str, got 5" in bad.content[0].text  # type: ignore[union-attr]
        assert "Traceback" not in bad.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("mac", ["00", "é" * 64, ""], ids=["hex", "non-ascii", "empty"])
async def test_a_forged_request_state_is_refused(mac: str) -> None:
    server = GraphServer([book])
    params = mcp.types.CallToolRequestParams(
        name="book", arguments={"input": "x"}, request_state=f'["book","run-1","text"].{mac}'
    )
    with pytest.raises(MCPError, match="request_state was not made by this server"):
        await server._call_tool(None, params)  # type: ignore[arg-type]


@MODES
async def test_everything_served_is_masked(mode: str) -> None:
    @node
    def boom(ctx: AgentContext[str]) -> AgentContext[str]:
        raise RuntimeError(f"token sk-proj-{'b2' * 20} refused")

    with GraphBuilder[str, str]("boom") as g:
        g.start.edge_to(boom).edge_to(g.finish)
    async with mcp.Client(GraphServer([leaky, g.build()]).server, mode=mode) as client:
        result = await client.call_tool("leaky", {"input": "x"})
        failed = await client.call_tool("boom", {"input": "x"})
    assert result.structured_content == {"result": "key is ***"}
    assert result.content[0].text == "key is ***"  # type: ignore[union-attr]
    assert failed.is_error
    text = failed.content[0].text  # type: ignore[union-attr]
    assert "sk-proj" not in text and "***" in text and "RuntimeError" in text


def test_a_server_refuses_what_it_cannot_serve() -> None:
    with pytest.raises(ValueError, match="two graphs share a name"):
        GraphServer([plan, plan])
    with pytest.raises(ValueError, match="must be 1-64 letters"):
        GraphServer({"bad name": plan})
    with pytest.raises(TypeError, match="expected a Graph"):
        GraphServer({"x": delete_file})  # type: ignore[dict-item]


async def test_a_graph_without_types_takes_and_gives_any_json() -> None:
    @node
    def echo(ctx: AgentContext[Any], rt: Runtime) -> AgentContext[Any]:
        return ctx

    with GraphBuilder("echo") as g:
        g.start.edge_to(echo).edge_to(g.finish)
    async with mcp.Client(GraphServer([g.build()]).server) as client:
        result = await client.call_tool("echo", {"input": {"a": [1, 2]}})
    assert result.structured_content == {"result": {"a": [1, 2]}}


@MODES
@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"city": "Oslo", "dayz": 3}, "dayz: unexpected field"),
        ({"city": "Oslo", "days": "3"}, 'days: expected int, got "3"'),
        ({"city": "Oslo", "days": 3.5}, "days: expected int, got 3.5"),
    ],
)
async def test_arguments_the_input_schema_forbids_are_refused(
    mode: str, arguments: dict[str, Any], problem: str
) -> None:
    # The tool's inputSchema says additionalProperties: false, and days is an integer.
    store = MemoryStore()
    async with mcp.Client(GraphServer([plan], store=store).server, mode=mode) as client:
        (listed,) = (await client.list_tools()).tools
        result = await client.call_tool("plan", arguments)
    assert listed.input_schema["additionalProperties"] is False
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith("invalid arguments for tool 'plan'") and problem in text
    assert store.run_ids == ()  # nothing ran


@MODES
@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (mcp.types.ElicitResult(action="decline"), "the question was declined, not answered"),
        (mcp.types.ElicitResult(action="cancel"), "the question was cancelled, not answered"),
    ],
)
async def test_an_unanswered_question_says_how_it_went(
    mode: str, reply: mcp.types.ElicitResult, said: str
) -> None:
    elicit, _ = answering(reply)
    server = GraphServer([book])
    async with mcp.Client(server.server, mode=mode, elicitation_callback=elicit) as client:
        result = await client.call_tool("book", {"input": "car"})
    assert result.is_error
    assert said in result.content[0].text  # type: ignore[union-attr]
