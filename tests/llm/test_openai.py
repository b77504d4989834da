"""OpenAI-compatible chat completions and embeddings over the real wire format."""

from __future__ import annotations

import base64
import logging
import struct

import anyio
import httpx
import pytest

from agentgraph import (
    AuthenticationError,
    BadRequestError,
    ProviderConfigError,
    ProviderConnectionError,
    ProviderError,
    ResponseFormatError,
    ServerError,
    UnsupportedSetting,
)
from agentgraph.llm import (
    Capabilities,
    ChatModel,
    ChatRequest,
    ChatResponse,
    Embedder,
    Message,
    OpenAIEmbedder,
    OpenAIModel,
    OutputSchema,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
    Usage,
)
from agentgraph.tools import RAW_ARGUMENTS

from .support import Body, Server, Sleeps, collect, json_response, retry, sse, stream_response

pytestmark = pytest.mark.anyio

KEY = "sk-proj-TESTKEY0123456789abcdef"
WEATHER = ToolSpec("get_weather", "Weather for a city", {"type": "object", "properties": {}})
TIME = ToolSpec("get_time")


def model(server: Server, name: str = "gpt-4o-mini", **kwargs) -> OpenAIModel:
    kwargs.setdefault("retry", retry(Sleeps()))
    return OpenAIModel(name, api_key=KEY, http_client=server.client(), **kwargs)


def completion(message: dict, finish: str = "stop", usage: dict | None = None) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini-2024",
        "system_fingerprint": "fp_x",
        "service_tier": "default",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": usage,
    }


def chunk(delta: dict | None = None, finish: str | None = None, **extra) -> dict:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": choices,
        **extra,
    }


def call_fragment(index: int | None = None, id=None, name=None, arguments=None, **extra) -> dict:
    fragment: dict = {**extra}
    if index is not None:
        fragment["index"] = index
    if id is not None:
        fragment["id"] = id
        fragment["type"] = "function"
    function = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    fragment["function"] = function
    return chunk({"tool_calls": [fragment]})


# --- requests ----------------------------------------------------------------------


async def test_plain_text_request(anyio_backend):
    server = Server(
        json_response(
            completion(
                {"role": "assistant", "content": "Hello!", "refusal": None},
                usage={
                    "prompt_tokens": 12,
                    "completion_tokens": 3,
                    "total_tokens": 15,
                    "prompt_tokens_details": {"cached_tokens": 4, "audio_tokens": 0},
                    "completion_tokens_details": {"reasoning_tokens": 1},
                },
            )
        )
    )
    llm = model(server)
    assert isinstance(llm, ChatModel) and llm.name == "gpt-4o-mini"
    request = ChatRequest(
        [Message.system("Be brief."), Message.user("Hi")], temperature=0.2, max_output=50
    )
    response = await llm.request(request)
    sent = server.requests[0]
    assert sent.method == "POST" and sent.url.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert server.body() == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
        "temperature": 0.2,
        "max_completion_tokens": 50,
    }
    usage = Usage(
        input_tokens=12, output_tokens=3, requests=1, reasoning_tokens=1, cache_read_tokens=4
    )
    assert response.message == Message.assistant("Hello!", usage=usage)
    assert (response.finish_reason, response.usage, response.model, response.id) == (
        "stop",
        usage,
        "gpt-4o-mini-2024",
        "chatcmpl-1",
    )


async def test_compat_server_gets_max_tokens_and_no_key(anyio_backend):
    server = Server(json_response(completion({"role": "assistant", "content": "ok"})))
    llm = OpenAIModel("qwen", base_url="http://localhost:8000/v1", http_client=server.client())
    response = await llm.request(ChatRequest([Message.user("x")], max_output=7))
    assert server.body()["max_tokens"] == 7 and "max_completion_tokens" not in server.body()
    assert "authorization" not in server.requests[0].headers
    assert response.usage == Usage(requests=1)  # no usage reported: one request, zero tokens
    server2 = Server(json_response(completion({"role": "assistant", "content": "ok"})))
    explicit = OpenAIModel(
        "m",
        base_url="http://vllm/v1",
        http_client=server2.client(),
        max_tokens_param="max_completion_tokens",
    )
    await explicit.request(ChatRequest([Message.user("x")], max_output=7))
    assert server2.body()["max_completion_tokens"] == 7


async def test_tools_history_and_named_tool_choice(anyio_backend):
    server = Server(json_response(completion({"role": "assistant", "content": "done"})))
    llm = model(server, parallel_tool_calls=False)
    history = [
        Message.user("weather?"),
        Message.assistant(tool_calls=(ToolCall("call_1", "get_weather", {"city": "Paris"}),)),
        Message.tool("call_1", "22C", name="get_weather"),
    ]
    await llm.request(ChatRequest(history, tools=[WEATHER, TIME], tool_choice="get_weather"))
    body = server.body()
    assert body["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
            }
        ],
    }
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "content": "22C"}
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city",
                "parameters": {"type": "object", "properties": {}},
            },
        },
        {
            "type": "function",
            "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}},
        },
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert body["parallel_tool_calls"] is False


async def test_tool_message_without_id_is_refused_before_sending(anyio_backend):
    server = Server()
    with pytest.raises(BadRequestError, match="tool_call_id"):
        await model(server).request(ChatRequest([Message("tool", "x")]))
    assert server.requests == []


async def test_parallel_tool_calls_with_compat_quirks(anyio_backend):
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            },
            {"id": "", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}},
            {"function": {"name": "get_time", "arguments": ""}},
        ],
    }
    server = Server(json_response(completion(message, finish="stop")))
    response = await model(server).request(ChatRequest([Message.user("x")], tools=[WEATHER]))
    calls = response.message.tool_calls
    assert [(c.name, dict(c.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
        ("get_time", {}),
    ]
    assert calls[0].id == "call_a"
    assert calls[1].id.startswith("call_") and calls[2].id.startswith("call_")
    assert len({c.id for c in calls}) == 3
    assert response.finish_reason == "tool_calls"  # "stop" despite tool calls, normalized
    assert response.message.content == ""


async def test_invalid_tool_arguments_are_kept_as_raw_text(anyio_backend):
    message = {
        "role": "assistant",
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a": '}},
            {"id": "d", "type": "function", "function": {"name": "g", "arguments": "[1, 2]"}},
        ],
    }
    server = Server(json_response(completion(message, finish="length")))
    response = await model(server).request(ChatRequest([Message.user("x")]))
    assert response.message.tool_calls == (
        ToolCall("c", "f", {RAW_ARGUMENTS: '{"a": '}),
        ToolCall("d", "g", {RAW_ARGUMENTS: "[1, 2]"}),
    )


async def test_raw_arguments_go_back_as_the_text_the_model_sent(anyio_backend):
    server = Server(json_response(completion({"role": "assistant", "content": "done"})))
    history = [
        Message.user("weather?"),
        Message.assistant(tool_calls=(ToolCall("c", "get_weather", {RAW_ARGUMENTS: '{"ci'}),)),
        Message.tool("c", "bad arguments", name="get_weather"),
    ]
    await model(server).request(ChatRequest(history, tools=[WEATHER]))
    call = server.body()["messages"][1]["tool_calls"][0]
    assert call["function"] == {"name": "get_weather", "arguments": '{"ci'}


async def test_streaming_truncated_arguments_are_kept_as_raw_text(anyio_backend):
    server = Server(
        stream_response(
            sse(
                call_fragment(0, id="call_A", name="get_weather", arguments='{"city": "Par'),
                chunk({}, "tool_calls"),
                "data: [DONE]\n\n",
            )
        )
    )
    events = await collect(model(server), ChatRequest([Message.user("x")], tools=[WEATHER]))
    assert events[-1].response.message.tool_calls == (
        ToolCall("call_A", "get_weather", {RAW_ARGUMENTS: '{"city": "Par'}),
    )


async def test_response_format_and_reasoning(anyio_backend):
    message = {"role": "assistant", "content": '{"a": 1}', "reasoning_content": "thought"}
    server = Server(json_response(completion(message)))
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    output = OutputSchema("answer", schema, description="The answer")
    response = await model(server, "o3-mini").request(
        ChatRequest([Message.user("x")], output=output, think="high")
    )
    body = server.body()
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "answer",
            "schema": schema,
            "strict": True,
            "description": "The answer",
        },
    }
    assert body["reasoning_effort"] == "high"
    assert response.message.reasoning == "thought"
    assert response.message.content == '{"a": 1}'  # fences and parsing are the caller's


async def test_refusal_becomes_content_filter(anyio_backend):
    message = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    server = Server(json_response(completion(message)))
    response = await model(server).request(ChatRequest([Message.user("x")]))
    assert response.message.content == "I can't help with that."
    assert response.finish_reason == "content_filter"


async def test_reasoning_model_temperature_policy(anyio_backend, caplog):
    server = Server(json_response(completion({"role": "assistant", "content": "ok"})))
    with caplog.at_level(logging.DEBUG, logger="agentgraph.llm"):
        await model(server, "o3-mini").request(
            ChatRequest([Message.user("x")], temperature=0.3, think=True)
        )
    assert "temperature" not in server.body() and server.body()["reasoning_effort"] == "medium"
    assert "does not support temperature" in caplog.text
    strict = Server()
    fail = model(strict, "gpt-5", capabilities=Capabilities(on_unsupported="fail"))
    with pytest.raises(UnsupportedSetting, match="temperature"):
        await fail.request(ChatRequest([Message.user("x")], temperature=0.3))
    assert strict.requests == []


async def test_think_on_models_without_reasoning(anyio_backend):
    server = Server(
        *(json_response(completion({"role": "assistant", "content": "ok"})) for _ in range(3))
    )
    llm = model(server, "gpt-4o", capabilities=Capabilities(on_unsupported="ignore"))
    await llm.request(ChatRequest([Message.user("x")], think=True))
    assert "reasoning_effort" not in server.body()
    await llm.request(ChatRequest([Message.user("x")], think=False))
    assert "reasoning_effort" not in server.body()
    compat = OpenAIModel("qwen3", base_url="http://127.0.0.1:11434/v1", http_client=server.client())
    await compat.request(ChatRequest([Message.user("x")], think=False))
    assert server.body()["reasoning_effort"] == "none"


# --- streaming ---------------------------------------------------------------------


async def test_streaming_text_with_usage_chunk(anyio_backend):
    server = Server(
        stream_response(
            sse(
                chunk({"role": "assistant", "content": ""}),
                chunk({"content": "Hel"}, usage=None),
                chunk({"content": "lo"}),
                chunk({}, "stop"),
                chunk(None, usage={"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}),
                "data: [DONE]\n\n",
            )
        )
    )
    events = await collect(model(server), ChatRequest([Message.user("Hi")]))
    body = server.body()
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    usage = Usage(input_tokens=5, output_tokens=2, requests=1)
    assert events == [
        TextDelta("Hel"),
        TextDelta("lo"),
        ResponseDone(
            ChatResponse(
                Message.assistant("Hello", usage=usage),
                finish_reason="stop",
                usage=usage,
                model="m",
                id="chatcmpl-1",
            )
        ),
    ]


async def test_streaming_parallel_tool_call_fragments(anyio_backend):
    server = Server(
        stream_response(
            sse(
                chunk(
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_A",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": ""},
                            }
                        ],
                    }
                ),
                call_fragment(0, arguments='{"ci'),
                call_fragment(0, arguments='ty":"Paris"}'),
                call_fragment(1, id="call_B", name="get_time", arguments=""),
                call_fragment(1, arguments="{}"),
                chunk({}, "tool_calls"),
                "data: [DONE]\n\n",
            )
        )
    )
    events = await collect(model(server), ChatRequest([Message.user("x")], tools=[WEATHER]))
    assert events[:-1] == [
        ToolCallDelta(0, "call_A", "get_weather", ""),
        ToolCallDelta(0, arguments='{"ci'),
        ToolCallDelta(0, arguments='ty":"Paris"}'),
        ToolCallDelta(1, "call_B", "get_time", ""),
        ToolCallDelta(1, arguments="{}"),
    ]
    done = events[-1].response
    assert done.message.tool_calls == (
        ToolCall("call_A", "get_weather", {"city": "Paris"}),
        ToolCall("call_B", "get_time", {}),
    )
    assert done.finish_reason == "tool_calls"
    assert done.usage == Usage(requests=1, unmetered=1)  # no usage chunk: unknown, not zero


async def test_streaming_index_reuse_object_args_and_missing_ids(anyio_backend):
    server = Server(
        stream_response(
            sse(
                # Bridges that put every parallel call on index 0, each with its own id:
                call_fragment(0, id="a1", name="get_weather", arguments='{"city":'),
                call_fragment(0, arguments='"Oslo"}'),
                call_fragment(0, id="a2", name="get_weather", arguments=""),
                call_fragment(0, arguments='{"city":"Rome"}'),
                # Arguments as an object, and no id at all:
                call_fragment(1, name="get_time", arguments={"tz": "UTC"}),
                # The same full arguments sent twice:
                call_fragment(1, arguments='{"tz":"UTC"}'),
                # No ids and the same index: a different name starts a new call.
                call_fragment(2, name="lookup", arguments='{"q":1}'),
                call_fragment(2, name="search", arguments='{"q":2}'),
                chunk({}, "tool_calls"),
                "data: [DONE]\n\n",
            )
        )
    )
    events = await collect(model(server), ChatRequest([Message.user("x")]))
    calls = events[-1].response.message.tool_calls
    assert [(c.name, dict(c.arguments)) for c in calls] == [
        ("get_weather", {"city": "Oslo"}),
        ("get_weather", {"city": "Rome"}),
        ("get_time", {"tz": "UTC"}),
        ("lookup", {"q": 1}),
        ("search", {"q": 2}),
    ]
    assert [c.id for c in calls[:2]] == ["a1", "a2"]
    generated = {
        d.index: d.id for d in events if isinstance(d, ToolCallDelta) and d.index >= 2 and d.id
    }
    assert generated == {2: calls[2].id, 3: calls[3].id, 4: calls[4].id}
    assert all(i.startswith("call_") for i in generated.values())


async def test_streaming_fresh_id_per_fragment_and_no_index(anyio_backend):
    server = Server(
        stream_response(
            sse(
                # LM Studio: a new id on every fragment of one call.
                call_fragment(0, id="x1", name="get_weather", arguments='{"ci'),
                call_fragment(0, id="x2", arguments='ty": '),
                call_fragment(0, id="x3", arguments='"Lima"}'),
                # No index: continues the last call.
                chunk({"tool_calls": [{"function": {"arguments": " "}}]}),
                # Same name repeated, no ids: after complete args a new call of the same tool.
                call_fragment(1, name="get_time", arguments="{}"),
                call_fragment(1, name="get_time", arguments=""),
                call_fragment(1, arguments='{"tz":"CET"}'),
                chunk({}, "tool_calls"),
                "data: [DONE]\n\n",
            )
        )
    )
    events = await collect(model(server), ChatRequest([Message.user("x")]))
    calls = events[-1].response.message.tool_calls
    assert [
        (c.id if c.name == "get_weather" else "", c.name, dict(c.arguments)) for c in calls
    ] == [
        ("x1", "get_weather", {"city": "Lima"}),
        ("", "get_time", {}),
        ("", "get_time", {"tz": "CET"}),
    ]


async def test_streaming_reasoning_fields(anyio_backend):
    server = Server(
        stream_response(
            sse(
                chunk({"role": "assistant", "reasoning": "think "}),
                chunk({"reasoning_content": "more"}),
                chunk({"content": "ok"}, "stop"),
                "data: [DONE]\n\n",
            )
        )
    )
    events = await collect(model(server), ChatRequest([Message.user("x")]))
    assert events[:3] == [ReasoningDelta("think "), ReasoningDelta("more"), TextDelta("ok")]
    assert events[-1].response.message.reasoning == "think more"


async def test_error_inside_a_200_stream(anyio_backend):
    error = {
        "error": {
            "message": "The server had an error",
            "type": "server_error",
            "param": None,
            "code": None,
        }
    }
    before = Server(stream_response(sse(error)))
    with pytest.raises(ServerError) as first:
        await collect(model(before), ChatRequest([Message.user("x")]))
    assert first.value.retryable and first.value.status is None
    after = Server(stream_response(sse(chunk({"content": "Hi"}), error)))
    seen = []
    with pytest.raises(ServerError, match="The server had an error") as late:
        async with model(after).stream(ChatRequest([Message.user("x")])) as events:
            async for event in events:
                seen.append(event)
    assert seen == [TextDelta("Hi")]
    assert late.value.retryable is False


async def test_an_error_inside_a_stream_never_echoes_the_key(anyio_backend):
    error = {"error": {"message": f"bad key {KEY}", "type": "server_error", "param": KEY}}
    server = Server(stream_response(sse(chunk({"content": "Hi"}), error)))
    with pytest.raises(ServerError) as info:
        await collect(model(server), ChatRequest([Message.user("x")]))
    assert KEY not in str(info.value) and KEY not in repr(info.value.body)


async def test_cut_stream(anyio_backend):
    cut = Server(stream_response(sse(chunk({"content": "Hi"}))))
    with pytest.raises(ProviderConnectionError, match=r"no \[DONE\]") as info:
        await collect(model(cut), ChatRequest([Message.user("x")]))
    assert info.value.retryable is False
    reset = Server(stream_response(sse(chunk({"content": "Hi"})), error=httpx.ReadError("reset")))
    with pytest.raises(ProviderConnectionError) as info:
        await collect(model(reset), ChatRequest([Message.user("x")]))
    assert info.value.retryable is False
    # A server that ends the body right after the finish chunk, without [DONE], is complete.
    lenient = Server(stream_response(sse(chunk({"content": "Hi"}, "stop"))))
    events = await collect(model(lenient), ChatRequest([Message.user("x")]))
    assert events[-1].response.message.content == "Hi"


async def test_stream_open_is_retried_but_not_after_output(anyio_backend):
    sleeps = Sleeps()
    server = Server(
        httpx.Response(503, json={"error": {"message": "overloaded", "type": "server_error"}}),
        httpx.ConnectError("refused"),
        stream_response(sse(chunk({"content": "ok"}, "stop"), "data: [DONE]\n\n")),
    )
    events = await collect(model(server, retry=retry(sleeps)), ChatRequest([Message.user("x")]))
    assert events[0] == TextDelta("ok") and len(server.requests) == 3 and len(sleeps.calls) == 2


async def test_cancellation_mid_stream_closes_the_response(anyio_backend):
    body = Body(sse(chunk({"content": "a"})))

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)

    server = Server(answer)
    seen = []
    with anyio.CancelScope() as scope:
        async with model(server).stream(ChatRequest([Message.user("x")])) as events:
            async for event in events:
                seen.append(event)
                scope.cancel()
                await anyio.sleep(1)  # cancelled here
    assert scope.cancelled_caught and seen == [TextDelta("a")] and body.closed


async def test_key_never_leaks(anyio_backend, caplog):
    caplog.set_level(logging.DEBUG)
    body = {
        "error": {
            "message": f"Incorrect API key provided: {KEY}",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }
    server = Server(json_response(body, 401), json_response(body, 401))
    llm = model(server)
    assert KEY not in repr(llm)
    with pytest.raises(AuthenticationError) as info:
        await llm.request(ChatRequest([Message.user("x")]))
    error = info.value
    assert len(server.requests) == 1
    for text in (str(error), repr(error), repr(error.body), repr(vars(error))):
        assert KEY not in text
    with pytest.raises(AuthenticationError) as streamed:
        await collect(llm, ChatRequest([Message.user("x")]))
    assert KEY not in str(streamed.value) and KEY not in repr(streamed.value.body)
    echoed = {"error": {"message": f"upstream failed for {KEY}", "type": "server_error"}}
    flaky = Server(
        json_response(echoed, 500), json_response(echoed, 500), json_response(echoed, 500)
    )
    with pytest.raises(ServerError) as retried:
        await model(flaky).request(ChatRequest([Message.user("x")]))
    assert "retry 2 of 2" in caplog.text and KEY not in caplog.text
    assert KEY not in str(retried.value)


async def test_an_error_body_on_a_200_never_echoes_the_key(anyio_backend):
    body = {"error": {"message": f"Incorrect API key provided: {KEY}", "code": "invalid_api_key"}}
    server = Server(json_response(body))
    with pytest.raises(ProviderError) as info:
        await model(server).request(ChatRequest([Message.user("x")]))
    error = info.value
    assert "Incorrect API key provided: ***" in str(error)
    for text in (str(error), repr(error), repr(error.body), repr(vars(error))):
        assert KEY not in text


def test_official_api_needs_a_key():
    with pytest.raises(ProviderConfigError, match="OPENAI_API_KEY"):
        OpenAIModel("gpt-4o")


async def test_owned_client_lifecycle(anyio_backend):
    async with OpenAIModel("m", base_url="http://127.0.0.1:9/v1") as llm:
        assert "127.0.0.1:9" in repr(llm)
    await llm.aclose()  # closing twice is harmless


# --- embeddings --------------------------------------------------------------------


def b64(values: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


def embedding_answer(request: httpx.Request) -> httpx.Response:
    import orjson

    texts = orjson.loads(request.content)["input"]
    data = [
        {"object": "embedding", "index": i, "embedding": b64([float(len(t)), 0.5])}
        for i, t in enumerate(texts)
    ]
    data.reverse()  # order is given by `index`, not by position
    return json_response({"object": "list", "data": data, "model": "e", "usage": {}})


async def test_embeddings_base64_batches_and_order(anyio_backend):
    server = Server(embedding_answer, embedding_answer, embedding_answer)
    embedder = OpenAIEmbedder(
        "text-embedding-3-small",
        api_key=KEY,
        http_client=server.client(),
        batch_size=2,
        dimensions=2,
    )
    assert isinstance(embedder, Embedder) and embedder.dimensions == 2
    vectors = await embedder.embed(["a", "bb", "ccc", "dddd", "eeeee"])
    assert vectors == [[1.0, 0.5], [2.0, 0.5], [3.0, 0.5], [4.0, 0.5], [5.0, 0.5]]
    assert server.paths == ["/v1/embeddings"] * 3
    assert server.body(0) == {
        "model": "text-embedding-3-small",
        "input": ["a", "bb"],
        "encoding_format": "base64",
        "dimensions": 2,
    }
    assert await embedder.embed([]) == []


async def test_embeddings_float_format_and_bad_answers(anyio_backend):
    floats = {"data": [{"index": 0, "embedding": [0.25, -1]}], "model": "e"}
    server = Server(
        json_response(floats),
        json_response({"data": []}),
        json_response({"data": [{"index": 0, "embedding": "@@"}]}),
    )
    embedder = OpenAIEmbedder(
        base_url="http://local/v1", http_client=server.client(), encoding_format="float"
    )
    assert embedder.dimensions is None
    assert await embedder.embed(["x"]) == [[0.25, -1.0]]
    assert embedder.dimensions == 2 and server.body()["encoding_format"] == "float"
    with pytest.raises(ResponseFormatError, match="asked for 1 embeddings, got 0"):
        await embedder.embed(["x"])
    with pytest.raises(ResponseFormatError, match="base64"):
        await embedder.embed(["x"])
    with pytest.raises(TypeError, match="sequence of strings"):
        await embedder.embed("x")  # type: ignore[arg-type]
    with pytest.raises(ProviderConfigError):
        OpenAIEmbedder(base_url="http://local/v1", batch_size=0)
