"""GigaChat: OAuth tokens, the `functions` model, `functions_state_id`, streaming."""

from __future__ import annotations

import time
import uuid
from urllib.parse import parse_qs

import httpx
import orjson
import pytest

from agentgraph import AuthenticationError, BadRequestError, ProviderConfigError, ServerError
from agentgraph.llm import (
    ChatModel,
    ChatRequest,
    GigaChatModel,
    Message,
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

CREDENTIALS = "Y2xpZW50OnNlY3JldA-TESTCREDENTIALS=="
AUTH = "https://ngw.test:9443/api/v2/oauth"
WEATHER = ToolSpec("get_weather", "Weather", {"type": "object", "properties": {}})


def token(value: str, expires_in: float = 1800.0) -> httpx.Response:
    expires_at = int((time.time() + expires_in) * 1000)
    return json_response({"access_token": value, "expires_at": expires_at})


def model(server: Server, **kwargs) -> GigaChatModel:
    kwargs.setdefault("retry", retry(Sleeps()))
    kwargs.setdefault("credentials", CREDENTIALS)
    return GigaChatModel(
        "GigaChat-Max",
        base_url="https://giga.test/api/v1",
        auth_url=AUTH,
        http_client=server.client(),
        **kwargs,
    )


def completion(message: dict, finish: str = "stop") -> dict:
    return {
        "choices": [
            {"message": {"role": "assistant", **message}, "index": 0, "finish_reason": finish}
        ],
        "created": 1,
        "model": "GigaChat-Max:2.0",
        "object": "chat.completion",
        "usage": {
            "prompt_tokens": 20,
            "completion_tokens": 5,
            "total_tokens": 25,
            "precached_prompt_tokens": 8,
        },
    }


UNAUTHORIZED = {"status": 401, "message": "Unauthorized"}


async def test_token_fetch_and_plain_answer(anyio_backend):
    server = Server(
        token("tok-1"),
        json_response(completion({"content": "Привет"})),
        json_response(completion({"content": "again"})),
    )
    llm = model(server, scope="GIGACHAT_API_CORP")
    assert isinstance(llm, ChatModel) and llm.name == "GigaChat-Max"
    response = await llm.request(ChatRequest([Message.user("hi")], temperature=0.7, max_output=9))
    oauth = server.requests[0]
    assert str(oauth.url) == AUTH
    assert oauth.headers["authorization"] == f"Basic {CREDENTIALS}"
    uuid.UUID(oauth.headers["rquid"])
    assert parse_qs(oauth.content.decode()) == {"scope": ["GIGACHAT_API_CORP"]}
    chat = server.requests[1]
    assert chat.url.path == "/api/v1/chat/completions"
    assert chat.headers["authorization"] == "Bearer tok-1"
    assert server.body() == {
        "model": "GigaChat-Max",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.7,
        "max_tokens": 9,
    }
    usage = Usage(input_tokens=20, output_tokens=5, requests=1, cache_read_tokens=8)
    assert response.message == Message.assistant("Привет", usage=usage)
    assert response.model == "GigaChat-Max:2.0"
    await llm.request(ChatRequest([Message.user("again")]))
    assert len(server.requests) == 3  # the token was reused
    assert server.requests[2].headers["authorization"] == "Bearer tok-1"


async def test_refresh_once_on_401(anyio_backend):
    server = Server(
        token("old"),
        json_response(UNAUTHORIZED, 401),
        token("new"),
        json_response(completion({"content": "ok"})),
    )
    response = await model(server).request(ChatRequest([Message.user("x")]))
    assert response.message.content == "ok"
    assert [str(r.url) == AUTH for r in server.requests] == [True, False, True, False]
    assert server.requests[3].headers["authorization"] == "Bearer new"


async def test_second_401_is_a_clear_authentication_error(anyio_backend):
    server = Server(
        token("tok-a"),
        json_response(UNAUTHORIZED, 401),
        token("tok-b"),
        json_response(UNAUTHORIZED, 401),
    )
    llm = model(server)
    with pytest.raises(AuthenticationError, match="freshly issued access token") as info:
        await llm.request(ChatRequest([Message.user("x")]))
    assert len(server.requests) == 4 and info.value.status == 401
    for text in (str(info.value), repr(info.value.body), repr(llm), str(info.value.__cause__)):
        assert CREDENTIALS not in text and "tok-b" not in text


async def test_expired_token_is_refreshed_before_use(anyio_backend):
    server = Server(
        token("short", expires_in=10),
        json_response(completion({"content": "1"})),
        token("long"),
        json_response(completion({"content": "2"})),
    )
    llm = model(server)
    await llm.request(ChatRequest([Message.user("x")]))
    await llm.request(ChatRequest([Message.user("x")]))
    assert server.requests[3].headers["authorization"] == "Bearer long"


async def test_static_token_and_oauth_errors(anyio_backend):
    server = Server(json_response(UNAUTHORIZED, 401))
    static = model(server, credentials=None, access_token="static-token-XYZ")
    with pytest.raises(AuthenticationError, match="no credentials") as info:
        await static.request(ChatRequest([Message.user("x")]))
    assert "static-token-XYZ" not in str(info.value) and len(server.requests) == 1
    refused = Server(json_response({"code": 5, "message": "scope is empty"}, 400))
    with pytest.raises(AuthenticationError, match="scope is empty") as oauth:
        await model(refused).request(ChatRequest([Message.user("x")]))
    assert str(oauth.value).count("(HTTP 400)") == 1 and oauth.value.status == 400
    with pytest.raises(ProviderConfigError, match="GIGACHAT_CREDENTIALS"):
        GigaChatModel()


async def test_oauth_server_error_is_retried(anyio_backend):
    sleeps = Sleeps()
    server = Server(httpx.Response(503), token("t"), json_response(completion({"content": "ok"})))
    response = await model(server, retry=retry(sleeps)).request(ChatRequest([Message.user("x")]))
    assert response.message.content == "ok" and len(sleeps.calls) == 1


async def test_functions_round_trip(anyio_backend):
    answer = completion(
        {
            "content": "",
            "function_call": {"name": "get_weather", "arguments": {"city": "Москва"}},
            "functions_state_id": "77d3fb14-457e-4bd4-a3a7-3ad6b4a1e01d",
        },
        finish="function_call",
    )
    server = Server(token("t"), json_response(answer), json_response(completion({"content": "."})))
    llm = model(server)
    first = await llm.request(ChatRequest([Message.user("погода?")], tools=[WEATHER]))
    body = server.body()
    assert body["functions"] == [
        {
            "name": "get_weather",
            "description": "Weather",
            "parameters": {"type": "object", "properties": {}},
        }
    ]
    assert "function_call" not in body
    reply = first.message
    (call,) = reply.tool_calls
    assert (call.name, dict(call.arguments)) == ("get_weather", {"city": "Москва"})
    assert first.finish_reason == "tool_calls"
    history = [
        Message.user("погода?"),
        reply,
        Message.tool(call.id, "-5C"),
        Message.tool(call.id, '{"temp": -5}'),
    ]
    # Two results for one call, to see both encodings: only the encoder is under test.
    await llm.request(
        ChatRequest(history, tools=[WEATHER], tool_choice="get_weather", check_transcript=False)
    )
    again = server.body()
    assert again["messages"][1] == {
        "role": "assistant",
        "content": "",
        "function_call": {"name": "get_weather", "arguments": {"city": "Москва"}},
        "functions_state_id": "77d3fb14-457e-4bd4-a3a7-3ad6b4a1e01d",
    }
    assert again["messages"][2] == {
        "role": "function",
        "name": "get_weather",
        "content": '{"result":"-5C"}',
    }
    assert again["messages"][3]["content"] == '{"temp": -5}'
    assert again["function_call"] == {"name": "get_weather"}


async def test_malformed_function_arguments(anyio_backend):
    answer = completion(
        {"content": "", "function_call": {"name": "get_weather", "arguments": '{"city": '}},
        finish="function_call",
    )
    server = Server(token("t"), json_response(answer), json_response(completion({"content": "."})))
    llm = model(server)
    first = await llm.request(ChatRequest([Message.user("x")], tools=[WEATHER]))
    (call,) = first.message.tool_calls
    assert call.arguments == {RAW_ARGUMENTS: '{"city": '}
    history = [Message.user("x"), first.message, Message.tool(call.id, "bad arguments")]
    await llm.request(ChatRequest(history, tools=[WEATHER]))
    sent = server.body()["messages"][1]
    assert sent["function_call"] == {"name": "get_weather", "arguments": {}}


async def test_history_gigachat_cannot_express(anyio_backend):
    two = Message.assistant(tool_calls=(ToolCall("a", "f", {}), ToolCall("b", "g", {})))
    server = Server()
    with pytest.raises(BadRequestError, match="one function call per assistant turn"):
        await model(server).request(ChatRequest([Message.user("x"), two]))
    assert server.requests == []


async def test_streaming(anyio_backend):
    def chunk(delta: dict, finish: str | None = None, **extra) -> dict:
        return {
            "choices": [{"delta": delta, "index": 0, "finish_reason": finish}],
            "created": 1,
            "model": "GigaChat-Max",
            "object": "chat.completion",
            **extra,
        }

    server = Server(
        token("t"),
        stream_response(
            sse(
                chunk({"content": "Сейчас ", "role": "assistant"}),
                chunk(
                    {
                        "content": "",
                        "function_call": {"name": "get_weather", "arguments": {"city": "Сочи"}},
                        "functions_state_id": "st-1",
                    },
                    "function_call",
                    usage={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
                ),
                "data: [DONE]\n\n",
            )
        ),
    )
    events = await collect(model(server), ChatRequest([Message.user("x")], tools=[WEATHER]))
    assert server.body()["stream"] is True
    assert events[:2] == [
        TextDelta("Сейчас "),
        ToolCallDelta(0, events[1].id, "get_weather", '{"city":"Сочи"}'),
    ]
    done = events[-1]
    assert isinstance(done, ResponseDone) and done.response.finish_reason == "tool_calls"
    assert done.response.message.provider_data == {"gigachat.functions_state_id": "st-1"}
    assert done.response.usage == Usage(input_tokens=3, output_tokens=2, requests=1)
    assert done.response.message.tool_calls[0].id == events[1].id


async def test_stream_refreshes_on_401_and_surfaces_errors(anyio_backend):
    error = {"error": {"message": "internal", "type": "server_error"}}
    server = Server(
        token("a"),
        json_response(UNAUTHORIZED, 401),
        token("b"),
        stream_response(sse({"choices": [{"delta": {"content": "x"}}]}, error)),
    )
    with pytest.raises(ServerError) as info:
        await collect(model(server), ChatRequest([Message.user("x")]))
    assert info.value.retryable is False
    assert server.requests[3].headers["authorization"] == "Bearer b"
    assert orjson.loads(server.requests[3].content)["stream"] is True


async def test_gigachat_error_body_inside_a_stream(anyio_backend):
    failure = {"status": 500, "message": "Internal Server Error"}
    server = Server(token("t"), stream_response(sse(failure)))
    with pytest.raises(ServerError, match="Internal Server Error") as info:
        await collect(model(server), ChatRequest([Message.user("x")]))
    assert info.value.status == 500 and info.value.retryable
