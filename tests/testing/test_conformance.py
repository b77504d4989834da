"""The official SDKs parse the fake server's answers and raise their own errors for its faults."""

import base64
from collections.abc import AsyncIterator

import anthropic
import gigachat
import gigachat.exceptions
import ollama
import openai
import pytest
from gigachat.models import Chat, Function, FunctionCall, Messages

from agentgraph.llm import ChatResponse, Message, ToolCall, Usage
from agentgraph.testing import (
    CutStream,
    ErrorResponse,
    FakeServer,
    MalformedJson,
    ScriptedModel,
    StreamError,
    default_embedding,
)

PARALLEL = ScriptedModel.tool_calls(
    ("get_weather", {"city": "Paris", "units": "c"}),
    ("get_time", {"zone": "Europe/Paris", "nested": {"a": [1, 2.5, 'x"y']}}),
)
USER = [{"role": "user", "content": "hi"}]
CREDENTIALS = base64.b64encode(b"client-id:client-secret").decode()


@pytest.fixture
def anyio_backend() -> str:
    # gigachat's async client takes an asyncio.Lock; the others are run the same way.
    return "asyncio"


@pytest.fixture
async def openai_client(server: FakeServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=server.openai_url, api_key="sk-test", max_retries=0
    ) as c:
        yield c


@pytest.fixture
async def anthropic_client(server: FakeServer) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(base_url=server.url, api_key="sk-ant-test", max_retries=0)
    async with client as c:
        yield c


@pytest.fixture
async def ollama_client(server: FakeServer) -> AsyncIterator[ollama.AsyncClient]:
    async with ollama.AsyncClient(host=server.url) as client:
        yield client


@pytest.fixture
async def giga(server: FakeServer) -> AsyncIterator[gigachat.GigaChat]:
    client = gigachat.GigaChat(
        base_url=server.gigachat_url,
        auth_url=server.gigachat_auth_url,
        credentials=CREDENTIALS,
        scope="GIGACHAT_API_PERS",
        model="GigaChat",
        verify_ssl_certs=False,
        max_retries=0,
    )
    yield client
    await client.aclose()


# -- OpenAI ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_openai_text_answer_with_usage(server, openai_client):
    usage = Usage(input_tokens=11, output_tokens=7, cache_read_tokens=3, reasoning_tokens=2)
    server.add(ChatResponse(Message.assistant("Bonjour"), usage=usage, model="gpt-4o-2024"))
    raw = await openai_client.chat.completions.with_raw_response.create(
        model="gpt-4o", messages=USER
    )
    completion = raw.parse()
    assert raw.headers["x-request-id"].startswith("req_")
    assert completion.choices[0].message.content == "Bonjour"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.model == "gpt-4o-2024"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (11, 7)
    assert completion.usage.total_tokens == 18
    assert completion.usage.prompt_tokens_details.cached_tokens == 3
    assert completion.usage.completion_tokens_details.reasoning_tokens == 2
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"


@pytest.mark.anyio
async def test_openai_parallel_tool_calls(server, openai_client):
    server.add(PARALLEL)
    completion = await openai_client.chat.completions.create(model="gpt-4o", messages=USER)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    calls = choice.message.tool_calls
    assert [c.function.name for c in calls] == ["get_weather", "get_time"]
    assert calls[0].function.arguments == '{"city":"Paris","units":"c"}'
    assert len({c.id for c in calls}) == 2


@pytest.mark.anyio
async def test_openai_stream_text_and_usage_chunk(server, openai_client):
    server.add("Streaming answers arrive in pieces.")
    stream = await openai_client.chat.completions.create(
        model="gpt-4o", messages=USER, stream=True, stream_options={"include_usage": True}
    )
    chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Streaming answers arrive in pieces."
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


@pytest.mark.anyio
async def test_openai_stream_manager_assembles_parallel_tool_calls(server, openai_client):
    server.add(PARALLEL)
    async with openai_client.chat.completions.stream(model="gpt-4o", messages=USER) as stream:
        async for _ in stream:
            pass
        final = await stream.get_final_completion()
    calls = final.choices[0].message.tool_calls
    assert [c.function.name for c in calls] == ["get_weather", "get_time"]
    assert calls[1].function.arguments == ('{"zone":"Europe/Paris","nested":{"a":[1,2.5,"x\\"y"]}}')
    assert final.choices[0].finish_reason == "tool_calls"
    assert final.usage is None


@pytest.mark.anyio
async def test_openai_embeddings_base64_by_default_and_float(server, openai_client):
    default = await openai_client.embeddings.create(
        model="text-embedding-3-small", input=["a", "b"]
    )
    assert server.requests[-1].body["encoding_format"] == "base64"
    assert [d.index for d in default.data] == [0, 1]
    assert default.data[1].embedding == default_embedding("b", 8)
    floats = await openai_client.embeddings.create(
        model="text-embedding-3-small", input="a", encoding_format="float", dimensions=4
    )
    assert floats.data[0].embedding == default_embedding("a", 4)
    assert floats.usage.prompt_tokens == floats.usage.total_tokens == 1


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (ErrorResponse(400), openai.BadRequestError),
        (ErrorResponse(401), openai.AuthenticationError),
        (ErrorResponse(403), openai.PermissionDeniedError),
        (ErrorResponse(404), openai.NotFoundError),
        (ErrorResponse(409), openai.ConflictError),
        (ErrorResponse(422), openai.UnprocessableEntityError),
        (ErrorResponse(429, retry_after=1), openai.RateLimitError),
        (ErrorResponse(500), openai.InternalServerError),
        (ErrorResponse(502), openai.InternalServerError),
        (ErrorResponse(503), openai.InternalServerError),
    ],
)
async def test_openai_status_errors(server, openai_client, fault, error):
    server.inject(fault)
    with pytest.raises(error) as caught:
        await openai_client.chat.completions.create(model="gpt-4o", messages=USER)
    assert caught.value.status_code == fault.status
    if fault.status != 502:
        assert caught.value.request_id is not None
        assert isinstance(caught.value.body, dict) and caught.value.body["message"]


@pytest.mark.anyio
async def test_openai_insufficient_quota_and_html_gateway_page(server, openai_client):
    server.inject(ErrorResponse(429, code="insufficient_quota"))
    with pytest.raises(openai.RateLimitError) as caught:
        await openai_client.chat.completions.create(model="gpt-4o", messages=USER)
    assert caught.value.code == caught.value.type == "insufficient_quota"
    server.inject(ErrorResponse(502))
    with pytest.raises(openai.InternalServerError) as gateway:
        await openai_client.chat.completions.create(model="gpt-4o", messages=USER)
    assert gateway.value.response.headers["content-type"].startswith("text/html")
    assert "502 Bad Gateway" in gateway.value.response.text


@pytest.mark.anyio
async def test_openai_sdk_retries_honour_retry_after_ms(server):
    server.add("finally")
    server.inject(ErrorResponse(429, retry_after_ms=1), times=2)
    async with openai.AsyncOpenAI(base_url=server.openai_url, api_key="k", max_retries=2) as client:
        completion = await client.chat.completions.create(model="gpt-4o", messages=USER)
    assert completion.choices[0].message.content == "finally"
    counts = [r.headers["x-stainless-retry-count"] for r in server.requests]
    assert counts == ["0", "1", "2"]


@pytest.mark.anyio
async def test_openai_stream_faults(server, openai_client):
    server.inject(StreamError(2, "boom"))
    server.inject(CutStream(2))
    for expected in (openai.APIError, openai.APIConnectionError):
        server.add("a long enough answer to stream")
        stream = await openai_client.chat.completions.create(
            model="gpt-4o", messages=USER, stream=True
        )
        with pytest.raises(expected):
            async for _ in stream:
                pass


@pytest.mark.anyio
async def test_openai_rejects_unanswered_tool_calls(server, openai_client):
    messages = [
        *USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
    ]
    with pytest.raises(openai.BadRequestError, match="did not have response messages: call_1"):
        await openai_client.chat.completions.create(model="gpt-4o", messages=messages)


# -- Anthropic -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_anthropic_text_and_parallel_tool_use(server, anthropic_client):
    server.add("Hello", PARALLEL)
    text = await anthropic_client.messages.create(model="claude", max_tokens=64, messages=USER)
    assert text.content[0].type == "text" and text.content[0].text == "Hello"
    assert text.stop_reason == "end_turn"
    assert text.usage.output_tokens > 0
    tools = await anthropic_client.messages.create(model="claude", max_tokens=64, messages=USER)
    assert tools.stop_reason == "tool_use"
    assert [(b.name, b.input) for b in tools.content if b.type == "tool_use"] == [
        ("get_weather", {"city": "Paris", "units": "c"}),
        ("get_time", {"zone": "Europe/Paris", "nested": {"a": [1, 2.5, 'x"y']}}),
    ]
    headers = server.requests[0].headers
    # anthropic 2.x sends the key as a bearer token and a dated version header.
    assert headers["authorization"] == "Bearer sk-ant-test"
    assert headers["anthropic-version"]


@pytest.mark.anyio
async def test_anthropic_stream_with_thinking_and_tools(server, anthropic_client):
    calls = (ToolCall("", "lookup", {"q": "fake"}), ToolCall("", "count", {}))
    server.add(Message.assistant("Let me look.", tool_calls=calls, reasoning="Think first."))
    async with anthropic_client.messages.stream(
        model="claude", max_tokens=64, messages=USER
    ) as stream:
        kinds = [event.type async for event in stream]
        final = await stream.get_final_message()
    assert kinds[0] == "message_start" and "content_block_delta" in kinds
    assert [b.type for b in final.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert final.content[0].thinking == "Think first."
    assert final.content[1].text == "Let me look."
    assert final.content[2].input == {"q": "fake"} and final.content[3].input == {}
    assert final.stop_reason == "tool_use"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, anthropic.BadRequestError),
        (401, anthropic.AuthenticationError),
        (403, anthropic.PermissionDeniedError),
        (404, anthropic.NotFoundError),
        (413, anthropic.RequestTooLargeError),
        (429, anthropic.RateLimitError),
        (500, anthropic.InternalServerError),
        (503, anthropic.ServiceUnavailableError),
        (504, anthropic.DeadlineExceededError),
        (529, anthropic.OverloadedError),
    ],
)
async def test_anthropic_status_errors(server, anthropic_client, status, error):
    server.inject(ErrorResponse(status, retry_after=3))
    with pytest.raises(error) as caught:
        await anthropic_client.messages.create(model="claude", max_tokens=8, messages=USER)
    assert caught.value.status_code == status
    assert caught.value.response.headers["retry-after"] == "3"
    assert caught.value.body["type"] == "error"


@pytest.mark.anyio
async def test_anthropic_in_stream_error_and_cut_stream(server, anthropic_client):
    server.inject(StreamError(3, "Overloaded"))
    server.add("some text to stream")
    with pytest.raises(anthropic.APIStatusError, match="overloaded_error"):
        async with anthropic_client.messages.stream(
            model="claude", max_tokens=8, messages=USER
        ) as stream:
            async for _ in stream:
                pass
    server.inject(CutStream(3))
    server.add("some text to stream")
    with pytest.raises(Exception, match="incomplete chunked read"):
        async with anthropic_client.messages.stream(
            model="claude", max_tokens=8, messages=USER
        ) as stream:
            async for _ in stream:
                pass


# -- Ollama ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_ollama_chat_stream_and_tools(server, ollama_client):
    server.add("Hi from llama", PARALLEL, "streamed reply")
    reply = await ollama_client.chat(model="llama3.2", messages=USER, stream=False)
    assert reply.message.content == "Hi from llama"
    assert reply.done and reply.done_reason == "stop"
    assert reply.prompt_eval_count and reply.eval_count
    tools = await ollama_client.chat(model="llama3.2", messages=USER, stream=False)
    assert [(c.function.name, dict(c.function.arguments)) for c in tools.message.tool_calls] == [
        ("get_weather", {"city": "Paris", "units": "c"}),
        ("get_time", {"zone": "Europe/Paris", "nested": {"a": [1, 2.5, 'x"y']}}),
    ]
    parts = [
        p async for p in await ollama_client.chat(model="llama3.2", messages=USER, stream=True)
    ]
    assert "".join(p.message.content or "" for p in parts) == "streamed reply"
    assert [p.done for p in parts][-1] is True


@pytest.mark.anyio
async def test_ollama_embed(server, ollama_client):
    result = await ollama_client.embed(model="nomic-embed-text", input=["one", "two"])
    assert [list(v) for v in result.embeddings] == [
        default_embedding("one", 8),
        default_embedding("two", 8),
    ]
    single = await ollama_client.embed(model="nomic-embed-text", input="one", dimensions=3)
    assert len(single.embeddings) == 1 and len(single.embeddings[0]) == 3


@pytest.mark.anyio
async def test_ollama_errors(server, ollama_client):
    server.inject(ErrorResponse(404, message="model 'nope' not found"))
    with pytest.raises(ollama.ResponseError) as caught:
        await ollama_client.chat(model="nope", messages=USER, stream=False)
    assert caught.value.status_code == 404 and caught.value.error == "model 'nope' not found"
    server.inject(ErrorResponse(503))
    with pytest.raises(ollama.ResponseError, match="server busy") as caught:
        await ollama_client.chat(model="x", messages=USER, stream=False)
    assert caught.value.status_code == 503
    server.inject(StreamError(1, "runner crashed"))
    server.add("a streamed reply")
    with pytest.raises(ollama.ResponseError, match="runner crashed"):
        async for _ in await ollama_client.chat(model="x", messages=USER, stream=True):
            pass


@pytest.mark.anyio
async def test_ollama_rejects_string_arguments_in_history(server, ollama_client):
    history = [
        *USER,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "f", "arguments": '{"a": 1}'}}],
        },
    ]
    # The SDK validates its own types first, so send the bad history raw.
    with pytest.raises(ollama.ResponseError, match="cannot unmarshal") as caught:
        await ollama_client._request_raw(
            "POST", "/api/chat", json={"model": "x", "messages": history, "stream": False}
        )
    assert caught.value.status_code == 400


# -- GigaChat --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_gigachat_chat_stream_and_embeddings(server, giga):
    server.add("Привет!", "потоковый ответ")
    reply = await giga.achat(Chat(messages=[Messages(role="user", content="hi")]))
    assert reply.choices[0].message.content == "Привет!"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens
    pieces = [c async for c in giga.astream(Chat(messages=[Messages(role="user", content="x")]))]
    assert "".join(c.choices[0].delta.content or "" for c in pieces) == "потоковый ответ"
    assert pieces[-1].choices[0].finish_reason == "stop"
    embeddings = await giga.aembeddings(["one"])
    assert embeddings.data[0].embedding == default_embedding("one", 8)
    oauth = [r for r in server.requests if r.endpoint == "oauth"]
    assert len(oauth) == 1
    assert oauth[0].body == {"scope": "GIGACHAT_API_PERS"}
    assert oauth[0].headers["authorization"] == f"Basic {CREDENTIALS}"


@pytest.mark.anyio
async def test_gigachat_function_call_round_trip(server, giga):
    server.add(ScriptedModel.tool_call("weather", city="Moscow"), "Sunny.")
    function = Function(
        name="weather",
        description="Weather in a city",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}},
    )
    first = await giga.achat(
        Chat(messages=[Messages(role="user", content="weather?")], functions=[function])
    )
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "function_call"
    assert message.function_call == FunctionCall(name="weather", arguments={"city": "Moscow"})
    assert message.functions_state_id
    history = [
        Messages(role="user", content="weather?"),
        message,
        Messages(role="function", name="weather", content='{"result": "sunny"}'),
    ]
    second = await giga.achat(Chat(messages=history, functions=[function]))
    assert second.choices[0].message.content == "Sunny."
    sent = server.requests[-1].body["messages"][1]
    assert sent["function_call"]["arguments"] == {"city": "Moscow"}


@pytest.mark.anyio
async def test_gigachat_refreshes_an_expired_token(server, giga):
    server.add("one", "two")
    await giga.achat(Chat(messages=[Messages(role="user", content="hi")]))
    server.expire_gigachat_tokens()
    reply = await giga.achat(Chat(messages=[Messages(role="user", content="hi")]))
    assert reply.choices[0].message.content == "two"
    endpoints = [r.endpoint for r in server.requests]
    assert endpoints == ["oauth", "chat", "chat", "oauth", "chat"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, gigachat.exceptions.BadRequestError),
        (403, gigachat.exceptions.ForbiddenError),
        (404, gigachat.exceptions.NotFoundError),
        (413, gigachat.exceptions.RequestEntityTooLargeError),
        (422, gigachat.exceptions.UnprocessableEntityError),
        (429, gigachat.exceptions.RateLimitError),
        (500, gigachat.exceptions.ServerError),
        (503, gigachat.exceptions.ServerError),
    ],
)
async def test_gigachat_status_errors(server, giga, status, error):
    server.inject(ErrorResponse(status, retry_after=2), endpoint="chat")
    with pytest.raises(error) as caught:
        await giga.achat(Chat(messages=[Messages(role="user", content="hi")]))
    assert caught.value.status_code == status
    if status == 429:
        assert caught.value.retry_after == 2


@pytest.mark.anyio
async def test_gigachat_bad_credentials_and_malformed_body(server):
    wrong = gigachat.GigaChat(
        base_url=server.gigachat_url,
        auth_url=server.gigachat_auth_url,
        credentials="not base64!",
        model="GigaChat",
        verify_ssl_certs=False,
    )
    with pytest.raises(gigachat.exceptions.AuthenticationError):
        await wrong.achat(Chat(messages=[Messages(role="user", content="hi")]))
    await wrong.aclose()
    server.inject(MalformedJson(), endpoint="oauth")
    fresh = gigachat.GigaChat(
        base_url=server.gigachat_url,
        auth_url=server.gigachat_auth_url,
        credentials=CREDENTIALS,
        model="GigaChat",
        verify_ssl_certs=False,
    )
    with pytest.raises(ValueError):
        await fresh.achat(Chat(messages=[Messages(role="user", content="hi")]))
    await fresh.aclose()
