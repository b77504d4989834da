"""A server's questions in the middle of a tool call: the run's interrupts, or a live answerer."""

from __future__ import annotations

import base64

import mcp.types
import pytest
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

from agentgraph import AgentContext, GraphBuilder, GraphRunner, Interrupted, Message, ToolCall
from agentgraph.checkpoint import MemoryStore
from agentgraph.llm import Image
from agentgraph.mcp import (
    Elicitation,
    MCPAnswerError,
    MCPConnectionError,
    MCPToolError,
    MCPTools,
)
from agentgraph.nodes import tool_use

pytestmark = pytest.mark.anyio

FORM = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "guests": {"type": "integer"}},
    "required": ["name"],
}
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n tiny").decode()


class Booking(BaseModel):
    name: str
    guests: int = 1


def booking_server(fresh: list[str]) -> MCPServer:
    """Asks who books: by `InputRequiredResult` (2026-07-28) or `elicitation/create` (before)."""
    server = MCPServer("bookings")

    def done(name: object, guests: object) -> list[mcp.types.ContentBlock]:
        return [
            mcp.types.TextContent(type="text", text=f"booked for {name} ({guests})"),
            mcp.types.ImageContent(type="image", data=PNG, mime_type="image/png"),
            mcp.types.ResourceLink(
                type="resource_link",
                uri="file:///bookings/1.txt",
                name="1.txt",
                mime_type="text/plain",
            ),
        ]

    @server.tool()
    async def book(
        table: int, ctx: Context
    ) -> list[mcp.types.ContentBlock] | mcp.types.InputRequiredResult:
        if ctx.protocol_version != "2026-07-28":
            reply = await ctx.elicit(f"Who books table {table}?", Booking)
            if reply.action != "accept":
                return [mcp.types.TextContent(type="text", text=f"not booked: {reply.action}")]
            return done(reply.data.name, reply.data.guests)
        answers = ctx.input_responses
        if answers is None:
            fresh.append(f"table {table}")
            form = mcp.types.ElicitRequestFormParams(
                message=f"Who books table {table}?", requested_schema=FORM
            )
            return mcp.types.InputRequiredResult(
                input_requests={"who": mcp.types.ElicitRequest(params=form)},
                request_state=f"table={table}",
            )
        assert ctx.request_state == f"table={table}"
        reply = answers["who"]
        if reply.action != "accept":
            return [mcp.types.TextContent(type="text", text=f"not booked: {reply.action}")]
        return done(reply.content["name"], reply.content.get("guests", 1))

    return server


def booking_graph(tools: MCPTools):
    step = tool_use(tools.tools)
    with GraphBuilder[Message, Message]("booking") as g:
        g.start.edge_to(step).edge_to(g.finish)
    return g.build()


CALL = Message.assistant("", tool_calls=(ToolCall("c1", "book", {"table": 4}),))


async def test_a_question_stops_the_run_and_the_answer_goes_on_with_the_recorded_state():
    fresh: list[str] = []
    store = MemoryStore()
    async with MCPTools(booking_server(fresh), allow=["book"], elicitation=True) as tools:
        graph = booking_graph(tools)
        with pytest.raises(Interrupted) as stop:
            await GraphRunner().run(graph, AgentContext(CALL), store=store, run_id="r1")
        assert stop.value.question == Elicitation("bookings", "book", "Who books table 4?", FORM)
        out = await GraphRunner().resume(graph, "r1", store, answer={"name": "Ada", "guests": 2})
    reply = out.history[-1]
    assert reply.role == "tool" and not reply.is_error
    assert reply.parts == (
        "booked for Ada (2)",
        Image.from_bytes(base64.b64decode(PNG)),  # the resumed call's image is kept
        '[resource link {"uri":"file:///bookings/1.txt","name":"1.txt","mimeType":"text/plain"}]',
    )
    # The resume sent the answer with the recorded state; the call was never made anew.
    assert fresh == ["table 4"]


async def test_an_answer_that_breaks_the_form_is_refused_and_never_sent():
    fresh: list[str] = []
    store = MemoryStore()
    async with MCPTools(booking_server(fresh), allow=["book"], elicitation=True) as tools:
        graph = booking_graph(tools)
        with pytest.raises(Interrupted):
            await GraphRunner().run(graph, AgentContext(CALL), store=store, run_id="r2")
        out = await GraphRunner().resume(graph, "r2", store, answer={"guests": "many"})
    reply = out.history[-1]
    assert reply.is_error
    assert "MCPAnswerError" in reply.content and "'name' is a required property" in reply.content
    assert fresh == ["table 4"]


async def test_a_declined_question_is_sent_as_declined():
    store = MemoryStore()
    async with MCPTools(booking_server([]), allow=["book"], elicitation=True) as tools:
        graph = booking_graph(tools)
        with pytest.raises(Interrupted):
            await GraphRunner().run(graph, AgentContext(CALL), store=store, run_id="r3")
        out = await GraphRunner().resume(graph, "r3", store, answer=None)
    assert out.history[-1].content == "not booked: decline"


async def test_without_a_store_the_question_is_named_in_the_error():
    async with MCPTools(booking_server([]), allow=["book"], elicitation=True) as tools:
        with pytest.raises(MCPToolError, match="Who books table 4"):
            await tools.call("book", {"table": 4})


async def test_without_the_capability_the_server_cannot_ask():
    async with MCPTools(booking_server([]), allow=["book"]) as tools:
        with pytest.raises(MCPToolError):
            await tools.call("book", {"table": 4})


async def test_a_live_answerer_answers_in_both_protocol_eras():
    asked: list[Elicitation] = []

    async def answer(question: Elicitation) -> dict[str, object]:
        asked.append(question)
        return {"name": "Bo", "guests": 3}

    for mode in ("auto", "legacy"):
        server = booking_server([])
        async with MCPTools(server, allow=["book"], elicitation=answer, mode=mode) as tools:
            text = await tools.call("book", {"table": 7})
        assert text.startswith("booked for Bo (3)")
    assert [q.message for q in asked] == ["Who books table 7?"] * 2
    assert [q.tool for q in asked] == ["book", "book"]


async def test_a_live_answer_that_breaks_the_form_is_refused_in_both_eras():
    async def answer(question: Elicitation) -> dict[str, object]:
        return {"guests": 3}

    for mode in ("auto", "legacy"):
        server = booking_server([])
        async with MCPTools(server, allow=["book"], elicitation=answer, mode=mode) as tools:
            with pytest.raises(MCPAnswerError, match="'name' is a required property"):
                await tools.call("book", {"table": 7})


async def test_an_answerer_that_raises_fails_the_call_with_its_error_in_both_eras():
    async def answer(question: Elicitation) -> dict[str, object]:
        raise ValueError("the booking desk is closed")

    for mode in ("auto", "legacy"):
        async with MCPTools(
            booking_server([]), allow=["book"], elicitation=answer, mode=mode
        ) as tools:
            with pytest.raises(MCPToolError) as raised:
                await tools.call("book", {"table": 7})
        assert raised.value.tool == "book" and raised.value.detail == (
            "answering the server's question failed: ValueError: the booking desk is closed"
        )
        assert isinstance(raised.value.__cause__, ValueError)


async def test_stopping_the_run_is_refused_where_a_question_waits_inside_the_call():
    with pytest.raises(MCPConnectionError, match="elicitation=<an async function>"):
        async with MCPTools(booking_server([]), allow=["book"], elicitation=True, mode="legacy"):
            pass


async def test_over_ag_ui_the_question_shows_its_message_and_form():
    from agentgraph.tracing import Redactor
    from agentgraph.web import AguiTranslator

    question = Elicitation("bookings", "book", "Who books table 4?", FORM)
    stop = Interrupted(
        run_id="r9", question=question, context=AgentContext(CALL), step=1, path=("t",)
    )
    event = AguiTranslator(thread_id="t", run_id="r9", redactor=Redactor()).interrupted(stop)
    [interrupt] = event.outcome.interrupts
    assert interrupt.reason == "input" and interrupt.message == "Who books table 4?"
    assert interrupt.metadata["question"]["schema"] == FORM
