"""Ollama's native `/api/chat` (NDJSON streaming) and `/api/embed` over the real wire format."""

from __future__ import annotations

import httpx
import pytest

from agentgraph import (
    BadRequestError,
    InvalidTranscript,
    NotFoundError,
    ProviderConnectionError,
    ProviderStatusError,
    ResponseFormatError,
    UnsupportedSetting,
)
from agentgraph.llm import (
    Capabilities,
    ChatModel,
    ChatRequest,
    ChatResponse,
    Embedder,
    Message,
    OllamaEmbedder,
    OllamaModel,
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

from .support import Server, Sleeps, collect, json_response, ndjson, retry, stream_response

pytestmark = pytest.mark.anyio

WEATHER = ToolSpec("get_weather", "Weather", {"type": "object", "properties": {}})


def model(server: Server, **kwargs) -> OllamaModel:
    kwargs.setdefault("retry", retry(Sleeps()))
    return OllamaModel("qwen3:8b", http_client=server.client(), **kwargs)


def line(message: dict, done: bool = False, **extra) -> dict:
    return {
        "model": "qwen3:8b",
        "created_at": "2025-07-07T20:32:53Z",
        "message": {"role": "assistant", "content": "", **message},
        "done": done,
        **extra,
    }


async def test_request_body_and_tool_call_answer(anyio_backend):
    answer = line(
        {
            "thinking": "need weather",
            "tool_calls": [
                {"function": {"index": 0, "name": "get_weather", "arguments": {"city": "Tokyo"}}},
                {
                    "id": "call_k3x9a0bq",
                    "function": {
                        "index": 1,
                        "name": "get_weather",
                        "arguments": '{"city": "Oslo"}',
                    },
                },
            ],
        },
        done=True,
        done_reason="stop",
        prompt_eval_count=169,
        eval_count=18,
    )
    server = Server(json_response(answer))
    llm = model(server, num_ctx=8192, keep_alive="5m", options={"seed": 1})
    assert isinstance(llm, ChatModel)
    schema = {"type": "object"}
    history = [
        Message.system("sys"),
        Message.user("weather?"),
        Message.assistant(
            tool_calls=(ToolCall("c1", "get_weather", {"city": "Paris"}),),
            reasoning="earlier thought",
        ),
        Message.tool("c1", "22C"),
    ]
    response = await llm.request(
        ChatRequest(
            history,
            tools=[WEATHER],
            temperature=0.1,
            max_output=99,
            think="high",
            output=OutputSchema("x", schema),
        )
    )
    sent = server.requests[0]
    assert sent.url.path == "/api/chat" and "authorization" not in sent.headers
    assert server.body() == {
        "model": "qwen3:8b",
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": "",
                "thinking": "earlier thought",
                "tool_calls": [
                    {
                        "id": "c1",
                        "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                    }
                ],
            },
            {"role": "tool", "content": "22C", "tool_name": "get_weather", "tool_call_id": "c1"},
        ],
        "stream": False,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather",
                    "parameters": {"type": "object", "properties": {}},
                },
            }
        ],
        "format": schema,
        "think": "high",
        "options": {"seed": 1, "temperature": 0.1, "num_predict": 99, "num_ctx": 8192},
        "keep_alive": "5m",
    }
    calls = response.message.tool_calls
    assert [(c.name, dict(c.arguments)) for c in calls] == [
        ("get_weather", {"city": "Tokyo"}),
        ("get_weather", {"city": "Oslo"}),
    ]
    assert calls[0].id.startswith("call_") and calls[1].id == "call_k3x9a0bq"
    assert response.finish_reason == "tool_calls"  # the server says "stop"
    assert response.message.reasoning == "need weather"
    assert response.usage == Usage(input_tokens=169, output_tokens=18, requests=1)


async def test_plain_answer_without_counts(anyio_backend):
    server = Server(json_response(line({"content": "hi"}, done=True, done_reason="length")))
    response = await model(server).request(ChatRequest([Message.user("x")]))
    assert response == ChatResponse(
        Message.assistant("hi", usage=Usage(requests=1)),
        finish_reason="length",
        usage=Usage(requests=1),
        model="qwen3:8b",
    )


async def test_arguments_that_are_not_an_object(anyio_backend):
    reply = line(
        {"content": "", "tool_calls": [{"function": {"name": "get_weather", "arguments": [1]}}]},
        done=True,
    )
    server = Server(json_response(reply), json_response(line({"content": "ok"}, done=True)))
    llm = model(server)
    first = await llm.request(ChatRequest([Message.user("x")], tools=[WEATHER]))
    (call,) = first.message.tool_calls
    assert call.arguments == {RAW_ARGUMENTS: "[1]"}
    history = [Message.user("x"), first.message, Message.tool(call.id, "bad arguments")]
    await llm.request(ChatRequest(history, tools=[WEATHER]))
    sent = server.body()["messages"][1]["tool_calls"][0]
    assert sent["function"] == {"name": "get_weather", "arguments": {}}


async def test_tool_choice_and_tool_names(anyio_backend):
    server = Server(json_response(line({"content": "x"}, done=True)))
    await model(server).request(
        ChatRequest([Message.user("x")], tools=[WEATHER], tool_choice="none")
    )
    assert "tools" not in server.body()
    strict = model(Server(), capabilities=Capabilities(on_unsupported="fail"))
    with pytest.raises(UnsupportedSetting, match="tool_choice"):
        await strict.request(
            ChatRequest([Message.user("x")], tools=[WEATHER], tool_choice="required")
        )
    orphan = [Message.user("x"), Message.tool("unknown", "x")]
    with pytest.raises(InvalidTranscript, match="result-without-call, message 1"):
        await model(Server()).request(ChatRequest(orphan))
    with pytest.raises(BadRequestError, match="tool's name"):
        await model(Server()).request(ChatRequest(orphan, check_transcript=False))


async def test_streaming_ndjson(anyio_backend):
    server = Server(
        stream_response(
            ndjson(
                line({"thinking": "Hmm"}),
                line({"content": "Let me "}),
                line({"content": "check."}),
                line(
                    {
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "function": {
                                    "index": 0,
                                    "name": "get_weather",
                                    "arguments": {"city": "Rome"},
                                },
                            }
                        ]
                    }
                ),
                line({}, done=True, done_reason="stop", prompt_eval_count=3, eval_count=4),
            ),
            content_type="application/x-ndjson",
        )
    )
    events = await collect(model(server), ChatRequest([Message.user("x")], tools=[WEATHER]))
    assert server.body()["stream"] is True
    usage = Usage(input_tokens=3, output_tokens=4, requests=1)
    call = ToolCall("call_1", "get_weather", {"city": "Rome"})
    assert events == [
        ReasoningDelta("Hmm"),
        TextDelta("Let me "),
        TextDelta("check."),
        ToolCallDelta(0, "call_1", "get_weather", '{"city":"Rome"}'),
        ResponseDone(
            ChatResponse(
                Message.assistant(
                    "Let me check.", tool_calls=(call,), reasoning="Hmm", usage=usage
                ),
                finish_reason="tool_calls",
                usage=usage,
                model="qwen3:8b",
            )
        ),
    ]


async def test_stream_error_line_and_cut(anyio_backend):
    failing = Server(
        stream_response(
            ndjson(
                line({"content": "par"}),
                {"error": "an error was encountered while running the model"},
            )
        )
    )
    with pytest.raises(ProviderStatusError, match="while running the model") as info:
        await collect(model(failing), ChatRequest([Message.user("x")]))
    assert info.value.retryable is False
    early = Server(stream_response(ndjson({"error": "runner crashed"})))
    with pytest.raises(ProviderStatusError) as first:
        await collect(model(early), ChatRequest([Message.user("x")]))
    assert first.value.retryable is True
    cut = Server(stream_response(ndjson(line({"content": "par"}))))
    with pytest.raises(ProviderConnectionError, match="done: true"):
        await collect(model(cut), ChatRequest([Message.user("x")]))


async def test_status_errors(anyio_backend):
    sleeps = Sleeps()
    server = Server(
        json_response(
            {"error": "server busy, please try again.  maximum pending requests exceeded"}, 503
        ),
        json_response(line({"content": "ok"}, done=True)),
    )
    response = await model(server, retry=retry(sleeps)).request(ChatRequest([Message.user("x")]))
    assert response.message.content == "ok" and len(sleeps.calls) == 1
    missing = Server(json_response({"error": "model 'nope' not found"}, 404))
    with pytest.raises(NotFoundError, match="not found"):
        await model(missing).request(ChatRequest([Message.user("x")]))
    assert len(missing.requests) == 1
    unsupported = Server(json_response({"error": '"gemma" does not support tools'}, 400))
    with pytest.raises(BadRequestError, match="does not support tools"):
        await model(unsupported).request(ChatRequest([Message.user("x")], tools=[WEATHER]))


async def test_cloud_key_is_sent_and_hidden(anyio_backend):
    key = "ollama-cloud-SECRET-123456"
    server = Server(json_response({"error": f"unauthorized {key}"}, 401))
    llm = OllamaModel(
        "gpt-oss:120b", base_url="https://ollama.com", api_key=key, http_client=server.client()
    )
    assert key not in repr(llm)
    with pytest.raises(ProviderStatusError) as info:
        await llm.request(ChatRequest([Message.user("x")]))
    assert server.requests[0].headers["authorization"] == f"Bearer {key}"
    assert key not in str(info.value) and key not in repr(info.value.body)


async def test_embed(anyio_backend):
    def answer(request: httpx.Request) -> httpx.Response:
        import orjson

        texts = orjson.loads(request.content)["input"]
        return json_response({"model": "e", "embeddings": [[float(len(t)), 1.0] for t in texts]})

    server = Server(answer, answer, json_response({"embeddings": [[1.0]]}))
    embedder = OllamaEmbedder(
        "nomic-embed-text", http_client=server.client(), batch_size=2, keep_alive=0
    )
    assert isinstance(embedder, Embedder) and embedder.dimensions is None
    assert await embedder.embed(["a", "bb", "ccc"]) == [[1.0, 1.0], [2.0, 1.0], [3.0, 1.0]]
    assert embedder.dimensions == 2
    assert server.paths == ["/api/embed", "/api/embed"]
    assert server.body(0) == {
        "model": "nomic-embed-text",
        "input": ["a", "bb"],
        "truncate": True,
        "keep_alive": 0,
    }
    with pytest.raises(ResponseFormatError, match="asked for 2"):
        await embedder.embed(["a", "b"])
