"""The official `openai` SDK reads the fake server's Responses API, and validates it strictly.

The SDK builds its models without validation; each answer is also checked
with the SDK's own pydantic types (`Response`, `ResponseStreamEvent`), so a
missing or mistyped field in the fake fails here.
"""

from collections.abc import AsyncIterator

import httpx
import openai
import orjson
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from agentgraph.llm import ChatResponse, Message, ToolCall, Usage
from agentgraph.testing import CutStream, ErrorResponse, FakeServer, ScriptedModel, StreamError

PARALLEL = ScriptedModel.tool_calls(
    ("get_weather", {"city": "Paris"}),
    ("get_time", {"zone": "Europe/Paris"}),
)
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}
EVENTS: TypeAdapter[ResponseStreamEvent] = TypeAdapter(ResponseStreamEvent)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(server: FakeServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=server.openai_url, api_key="sk-test", max_retries=0
    ) as c:
        yield c


@pytest.mark.anyio
async def test_text_answer_with_usage(server, client):
    usage = Usage(
        input_tokens=11,
        output_tokens=7,
        cache_read_tokens=3,
        cache_write_tokens=1,
        reasoning_tokens=2,
    )
    server.add(ChatResponse(Message.assistant("Bonjour"), usage=usage, model="gpt-4o-2024"))
    raw = await client.responses.with_raw_response.create(
        model="gpt-4o", input="hi", instructions="Answer in French."
    )
    response = raw.parse()
    Response.model_validate(raw.http_response.json())
    assert raw.headers["x-request-id"].startswith("req_")
    assert response.output_text == "Bonjour"
    assert response.status == "completed" and response.model == "gpt-4o-2024"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (11, 7)
    assert response.usage.input_tokens_details.cached_tokens == 3
    assert response.usage.output_tokens_details.reasoning_tokens == 2
    assert server.requests[0].chat_request().messages[0] == Message.system("Answer in French.")


@pytest.mark.anyio
async def test_function_calls_with_reasoning_round_trip(server, client):
    server.add(PARALLEL, "Sunny, and it is noon.")
    raw = await client.responses.with_raw_response.create(
        model="gpt-5-mini",
        input=[{"role": "user", "content": "weather and time in Paris?"}],
        tools=[WEATHER],
        reasoning={"effort": "low"},
        store=False,
        include=["reasoning.encrypted_content"],
    )
    Response.model_validate(raw.http_response.json())
    first = raw.parse()
    kinds = [item.type for item in first.output]
    assert kinds == ["reasoning", "function_call", "function_call"]
    reasoning = first.output[0]
    assert reasoning.type == "reasoning" and reasoning.encrypted_content
    calls = [item for item in first.output if item.type == "function_call"]
    assert [c.name for c in calls] == ["get_weather", "get_time"]
    # The SDK's own items go back as input, with the outputs after them.
    history = [
        {"role": "user", "content": "weather and time in Paris?"},
        *[item.model_dump(exclude_none=True, warnings=False) for item in first.output],
        *[{"type": "function_call_output", "call_id": c.call_id, "output": "ok"} for c in calls],
    ]
    second = await client.responses.create(
        model="gpt-5-mini",
        input=history,
        tools=[WEATHER],
        store=False,
        include=["reasoning.encrypted_content"],
    )
    assert second.output_text == "Sunny, and it is noon."


@pytest.mark.anyio
async def test_stream_events_validate_and_assemble(server, client):
    server.add(
        Message.assistant(
            "Calling.", tool_calls=(ToolCall("call_1", "get_weather", {"city": "Paris"}),)
        )
    )
    events = []
    async with client.responses.stream(
        model="gpt-5-mini",
        input="weather?",
        tools=[WEATHER],
        reasoning={"effort": "medium", "summary": "auto"},
    ) as stream:
        async for event in stream:
            events.append(event)
        final = await stream.get_final_response()
    names = [e.type for e in events]
    assert names[:2] == ["response.created", "response.in_progress"]
    assert names[-1] == "response.completed"
    assert "response.output_text.delta" in names
    assert "response.function_call_arguments.delta" in names
    sequence = [e.sequence_number for e in events]
    assert sequence == sorted(sequence) and len(set(sequence)) == len(sequence)
    assert final.output_text == "Calling."
    call = next(item for item in final.output if item.type == "function_call")
    assert call.arguments == '{"city":"Paris"}' and call.call_id == "call_1"


@pytest.mark.anyio
async def test_raw_stream_events_validate_strictly(server):
    server.add(
        Message.assistant(
            "Calling.",
            tool_calls=(ToolCall("call_1", "get_weather", {"city": "Paris"}),),
            reasoning="Look it up.",
        )
    )
    body = {
        "model": "gpt-5-mini",
        "input": "weather?",
        "tools": [WEATHER],
        "reasoning": {"effort": "medium", "summary": "auto"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "stream": True,
    }
    headers = {"authorization": "Bearer sk-test"}
    async with (
        httpx.AsyncClient() as http,
        http.stream("POST", f"{server.openai_url}/responses", json=body, headers=headers) as r,
    ):
        assert r.headers["content-type"].startswith("text/event-stream")
        frames = (await r.aread()).decode().split("\n\n")
    events = []
    for frame in filter(None, frames):
        name, data = frame.split("\n")
        event = orjson.loads(data.removeprefix("data: "))
        assert name == f"event: {event['type']}"
        events.append(EVENTS.validate_python(event))
    assert {e.type for e in events} >= {
        "response.reasoning_summary_text.delta",
        "response.output_text.delta",
        "response.function_call_arguments.delta",
        "response.output_item.done",
    }
    Response.model_validate(orjson.loads(frames[-2].split("data: ")[1])["response"])


@pytest.mark.anyio
async def test_incomplete_answer(server, client):
    server.add(ChatResponse(Message.assistant("Cut sho"), finish_reason="length"))
    response = await client.responses.create(model="gpt-4o", input="hi", max_output_tokens=16)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (ErrorResponse(429, retry_after=1), openai.RateLimitError),
        (ErrorResponse(401), openai.AuthenticationError),
        (ErrorResponse(500), openai.InternalServerError),
    ],
)
async def test_status_errors(server, client, fault, error):
    server.inject(fault, provider="openai-responses")
    with pytest.raises(error):
        await client.responses.create(model="gpt-4o", input="hi")


@pytest.mark.anyio
async def test_refusals_name_the_parameter(server, client):
    with pytest.raises(openai.BadRequestError) as info:
        await client.responses.create(
            model="gpt-4o",
            input=[{"type": "function_call_output", "call_id": "call_x", "output": "1"}],
        )
    assert "No tool call found" in info.value.message
    with pytest.raises(openai.BadRequestError) as info:
        await client.responses.create(model="gpt-4o", input="hi", reasoning={"effort": "low"})
    assert info.value.code == "unsupported_parameter"
    tool = {**WEATHER, "parameters": {**WEATHER["parameters"], "required": []}}
    with pytest.raises(openai.BadRequestError) as info:
        await client.responses.create(model="gpt-4o", input="hi", tools=[tool])
    assert "Missing 'city'" in info.value.message


@pytest.mark.anyio
async def test_stream_error_event_and_cut_stream(server, client):
    server.add("one two three four five")
    server.inject(StreamError(after_events=3), provider="openai-responses")
    stream = await client.responses.create(model="gpt-4o", input="hi", stream=True)
    events = [event async for event in stream]
    assert [e.type for e in events[:3]] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
    ]
    assert events[-1].type == "error" and events[-1].code == "server_error"
    server.add("one two three four five")
    server.inject(CutStream(after_events=4), provider="openai-responses")
    with pytest.raises(openai.APIError):
        async with client.responses.stream(model="gpt-4o", input="hi") as stream:
            await stream.get_final_response()
