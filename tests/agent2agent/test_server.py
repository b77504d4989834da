"""A graph served over A2A, driven by the official Python SDK's client over both bindings."""

from __future__ import annotations

import os
import socket
from typing import Any

import anyio
import attrs
import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError
from google.protobuf import json_format, struct_pb2

from agentgraph import AgentContext, UsageError, node
from agentgraph.a2a import a2a_app
from agentgraph.checkpoint import MemoryStore, SQLiteStore, read_thread

from .serving import SECRET, approves, asks, echo, graph_of, leaks, served, waits

pytestmark = pytest.mark.anyio

BINDINGS = ["JSONRPC", "HTTP+JSON"]
S = pb.TaskState


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the A2A SDK's server and client run on asyncio only


def _message(text: str, **ids: str) -> pb.Message:
    return pb.Message(message_id=f"m-{text}", role=pb.ROLE_USER, parts=[pb.Part(text=text)], **ids)


async def _client(http: httpx.AsyncClient, url: str, binding: str, *, streaming: bool = True):
    config = ClientConfig(
        httpx_client=http, supported_protocol_bindings=[binding], streaming=streaming
    )
    return await ClientFactory(config).create_from_url(url)


async def _events(client, message: pb.Message) -> list[pb.StreamResponse]:
    return [event async for event in client.send_message(pb.SendMessageRequest(message=message))]


def _states(events: list[pb.StreamResponse]) -> list[str]:
    out = []
    for event in events:
        kind = event.WhichOneof("payload")
        if kind == "task":
            out.append(S.Name(event.task.status.state))
        elif kind == "status_update":
            out.append(S.Name(event.status_update.status.state))
        elif kind == "artifact_update":
            out.append("artifact:" + event.artifact_update.artifact.parts[0].text)
    return out


async def test_the_card_names_the_graph_its_skill_bindings_and_streaming():
    async with (
        served(lambda url: a2a_app(graph_of(echo), url=url, description="Echoes.")) as url,
        httpx.AsyncClient() as http,
    ):
        card = (await http.get(url + "/.well-known/agent-card.json")).json()
    assert card["name"] == "paint" and card["description"] == "Echoes."
    assert card["capabilities"] == {"streaming": True}
    assert [
        (i["url"], i["protocolBinding"], i["protocolVersion"]) for i in card["supportedInterfaces"]
    ] == [
        (url, "JSONRPC", "1.0"),
        (url, "HTTP+JSON", "1.0"),
    ]
    assert [(s["id"], s["name"]) for s in card["skills"]] == [("paint", "paint")]
    assert card["defaultInputModes"] == ["text/plain"]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_send_without_streaming_returns_the_completed_task(binding):
    async with (
        served(lambda url: a2a_app(graph_of(echo), url=url)) as url,
        httpx.AsyncClient() as http,
    ):
        client = await _client(http, url, binding, streaming=False)
        (event,) = await _events(client, _message("hi"))
    task = event.task
    assert S.Name(task.status.state) == "TASK_STATE_COMPLETED"
    assert [(a.artifact_id, a.parts[0].text) for a in task.artifacts] == [("output", "echo: hi")]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_question_is_input_required_and_the_answer_resumes_the_run(binding):
    store = MemoryStore()
    async with (
        served(lambda url: a2a_app(graph_of(asks), url=url, store=store)) as url,
        httpx.AsyncClient() as http,
    ):
        client = await _client(http, url, binding)
        first = await _events(client, _message("car"))
        update = first[-1].status_update
        ids = {"task_id": update.task_id, "context_id": update.context_id}
        second = await _events(client, _message("red", **ids))
        done = await client.get_task(pb.GetTaskRequest(id=update.task_id))
    assert _states(first) == [
        "TASK_STATE_SUBMITTED",
        "TASK_STATE_WORKING",
        "TASK_STATE_INPUT_REQUIRED",
    ]
    assert update.status.message.parts[0].text == "which colour for car?"
    assert _states(second) == ["TASK_STATE_WORKING", "artifact:car in red", "TASK_STATE_COMPLETED"]
    assert S.Name(done.status.state) == "TASK_STATE_COMPLETED"
    # The task is the run, and the context the thread.
    log = await store.load(update.task_id)
    assert log is not None and log.run.thread == update.context_id
    thread = await read_thread(store, update.context_id)
    assert thread.head == update.task_id


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_wrong_answer_to_an_approval_keeps_the_task_waiting(binding):
    from agentgraph import Runtime, node
    from agentgraph.llm import ToolCall

    @node
    async def approve(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
        ok = await rt.interrupt(ToolCall("c1", "delete", {"path": "/tmp/x"}))
        return ctx.with_input(f"approved={ok!r}")

    store = MemoryStore()
    async with (
        served(lambda url: a2a_app(graph_of(approve), url=url, store=store)) as url,
        httpx.AsyncClient() as http,
    ):
        client = await _client(http, url, binding)
        first = await _events(client, _message("go"))
        update = first[-1].status_update
        ids = {"task_id": update.task_id, "context_id": update.context_id}
        wrong = await _events(client, _message("perhaps", **ids))
        right = await _events(client, _message("no", **ids))
    question = json_format.MessageToDict(update.status.message)
    assert question["parts"][1]["data"]["tool"] == "delete"
    assert _states(wrong)[-1] == "TASK_STATE_INPUT_REQUIRED"
    assert "answer yes or no" in wrong[-1].status_update.status.message.parts[0].text
    assert _states(right)[-2:] == ["artifact:approved=False", "TASK_STATE_COMPLETED"]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_cancel_ends_the_task_canceled_with_the_last_context(binding):
    async with (
        served(lambda url: a2a_app(graph_of(echo, waits), url=url, store=MemoryStore())) as url,
        httpx.AsyncClient() as http,
    ):
        client = await _client(http, url, binding)
        seen: list[pb.StreamResponse] = []
        working = anyio.Event()

        async def follow() -> None:
            async for event in client.send_message(pb.SendMessageRequest(message=_message("hi"))):
                seen.append(event)
                if event.WhichOneof("payload") == "status_update":
                    working.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(follow)
            await working.wait()
            task_id = seen[0].task.id
            cancelled = await client.cancel_task(pb.CancelTaskRequest(id=task_id))
            stored = await client.get_task(pb.GetTaskRequest(id=task_id))
            tg.cancel_scope.cancel()
    assert S.Name(cancelled.status.state) == "TASK_STATE_CANCELED"
    message = json_format.MessageToDict(stored.status.message)
    assert S.Name(stored.status.state) == "TASK_STATE_CANCELED"
    assert message["parts"][0]["text"] == "cancelled after step 1"
    assert message["parts"][1]["data"]["input"] == "echo: hi"


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_failure_is_failed_with_the_error_masked(binding):
    async with (
        served(lambda url: a2a_app(graph_of(leaks), url=url)) as url,
        httpx.AsyncClient() as http,
    ):
        client = await _client(http, url, binding)
        events = await _events(client, _message("hi"))
    status = events[-1].status_update.status
    assert S.Name(status.state) == "TASK_STATE_FAILED"
    text = status.message.parts[0].text
    assert "ValueError" in text and SECRET not in text and SECRET[:12] not in text


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_task_waiting_for_input_survives_a_server_restart(binding, tmp_path):
    path = tmp_path / "a2a.db"
    async with (
        SQLiteStore(path) as store,
        served(lambda url: a2a_app(graph_of(asks), url=url, store=store)) as url,
        httpx.AsyncClient() as http,
    ):
        client = await _client(http, url, binding)
        update = (await _events(client, _message("boat")))[-1].status_update
    # A new process in all but name: a new store object over the file, a new app, a new port.
    async with (
        SQLiteStore(path) as store,
        served(lambda url: a2a_app(graph_of(asks), url=url, store=store)) as url,
        httpx.AsyncClient() as http,
    ):
        client = await _client(http, url, binding)
        ids = {"task_id": update.task_id, "context_id": update.context_id}
        events = await _events(client, _message("blue", **ids))
        listed = await client.list_tasks(pb.ListTasksRequest(context_id=update.context_id))
    assert _states(events)[-2:] == ["artifact:boat in blue", "TASK_STATE_COMPLETED"]
    assert [t.id for t in listed.tasks] == [update.task_id]


async def test_a_malformed_request_gets_the_protocols_error_object():
    async with (
        served(lambda url: a2a_app(graph_of(echo), url=url)) as url,
        httpx.AsyncClient(headers={"A2A-Version": "1.0"}) as http,
    ):
        parse = await http.post(url + "/", content=b'{"jsonrpc": "2.0", ')
        shape = await http.post(
            url + "/",
            json={"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {"message": 3}},
        )
        rest = await http.post(url + "/message:send", content=b"[1, 2")
    assert parse.json()["error"]["code"] == -32700 and parse.json()["id"] is None
    assert shape.json()["id"] == 7 and shape.json()["error"]["code"] in (-32600, -32602)
    assert rest.status_code == 400 and "error" in rest.json()
    for response in (parse, shape, rest):
        assert "Traceback" not in response.text and 'File "' not in response.text


@pytest.mark.parametrize("binding", BINDINGS)
async def test_an_oversized_message_is_refused_before_any_run(binding):
    store = MemoryStore()
    make = lambda url: a2a_app(graph_of(echo), url=url, store=store, max_message_bytes=200)  # noqa: E731
    async with served(make) as url, httpx.AsyncClient() as http:
        client = await _client(http, url, binding)
        with pytest.raises(Exception, match="this agent takes at most 200") as caught:
            await _events(client, _message("x" * 500))
    assert "Traceback" not in str(caught.value)
    assert store.run_ids == ()


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_trio_is_refused_at_start_and_on_each_request_naming_asyncio():
    store = MemoryStore()
    app = a2a_app(graph_of(echo), url="http://127.0.0.1:9", store=store)
    remedy = "run this code under asyncio (anyio.run(..., backend='asyncio'))"
    with pytest.raises(UsageError) as at_start:
        async with app.router.lifespan_context(app):
            pass
    assert str(at_start.value) == (
        f"an A2A server needs asyncio: the A2A SDK runs on asyncio only, not trio; {remedy}"
    )
    # An ASGI server that skips the lifespan still gets the refusal, not the SDK's asyncio calls.
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://a") as http:
        with pytest.raises(UsageError, match="needs asyncio") as on_request:
            await http.post("/message:send", json={"message": {"parts": [{"text": "hi"}]}})
    assert "not trio" in str(on_request.value)
    assert store.run_ids == ()


def _contexts(events: list[pb.StreamResponse]) -> set[str]:
    out = set()
    for event in events:
        kind = event.WhichOneof("payload")
        out.add(getattr(event, kind).context_id)
    return out


@pytest.mark.parametrize("binding", BINDINGS)
async def test_answers_naming_only_their_task_continue_its_context(binding):
    # A2A: the agent infers contextId from the task; "hmm" keeps the task waiting, "yes" answers.
    store = MemoryStore()
    async with (
        served(lambda url: a2a_app(graph_of(approves), url=url, store=store)) as url,
        httpx.AsyncClient() as http,
    ):
        client = await _client(http, url, binding)
        first = await _events(client, _message("go"))
        update = first[-1].status_update
        unclear = await _events(client, _message("hmm", task_id=update.task_id))
        answer = await _events(client, _message("yes", task_id=update.task_id))
        done = await client.get_task(pb.GetTaskRequest(id=update.task_id))
    assert _states(unclear) == ["TASK_STATE_INPUT_REQUIRED"]
    assert _states(answer)[-2:] == ["artifact:approved=True", "TASK_STATE_COMPLETED"]
    assert _contexts(first) == _contexts(unclear) == _contexts(answer) == {update.context_id}
    assert done.context_id == update.context_id
    assert [m.context_id for m in done.history] == [update.context_id] * len(done.history)
    thread = await read_thread(store, update.context_id)
    assert thread.head == update.task_id


def _slow_or(other):
    """A graph that waits forever on the input "slow", else runs `other`."""
    from agentgraph import GraphBuilder

    with GraphBuilder[str, str]("paint") as g:
        g.start.edge_to(lambda ctx: waits if ctx.input == "slow" else other, targets=(waits, other))
        other.edge_to(g.finish)
        waits.edge_to(g.finish)
    return g.build()


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_second_task_in_a_working_context_is_refused_with_a_clean_error(binding):
    store = MemoryStore()
    async with (
        served(lambda url: a2a_app(_slow_or(echo), url=url, store=store)) as url,
        httpx.AsyncClient() as http,
    ):
        client = await _client(http, url, binding)
        seen: list[pb.StreamResponse] = []
        working = anyio.Event()

        async def follow() -> None:
            message = _message("slow")
            async for event in client.send_message(pb.SendMessageRequest(message=message)):
                seen.append(event)
                if event.WhichOneof("payload") == "status_update":
                    working.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(follow)
            await working.wait()
            first = seen[0].task
            with pytest.raises(UnsupportedOperationError) as refused:
                await _events(client, _message("again", context_id=first.context_id))
            listed = await client.list_tasks(pb.ListTasksRequest(context_id=first.context_id))
            await client.cancel_task(pb.CancelTaskRequest(id=first.id))
            tg.cancel_scope.cancel()
        # Once the first task stopped, the context takes the next one.
        after = await _events(client, _message("later", context_id=first.context_id))
    said = str(refused.value)
    assert "one task at a time per contextId" in said
    for leak in ("owner", "pid", "lease", "thread:", socket.gethostname()):
        assert leak not in said
    assert [t.id for t in listed.tasks] == [first.id]  # nothing was created for the refused one
    assert _states(after) == [
        "TASK_STATE_SUBMITTED",
        "TASK_STATE_WORKING",
        "artifact:echo: later",
        "TASK_STATE_COMPLETED",
    ]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_an_answer_while_another_task_of_the_context_works_keeps_waiting(binding):
    store = MemoryStore()
    async with (
        served(lambda url: a2a_app(_slow_or(asks), url=url, store=store)) as url,
        httpx.AsyncClient() as http,
    ):
        client = await _client(http, url, binding)
        asked = (await _events(client, _message("car")))[-1].status_update
        working = anyio.Event()

        async def slow() -> None:
            message = _message("slow", context_id=asked.context_id)
            async for event in client.send_message(pb.SendMessageRequest(message=message)):
                if event.WhichOneof("payload") == "status_update":
                    working.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await working.wait()
            with pytest.raises(Exception, match="one task at a time per contextId"):
                await _events(client, _message("red", task_id=asked.task_id))
            waiting = await client.get_task(pb.GetTaskRequest(id=asked.task_id))
            tg.cancel_scope.cancel()
    assert S.Name(waiting.status.state) == "TASK_STATE_INPUT_REQUIRED"
    assert waiting.status.message.parts[0].text == "which colour for car?"


@pytest.mark.parametrize("binding", BINDINGS)
async def test_cancelling_a_task_waiting_for_input_says_the_step_reached(binding, tmp_path):
    async with (
        SQLiteStore(tmp_path / "a2a.db") as store,
        served(lambda url: a2a_app(graph_of(echo, asks), url=url, store=store)) as url,
        httpx.AsyncClient() as http,
    ):
        client = await _client(http, url, binding)
        update = (await _events(client, _message("boat")))[-1].status_update
        cancelled = await client.cancel_task(pb.CancelTaskRequest(id=update.task_id))
        # And on a server started since, where the waiting task was never woken.
        waiting = (await _events(client, _message("kite")))[-1].status_update
    async with (
        SQLiteStore(tmp_path / "a2a.db") as store,
        served(lambda url: a2a_app(graph_of(echo, asks), url=url, store=store)) as url,
        httpx.AsyncClient() as http,
    ):
        client = await _client(http, url, binding)
        restarted = await client.cancel_task(pb.CancelTaskRequest(id=waiting.task_id))
        stored = await client.get_task(pb.GetTaskRequest(id=waiting.task_id))
    for task, said in (
        (cancelled, "echo: boat"),
        (restarted, "echo: kite"),
        (stored, "echo: kite"),
    ):
        message = json_format.MessageToDict(task.status.message)
        assert S.Name(task.status.state) == "TASK_STATE_CANCELED"
        assert message["parts"][0]["text"] == "cancelled after step 1"
        assert message["parts"][1]["data"]["input"] == said


def _data_message(value: object) -> pb.Message:
    part = pb.Part(data=json_format.ParseDict(value, struct_pb2.Value()))
    return pb.Message(message_id="m-data", role=pb.ROLE_USER, parts=[part])


@attrs.frozen
class Stay:
    city: str
    nights: int
    price: float = 0.0


@node
def stay_of(ctx: AgentContext[Stay]) -> AgentContext[str]:
    stay = ctx.input
    return ctx.with_input(f"{stay.nights!r} nights in {stay.city} at {stay.price!r}")


@node
def kinds(ctx: AgentContext[Any]) -> AgentContext[str]:
    return ctx.with_input(repr(sorted(ctx.input.items())))


def _typed(step: Any, tp: Any) -> Any:
    from agentgraph import GraphBuilder

    with GraphBuilder[tp, str]("typed") as g:
        g.start.edge_to(step).edge_to(g.finish)
    return g.build()


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_data_part_is_validated_strictly_and_its_integers_are_ints(binding):
    store = MemoryStore()
    async with (
        served(lambda url: a2a_app(_typed(stay_of, Stay), url=url, store=store)) as url,
        httpx.AsyncClient() as http,
    ):
        client = await _client(http, url, binding, streaming=False)
        # Every number of a data part is a double: the type says which are integers.
        (done,) = await _events(client, _data_message({"city": "Oslo", "nights": 2, "price": 90}))
        with pytest.raises(InvalidParamsError) as misspelt:
            await _events(client, _data_message({"city": "Oslo", "nights": 2, "prize": 90}))
        with pytest.raises(InvalidParamsError) as fractional:
            await _events(client, _data_message({"city": "Oslo", "nights": 2.5}))
    (outcome,) = done.task.artifacts
    assert outcome.parts[0].text == "2 nights in Oslo at 90.0"
    assert "prize: unexpected field" in str(misspelt.value)
    assert "nights: expected int, got 2.5" in str(fractional.value)
    assert len(store.run_ids) == 2  # one task and its run: the refused messages made nothing


async def test_an_untyped_graph_gets_data_as_it_came_every_number_a_double():
    async with (
        served(lambda url: a2a_app(_typed(kinds, Any), url=url)) as url,
        httpx.AsyncClient() as http,
    ):
        client = await _client(http, url, "JSONRPC", streaming=False)
        (done,) = await _events(client, _data_message({"n": 2, "xs": [1, 2.5]}))
    assert done.task.artifacts[0].parts[0].text == "[('n', 2.0), ('xs', [1.0, 2.5])]"


@attrs.frozen
class Booked:
    city: str
    nights: int
    price: float


@node
def booked(ctx: AgentContext[str]) -> AgentContext[Booked]:
    return ctx.with_input(Booked(ctx.input, 2, 90.0))


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_typed_output_carries_its_schema_to_narrow_its_doubles_by(binding):
    from a2a.helpers.proto_helpers import get_data_parts

    from agentgraph import GraphBuilder
    from agentgraph.a2a._numbers import whole_numbers
    from agentgraph.a2a._parts import SCHEMA_KEY

    with GraphBuilder[str, Booked]("booking") as g:
        g.start.edge_to(booked).edge_to(g.finish)
    async with (
        served(lambda url: a2a_app(g.build(), url=url)) as url,
        httpx.AsyncClient() as http,
    ):
        client = await _client(http, url, binding, streaming=False)
        (done,) = await _events(client, _message("Oslo"))
    (output,) = done.task.artifacts
    (sent,) = get_data_parts(output.parts)
    assert sent == {"city": "Oslo", "nights": 2.0, "price": 90.0}  # every number a double
    schema = json_format.MessageToDict(output.metadata)[SCHEMA_KEY]
    narrowed = whole_numbers(schema, sent)
    assert narrowed == {"city": "Oslo", "nights": 2, "price": 90.0}
    assert type(narrowed["nights"]) is int and type(narrowed["price"]) is float


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_context_busy_on_another_server_rejects_cleanly(binding):
    # Another server sharing the store holds the thread: its lease refuses the turn.
    from agentgraph.checkpoint._lease import new_owner

    store = MemoryStore()
    async with (
        served(lambda url: a2a_app(graph_of(asks), url=url, store=store)) as url,
        httpx.AsyncClient() as http,
    ):
        client = await _client(http, url, binding)
        asked = (await _events(client, _message("car")))[-1].status_update
        lease = await store.acquire(f"thread:{asked.context_id}", owner=new_owner())
        try:
            new = await _events(client, _message("boat", context_id=asked.context_id))
            answer = await _events(client, _message("red", task_id=asked.task_id))
        finally:
            store.release(lease)
        later = await _events(client, _message("red", task_id=asked.task_id))
    for events, state in ((new, "TASK_STATE_REJECTED"), (answer, "TASK_STATE_INPUT_REQUIRED")):
        status = events[-1].status_update.status
        said = status.message.parts[0].text
        assert S.Name(status.state) == state
        assert "one task at a time per contextId" in said
        for leak in ("owner", "lease", "thread:", socket.gethostname(), str(os.getpid())):
            assert leak not in said
    assert _states(later)[-2:] == ["artifact:car in red", "TASK_STATE_COMPLETED"]
