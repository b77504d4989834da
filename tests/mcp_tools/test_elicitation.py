"""A server's questions in the middle of a tool call: the run's interrupts, or a live answerer."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable

import anyio
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

from .conftest import HttpServer, stdio_command

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


async def at_once(table: int, moment: str) -> None:
    return None


def booking_server(
    fresh: list[str], hold: Callable[[int, str], Awaitable[None]] = at_once
) -> MCPServer:
    """Asks who books: by `InputRequiredResult` (2026-07-28) or `elicitation/create` (before).

    `hold(table, "ask")` is awaited before asking, `hold(table, "end")` once the
    reply is in, before the call ends.
    """
    server = MCPServer("bookings")

    async def done(table: int, name: object, guests: object) -> list[mcp.types.ContentBlock]:
        await hold(table, "end")
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
            await hold(table, "ask")
            reply = await ctx.elicit(f"Who books table {table}?", Booking)
            if reply.action != "accept":
                await hold(table, "end")
                return [mcp.types.TextContent(type="text", text=f"not booked: {reply.action}")]
            return await done(table, reply.data.name, reply.data.guests)
        answers = ctx.input_responses
        if answers is None:
            await hold(table, "ask")
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
            await hold(table, "end")
            return [mcp.types.TextContent(type="text", text=f"not booked: {reply.action}")]
        return await done(table, reply.content["name"], reply.content.get("guests", 1))

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


async def calls_side_by_side(mode: str, answer, *, second_after_first_asks: bool) -> dict:
    """Tables 1 and 2 booked by two calls in flight at once; each call's outcome or error.

    Table 2's call starts once table 1's question is asked, or else table 1's
    question waits for table 2's call to reach the server; the server ends table
    1's call only after table 2's has ended on this side.
    """
    outcomes: dict[int, object] = {}
    first_asked, second_arrived, second_ended = anyio.Event(), anyio.Event(), anyio.Event()

    async def hold(table: int, moment: str) -> None:
        if (table, moment) == (2, "ask"):
            second_arrived.set()
        elif (table, moment) == (1, "ask") and not second_after_first_asks:
            await second_arrived.wait()
        elif (table, moment) == (1, "end"):
            await second_ended.wait()

    async def asking(question: Elicitation) -> object:
        if question.message == "Who books table 1?":
            first_asked.set()
        return await answer(question)

    server = booking_server([], hold)
    async with MCPTools(server, allow=["book"], elicitation=asking, mode=mode) as tools:

        async def book(table: int) -> None:
            try:
                outcomes[table] = await tools.call("book", {"table": table})
            except MCPToolError as exc:
                outcomes[table] = exc
            finally:
                if table == 2:
                    second_ended.set()

        async with anyio.create_task_group() as group:
            group.start_soon(book, 1)
            if second_after_first_asks:
                await first_asked.wait()
            group.start_soon(book, 2)
    return outcomes


def refuse_table_1_after_table_2_asks():
    """An answerer that refuses table 1's question only once table 2's is asked, and answers
    table 2's only after that refusal: each call then ends after the other's question."""
    second_asked, refusing = anyio.Event(), anyio.Event()

    async def answer(question: Elicitation) -> dict[str, object]:
        if question.message == "Who books table 1?":
            await second_asked.wait()
            refusing.set()
            return {"guests": 2}  # no name: refused, never sent
        second_asked.set()
        await refusing.wait()
        return {"name": "Bo"}

    return answer


@pytest.mark.parametrize("together", [False, True])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_two_calls_in_flight_each_get_the_outcome_of_their_own_question(mode, together):
    # On 2026-07-28 each question comes back in its call's own result; before, an
    # in-process question comes in its call's context, and one asked while its
    # call was the only one in flight is that call's.
    outcomes = await calls_side_by_side(
        mode, refuse_table_1_after_table_2_asks(), second_after_first_asks=not together
    )
    refused = outcomes[1]
    assert isinstance(refused, MCPAnswerError) and refused.tool == "book"
    assert refused.problems == ("(root): 'name' is a required property",)
    assert isinstance(outcomes[2], str) and outcomes[2].startswith("booked for Bo (1)")


class BookingsOverHttp(HttpServer):
    def command(self) -> tuple[list[str], dict[str, str] | None]:
        command, env = super().command()
        return [*command, "bookings"], env


async def both_tables(tools: MCPTools) -> dict[int, object]:
    outcomes: dict[int, object] = {}

    async def book(table: int) -> None:
        try:
            outcomes[table] = await tools.call("book", {"table": table})
        except MCPToolError as exc:
            outcomes[table] = exc

    async with anyio.create_task_group() as group:
        group.start_soon(book, 1)
        group.start_soon(book, 2)
    return outcomes


async def refuse_table_1(question: Elicitation) -> dict[str, object]:
    return {} if question.message == "Who books table 1?" else {"name": "Bo"}


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # handshake-era HTTP is asyncio only
async def test_over_http_a_question_belongs_to_the_call_whose_stream_it_comes_on():
    server = BookingsOverHttp()
    server.start()
    try:
        async with MCPTools(
            server.url, allow=["book"], elicitation=refuse_table_1, mode="legacy"
        ) as tools:
            outcomes = await both_tables(tools)
    finally:
        server.stop()
    # Both questions came while both calls were in flight, each on its call's own stream.
    assert isinstance(outcomes[1], MCPAnswerError) and outcomes[1].tool == "book"
    assert outcomes[2] == {"result": "booked for Bo"}


async def test_a_refused_question_no_call_can_be_told_for_fails_every_call_it_may_be_for():
    # Over stdio a handshake-era question names no call, and both were in flight when
    # table 1's came: neither call takes the server's "cancelled" for an answer, and
    # neither raises the other's error as its own.
    command, script = stdio_command()
    async with MCPTools.stdio(
        command, script, "bookings", allow=["book"], elicitation=refuse_table_1, mode="legacy"
    ) as tools:
        outcomes = await both_tables(tools)
    for table in (1, 2):
        failed = outcomes[table]
        assert type(failed) is MCPToolError and failed.tool == "book"
        assert failed.detail.startswith(
            "the server asked 'Who books table 1?' while 2 calls were in flight, and the "
            "answer was refused (MCPAnswerError: the answer does not fit the form"
        )
        assert isinstance(failed.__cause__, MCPAnswerError)
    assert outcomes[1] is not outcomes[2]


async def test_over_stdio_a_question_asked_while_its_call_is_alone_is_that_calls():
    command, script = stdio_command()
    async with MCPTools.stdio(
        command, script, "bookings", allow=["book"], elicitation=refuse_table_1, mode="legacy"
    ) as tools:
        with pytest.raises(MCPAnswerError) as refused:
            await tools.call("book", {"table": 1, "together": 1})
        assert await tools.call("book", {"table": 2, "together": 1}) == {"result": "booked for Bo"}
    assert refused.value.tool == "book"


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
