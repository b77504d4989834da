"""Anthropic Messages over the real wire format: blocks, tool results, thinking, named events."""

from __future__ import annotations

import logging

import httpx
import pytest

from agentgraph import (
    AuthenticationError,
    ProviderConfigError,
    ProviderConnectionError,
    RateLimitError,
    ResponseFormatError,
    ServerError,
    UnsupportedSetting,
)
from agentgraph.llm import (
    AnthropicModel,
    Capabilities,
    ChatModel,
    ChatRequest,
    ChatResponse,
    Message,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
    Usage,
)
from agentgraph.tools import RAW_ARGUMENTS

from .support import Server, Sleeps, collect, json_response, retry, sse, stream_response

pytestmark = pytest.mark.anyio

KEY = "sk-ant-api03-TESTKEY-abcdef0123456789"
WEATHER = ToolSpec("get_weather", "Weather for a city", {"type": "object", "properties": {}})


def model(server: Server, name: str = "claude-sonnet-4-5", **kwargs) -> AnthropicModel:
    kwargs.setdefault("retry", retry(Sleeps()))
    return AnthropicModel(name, api_key=KEY, http_client=server.client(), **kwargs)


def message(content: list, stop: str = "end_turn", usage: dict | None = None) -> dict:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 10, "output_tokens": 5},
    }


async def test_request_shape_and_text_answer(anyio_backend):
    server = Server(
        json_response(
            message(
                [{"type": "text", "text": "Bonjour"}],
                usage={
                    "input_tokens": 100,
                    "output_tokens": 7,
                    "cache_creation_input_tokens": 20,
                    "cache_read_input_tokens": 30,
                },
            )
        )
    )
    llm = model(server)
    assert isinstance(llm, ChatModel)
    response = await llm.request(
        ChatRequest([Message.system("Be brief."), Message.user("Hi")], temperature=0.5)
    )
    sent = server.requests[0]
    assert sent.url.path == "/v1/messages"
    assert sent.headers["x-api-key"] == KEY and sent.headers["anthropic-version"] == "2023-06-01"
    assert server.body() == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "temperature": 0.5,
    }
    usage = Usage(
        input_tokens=150, output_tokens=7, requests=1, cache_read_tokens=30, cache_write_tokens=20
    )
    assert response == ChatResponse(
        Message.assistant("Bonjour", usage=usage),
        finish_reason="stop",
        usage=usage,
        model="claude-sonnet-4-5-20250929",
        id="msg_01",
    )


async def test_tool_results_merge_into_one_user_turn(anyio_backend):
    server = Server(json_response(message([{"type": "text", "text": "ok"}])))
    history = [
        Message.user("Weather in Paris and Rome?"),
        Message.assistant(
            "Checking.",
            tool_calls=(
                ToolCall("toolu_1", "get_weather", {"city": "Paris"}),
                ToolCall("toolu_2", "get_weather", {"city": "Rome"}),
            ),
        ),
        Message.tool("toolu_1", "22C"),
        Message.tool("toolu_2", "city not found", is_error=True),
        Message.user("And tomorrow?"),
    ]
    await model(server).request(ChatRequest(history, tools=[WEATHER], tool_choice="required"))
    body = server.body()
    assert body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "get_weather",
                    "input": {"city": "Rome"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "22C"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "city not found",
                    "is_error": True,
                },
                {"type": "text", "text": "And tomorrow?"},
            ],
        },
    ]
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "Weather for a city",
            "input_schema": {"type": "object", "properties": {}},
        }
    ]
    assert body["tool_choice"] == {"type": "any"}


async def test_raw_arguments_go_back_as_an_empty_input(anyio_backend):
    server = Server(json_response(message([{"type": "text", "text": "ok"}])))
    call = ToolCall("toolu_1", "get_weather", {RAW_ARGUMENTS: '{"city": "Par'})
    history = [
        Message.user("weather?"),
        Message.assistant(tool_calls=(call,)),
        Message.tool("toolu_1", "bad arguments", is_error=True),
    ]
    await model(server).request(ChatRequest(history, tools=[WEATHER]))
    block = server.body()["messages"][1]["content"][0]
    assert block == {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("get_weather", {"type": "tool", "name": "get_weather"}),
    ],
)
async def test_tool_choice(anyio_backend, choice, wire):
    server = Server(json_response(message([])))
    await model(server).request(
        ChatRequest([Message.user("x")], tools=[WEATHER], tool_choice=choice)
    )
    assert server.body()["tool_choice"] == wire


async def test_thinking_budget_and_round_trip(anyio_backend, caplog):
    thinking = {"type": "thinking", "thinking": "Let me see.", "signature": "sig=="}
    answer = message(
        [
            thinking,
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {"city": "Oslo"}},
        ],
        stop="tool_use",
    )
    server = Server(json_response(answer), json_response(message([{"type": "text", "text": "."}])))
    llm = model(server)
    with caplog.at_level(logging.DEBUG, logger="agentgraph.llm"):
        first = await llm.request(
            ChatRequest([Message.user("x")], tools=[WEATHER], think=True, temperature=0.1)
        )
    body = server.body()
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert body["max_tokens"] == 4096 + 4096 and "temperature" not in body
    assert "does not support temperature" in caplog.text
    reply = first.message
    assert reply.reasoning == "Let me see." and first.finish_reason == "tool_calls"
    assert reply.tool_calls == (ToolCall("toolu_9", "get_weather", {"city": "Oslo"}),)
    await llm.request(
        ChatRequest(
            [Message.user("x"), reply, Message.tool("toolu_9", "1C")], think="low", max_output=3000
        )
    )
    again = server.body()
    assert again["messages"][1]["content"][:2] == [
        thinking,
        {"type": "redacted_thinking", "data": "opaque"},
    ]
    assert again["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert again["max_tokens"] == 3000


async def test_thinking_that_cannot_fit_follows_the_policy(anyio_backend):
    server = Server(json_response(message([])))
    await model(server).request(ChatRequest([Message.user("x")], think="high", max_output=500))
    assert "thinking" not in server.body() and server.body()["max_tokens"] == 500
    strict = model(
        Server(), "claude-3-5-haiku-latest", capabilities=Capabilities(on_unsupported="fail")
    )
    with pytest.raises(UnsupportedSetting, match="think"):
        await strict.request(ChatRequest([Message.user("x")], think=True))


async def test_streaming_named_events(anyio_backend):
    events = sse(
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_7",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-x",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 40, "cache_read_input_tokens": 2, "output_tokens": 1},
                },
            },
        ),
        ("ping", {"type": "ping"}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "Hmm."},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": "s1"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": "Let me check."},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ("future_event", {"type": "future_event", "whatever": 1}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 2,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_5",
                    "name": "get_weather",
                    "input": {},
                },
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": '{"city":'},
            },
        ),
        ("ping", {"type": "ping"}),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": '"Oslo"}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 2}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 30},
            },
        ),
        ("message_delta", {"type": "message_delta", "delta": {}, "usage": {"output_tokens": 33}}),
        ("message_stop", {"type": "message_stop"}),
    )
    server = Server(stream_response(events))
    got = await collect(model(server), ChatRequest([Message.user("x")], tools=[WEATHER]))
    assert server.body()["stream"] is True
    assert got[:-1] == [
        ReasoningDelta("Hmm."),
        TextDelta("Let me check."),
        ToolCallDelta(0, "toolu_5", "get_weather", ""),
        ToolCallDelta(0, arguments='{"city":'),
        ToolCallDelta(0, arguments='"Oslo"}'),
    ]
    done = got[-1]
    assert isinstance(done, ResponseDone)
    usage = Usage(input_tokens=42, output_tokens=33, requests=1, cache_read_tokens=2)
    reply = done.response.message
    assert (reply.content, reply.reasoning, reply.usage) == ("Let me check.", "Hmm.", usage)
    assert reply.tool_calls == (ToolCall("toolu_5", "get_weather", {"city": "Oslo"}),)
    assert reply.provider_data["anthropic.thinking"] == (
        {"type": "thinking", "thinking": "Hmm.", "signature": "s1"},
    )
    assert (done.response.finish_reason, done.response.id, done.response.model) == (
        "tool_calls",
        "msg_7",
        "claude-x",
    )


START = (
    "message_start",
    {
        "type": "message_start",
        "message": {"id": "m", "model": "c", "content": [], "usage": {"input_tokens": 1}},
    },
)
TEXT = [
    (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
    ),
]
OVERLOADED = (
    "error",
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
)


async def test_error_event_mid_stream(anyio_backend):
    early = Server(stream_response(sse(START, OVERLOADED)))
    with pytest.raises(ServerError, match="Overloaded") as first:
        await collect(model(early), ChatRequest([Message.user("x")]))
    assert first.value.retryable
    late = Server(stream_response(sse(START, *TEXT, ("ping", {"type": "ping"}), OVERLOADED)))
    with pytest.raises(ServerError) as info:
        await collect(model(late), ChatRequest([Message.user("x")]))
    assert info.value.retryable is False


async def test_cut_stream_and_malformed_events(anyio_backend):
    cut = Server(stream_response(sse(START, *TEXT)))
    with pytest.raises(ProviderConnectionError, match="message_stop") as info:
        await collect(model(cut), ChatRequest([Message.user("x")]))
    assert info.value.retryable is False
    orphan = Server(stream_response(sse(START, TEXT[1])))
    with pytest.raises(ResponseFormatError, match="never started"):
        await collect(model(orphan), ChatRequest([Message.user("x")]))


async def test_overload_and_rate_limit_statuses(anyio_backend):
    sleeps = Sleeps()
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    limited = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    server = Server(
        json_response(overloaded, 529),
        json_response(limited, 429, {"retry-after": "2"}),
        json_response(message([{"type": "text", "text": "ok"}])),
    )
    response = await model(server, retry=retry(sleeps)).request(ChatRequest([Message.user("x")]))
    assert response.message.content == "ok"
    assert 1.5 <= sleeps.calls[0] <= 2.0 and sleeps.calls[1] == 2.0
    never = Server(json_response(limited, 429, {"retry-after": "500"}))
    with pytest.raises(RateLimitError):
        await model(never, retry=retry(sleeps)).request(ChatRequest([Message.user("x")]))
    assert len(never.requests) == 1


async def test_key_never_leaks_and_is_required(anyio_backend):
    body = {
        "type": "error",
        "error": {"type": "authentication_error", "message": f"invalid x-api-key {KEY}"},
    }
    server = Server(json_response(body, 401))
    llm = model(server)
    assert KEY not in repr(llm)
    with pytest.raises(AuthenticationError) as info:
        await llm.request(ChatRequest([Message.user("x")]))
    assert KEY not in str(info.value) and KEY not in repr(info.value.body)
    # The same error body on a 200 answer is masked too.
    with pytest.raises(AuthenticationError) as on_ok:
        await model(Server(json_response(body))).request(ChatRequest([Message.user("x")]))
    assert "invalid x-api-key ***" in str(on_ok.value)
    assert KEY not in str(on_ok.value) and KEY not in repr(on_ok.value.body)
    with pytest.raises(ProviderConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicModel("claude-sonnet-4-5")
    async with httpx.AsyncClient() as client:
        local = AnthropicModel("m", base_url="http://localhost:1234", http_client=client)
        assert local.name == "m"
        await local.aclose()
        assert not client.is_closed  # an injected client belongs to its owner
