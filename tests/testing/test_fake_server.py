"""The fake provider server over plain httpx: lifecycle, script, records, wire shapes and faults."""

import socket

import anyio
import httpx
import orjson
import pytest

from agentgraph.llm import ChatRequest, Message, ToolCall
from agentgraph.testing import (
    CutStream,
    Delay,
    ErrorResponse,
    FakeServer,
    MalformedJson,
    OpenAIQuirks,
    RecordedRequest,
    ScriptedModel,
    StreamError,
)

AUTH = {"authorization": "Bearer sk-test", "anthropic-version": "2023-06-01"}
OPENAI = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
ANTHROPIC = {"model": "claude", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
OLLAMA = {"model": "llama3.2", "messages": [{"role": "user", "content": "hi"}], "stream": False}


@pytest.fixture
async def http(server):
    async with httpx.AsyncClient(base_url=server.url, headers=AUTH) as client:
        yield client


def sse_data(text: str) -> list[str]:
    return [line[6:] for line in text.splitlines() if line.startswith("data: ")]


# -- lifecycle ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_async_context_starts_serves_and_releases_the_port():
    async with FakeServer("hello") as server:
        port = int(server.url.rsplit(":", 1)[1])
        assert server.url.startswith("http://127.0.0.1:")
        assert server.openai_url == f"{server.url}/v1"
        assert server.gigachat_url == f"{server.url}/api/v1"
        assert server.gigachat_auth_url == f"{server.url}/api/v2/oauth"
        async with httpx.AsyncClient() as client:
            reply = await client.post(
                f"{server.openai_url}/chat/completions", json=OPENAI, headers=AUTH
            )
        assert reply.json()["choices"][0]["message"]["content"] == "hello"
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.url
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port)):
        pass


def test_sync_context_and_double_start():
    with FakeServer(default="ok") as server:
        reply = httpx.post(f"{server.url}/api/chat", json=OLLAMA)
        assert reply.json()["message"]["content"] == "ok"
        with pytest.raises(RuntimeError, match="already running"):
            server.start()


def test_unknown_route_is_404(server):
    assert httpx.get(f"{server.url}/v2/nothing").status_code == 404


# -- script, responder, records ------------------------------------------------------------


@pytest.mark.anyio
async def test_script_runs_out_with_a_clear_500(server, http):
    server.add("only one")
    assert server.remaining == 1
    assert (await http.post("/v1/chat/completions", json=OPENAI)).status_code == 200
    assert server.remaining == 0
    reply = await http.post("/v1/chat/completions", json=OPENAI)
    assert reply.status_code == 500
    assert reply.headers["x-should-retry"] == "false"
    assert (
        "no scripted reply left for POST /v1/chat/completions" in reply.json()["error"]["message"]
    )


@pytest.mark.anyio
async def test_responder_gets_the_provider_and_a_decodable_request():
    seen: list[tuple[str, ChatRequest]] = []

    async def respond(provider: str, request: RecordedRequest) -> str:
        seen.append((provider, request.chat_request()))
        return f"answer for {provider}"

    async with (
        FakeServer(responder=respond) as server,
        httpx.AsyncClient(base_url=server.url, headers=AUTH) as http,
    ):
        reply = await http.post("/v1/messages", json={**ANTHROPIC, "system": "be brief"})
        assert reply.json()["content"] == [{"type": "text", "text": "answer for anthropic"}]
    provider, request = seen[0]
    assert provider == "anthropic"
    assert request.messages == (Message.system("be brief"), Message.user("hi"))
    assert request.max_output == 16 and request.model == "claude"


def test_scripted_replies_come_before_the_responder():
    with FakeServer("scripted", responder=lambda provider, request: "computed") as server:
        replies = [
            httpx.post(f"{server.url}/api/chat", json=OLLAMA).json()["message"]["content"]
            for _ in range(2)
        ]
    assert replies == ["scripted", "computed"]


@pytest.mark.anyio
async def test_records_keep_path_headers_body_and_stream_flag(server, http):
    server.add("a", "b")
    await http.post("/v1/chat/completions", json={**OPENAI, "stream": True})
    await http.post("/api/chat", content=b"{not json")
    await http.post("/api/chat", json=OLLAMA)
    first, broken, third = server.requests
    assert (first.provider, first.endpoint, first.method, first.path) == (
        "openai",
        "chat",
        "POST",
        "/v1/chat/completions",
    )
    assert first.stream is True and first.headers["authorization"] == "Bearer sk-test"
    assert first.body["model"] == "gpt-4o"
    assert broken.body is None and broken.raw == b"{not json"
    assert third.stream is False
    with pytest.raises(ValueError, match="not a chat request"):
        broken.chat_request()
    server.reset()
    assert server.requests == () and server.remaining == 0


@pytest.mark.anyio
async def test_models_listings(server, http):
    models = (await http.get("/v1/models")).json()
    assert models["data"][0]["id"] == "fake-model"
    tags = (await http.get("/api/tags")).json()
    assert tags["models"][0]["name"] == "fake-model:latest"
    assert [r.endpoint for r in server.requests] == ["models", "models"]


# -- wire shapes ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_openai_stream_shape(server, http):
    server.add(ScriptedModel.tool_calls(("f", {"a": "é" * 6}), ("g", {})))
    reply = await http.post(
        "/v1/chat/completions",
        json={**OPENAI, "stream": True, "stream_options": {"include_usage": True}},
    )
    assert reply.headers["content-type"].startswith("text/event-stream")
    data = sse_data(reply.text)
    assert data[-1] == "[DONE]"
    chunks = [orjson.loads(d) for d in data[:-1]]
    opening = chunks[0]["choices"][0]["delta"]
    assert opening["role"] == "assistant" and opening["content"] is None
    assert opening["tool_calls"][0]["function"] == {"name": "f", "arguments": ""}
    fragments = [
        c["choices"][0]["delta"].get("tool_calls", [{}])[0] for c in chunks if c["choices"]
    ]
    arguments = "".join(
        f.get("function", {}).get("arguments", "") for f in fragments if f.get("index") == 0
    )
    assert orjson.loads(arguments) == {"a": "é" * 6}
    assert len([f for f in fragments if f.get("index") == 0]) > 2
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0
    assert all(c["usage"] is None for c in chunks[:-1])


@pytest.mark.anyio
async def test_anthropic_stream_event_sequence(server, http):
    server.add(ScriptedModel.tool_call("f", q=1))
    reply = await http.post("/v1/messages", json={**ANTHROPIC, "stream": True})
    events = [line[7:] for line in reply.text.splitlines() if line.startswith("event: ")]
    assert events == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    deltas = [orjson.loads(d) for d in sse_data(reply.text)]
    assert deltas[3]["delta"] == {"type": "input_json_delta", "partial_json": ""}
    assert deltas[6]["delta"]["stop_reason"] == "tool_use"


@pytest.mark.anyio
async def test_ollama_streams_ndjson_by_default_with_whole_tool_calls(server, http):
    server.add(Message.assistant("ok", tool_calls=(ToolCall("call_x", "f", {"a": [1]}),)))
    body = {key: value for key, value in OLLAMA.items() if key != "stream"}
    reply = await http.post("/api/chat", json=body)
    assert reply.headers["content-type"] == "application/x-ndjson"
    lines = [orjson.loads(line) for line in reply.text.splitlines()]
    calls = [line["message"]["tool_calls"] for line in lines if "tool_calls" in line["message"]]
    assert calls == [
        [{"id": "call_x", "function": {"index": 0, "name": "f", "arguments": {"a": [1]}}}]
    ]
    assert lines[-1]["done"] is True and lines[-1]["done_reason"] == "stop"


@pytest.mark.anyio
async def test_gigachat_refuses_to_render_parallel_calls(server, http):
    token = (
        await http.post(
            "/api/v2/oauth",
            data={"scope": "GIGACHAT_API_PERS"},
            headers={
                "authorization": "Basic aWQ6c2VjcmV0",
                "rquid": "6f0b1291-c7f3-43c6-bb2e-9f3efb2dc98e",
            },
        )
    ).json()["access_token"]
    server.add(ScriptedModel.tool_calls(("a", {}), ("b", {})))
    reply = await http.post(
        "/api/v1/chat/completions",
        json={"model": "GigaChat", "messages": [{"role": "user", "content": "hi"}]},
        headers={"authorization": f"Bearer {token}"},
    )
    assert reply.status_code == 500
    assert "at most one function call" in reply.json()["message"]


# -- faults --------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "payload", "body"),
    [
        (
            "/v1/chat/completions",
            OPENAI,
            {
                "error": {
                    "message": "Rate limit reached for requests. Please try again in 1s.",
                    "type": "requests",
                    "param": None,
                    "code": "rate_limit_exceeded",
                }
            },
        ),
        ("/api/chat", OLLAMA, {"error": "error 429"}),
        ("/api/v1/chat/completions", OPENAI, {"status": 429, "message": "Too Many Requests"}),
    ],
)
async def test_error_bodies_per_provider(server, http, path, payload, body):
    server.inject(
        ErrorResponse(429, retry_after=1.5, retry_after_ms=1500, headers={"X-Should-Retry": "true"})
    )
    reply = await http.post(path, json=payload)
    assert reply.status_code == 429
    assert reply.json() == body
    assert reply.headers["retry-after"] == "1.5"
    assert reply.headers["retry-after-ms"] == "1500"
    assert reply.headers["x-should-retry"] == "true"


@pytest.mark.anyio
async def test_anthropic_error_body_and_raw_body_override(server, http):
    server.inject(ErrorResponse(529))
    reply = await http.post("/v1/messages", json=ANTHROPIC)
    assert reply.status_code == 529
    body = reply.json()
    assert body["type"] == "error" and body["request_id"].startswith("req_")
    assert body["error"] == {"type": "overloaded_error", "message": "Overloaded"}
    server.inject(ErrorResponse(413, body="<h1>too large</h1>", content_type="text/html"))
    reply = await http.post("/v1/messages", json=ANTHROPIC)
    assert (reply.status_code, reply.text) == (413, "<h1>too large</h1>")


@pytest.mark.anyio
async def test_injections_count_down_and_filter(server, http):
    server.add("ok", "ok", "ok", "ok")
    server.inject(ErrorResponse(503), times=2, provider="ollama")
    server.inject(ErrorResponse(500), endpoint="embeddings")
    assert (await http.post("/v1/chat/completions", json=OPENAI)).status_code == 200
    statuses = [(await http.post("/api/chat", json=OLLAMA)).status_code for _ in range(3)]
    assert statuses == [503, 503, 200]
    embed = await http.post("/api/embed", json={"model": "m", "input": "x"})
    assert embed.status_code == 500
    server.inject(ErrorResponse(500), times=None)
    assert [(await http.get("/api/tags")).status_code for _ in range(3)] == [500, 500, 500]
    server.clear_faults()
    assert (await http.get("/api/tags")).status_code == 200


def test_inject_rejects_nonsense(server):
    with pytest.raises(ValueError, match="at least one fault"):
        server.inject()
    with pytest.raises(ValueError, match="times must be"):
        server.inject(Delay(1), times=0)


@pytest.mark.anyio
async def test_delay_before_the_first_byte_trips_a_client_timeout(server, http):
    server.add("late", "on time")
    server.inject(Delay(2.0))
    with pytest.raises(httpx.ReadTimeout):
        await http.post("/v1/chat/completions", json=OPENAI, timeout=0.05)
    assert (await http.post("/v1/chat/completions", json=OPENAI)).status_code == 200


@pytest.mark.anyio
async def test_per_request_delay_function():
    def delay(request: RecordedRequest) -> float:
        return 2.0 if request.body and request.body.get("model") == "slow" else 0.0

    async with (
        FakeServer(default="ok", delay=delay) as server,
        httpx.AsyncClient(base_url=server.url) as http,
    ):
        assert (await http.post("/api/chat", json=OLLAMA)).status_code == 200
        with pytest.raises(httpx.ReadTimeout):
            await http.post("/api/chat", json={**OLLAMA, "model": "slow"}, timeout=0.05)


@pytest.mark.anyio
async def test_delay_between_events_stalls_a_stream(server, http):
    server.add("x" * 40)
    server.inject(Delay(between_events=2.0))
    received: list[bytes] = []
    with pytest.raises(httpx.ReadTimeout):
        async with http.stream(
            "POST", "/api/chat", json={**OLLAMA, "stream": True}, timeout=0.3
        ) as reply:
            async for chunk in reply.aiter_raw():
                received.append(chunk)
    assert received and b"xxxxxxxx" in received[0]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "payload"),
    [
        ("/v1/chat/completions", {**OPENAI, "stream": True}),
        ("/v1/messages", {**ANTHROPIC, "stream": True}),
        ("/api/chat", {**OLLAMA, "stream": True}),
    ],
)
async def test_cut_stream_drops_the_connection_after_n_events(server, http, path, payload):
    server.add("a reply long enough to need many events")
    server.inject(CutStream(2))
    received = b""
    with pytest.raises(httpx.RemoteProtocolError):
        async with http.stream("POST", path, json=payload) as reply:
            async for chunk in reply.aiter_raw():
                received += chunk
    assert received.count(b"\n\n" if path != "/api/chat" else b"\n") == 2


@pytest.mark.anyio
async def test_cut_non_streamed_body(server, http):
    server.add("cut me")
    server.inject(CutStream())
    with pytest.raises(httpx.RemoteProtocolError):
        await http.post("/v1/chat/completions", json=OPENAI)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "payload", "marker"),
    [
        (
            "/v1/chat/completions",
            {**OPENAI, "stream": True},
            b'data: {"error":{"message":"boom","type":"server_error",'
            b'"param":null,"code":null}}\n\n',
        ),
        (
            "/v1/messages",
            {**ANTHROPIC, "stream": True},
            b'event: error\ndata: {"type":"error",'
            b'"error":{"type":"overloaded_error","message":"boom"}}\n\n',
        ),
        ("/api/chat", {**OLLAMA, "stream": True}, b'{"error":"boom"}\n'),
    ],
)
async def test_stream_error_event_per_provider(server, http, path, payload, marker):
    server.add("a reply long enough to need many events")
    server.inject(StreamError(1, "boom"))
    reply = await http.post(path, json=payload)
    assert reply.status_code == 200
    assert reply.content.endswith(marker)


@pytest.mark.anyio
async def test_malformed_json_streamed_and_not(server, http):
    server.inject(MalformedJson(), times=2)
    plain = await http.post("/v1/chat/completions", json=OPENAI)
    assert plain.status_code == 200
    with pytest.raises(ValueError):
        plain.json()
    streamed = await http.post("/v1/chat/completions", json={**OPENAI, "stream": True})
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(sse_data(streamed.text)[0])
    assert server.remaining == 0


@pytest.mark.anyio
async def test_many_concurrent_requests(server, http):
    server.add(*[f"reply {i}" for i in range(100)])
    replies: list[str] = []

    async def call() -> None:
        reply = await http.post("/v1/chat/completions", json=OPENAI)
        replies.append(reply.json()["choices"][0]["message"]["content"])

    async with anyio.create_task_group() as group:
        for _ in range(100):
            group.start_soon(call)
    assert sorted(replies) == sorted(f"reply {i}" for i in range(100))
    assert len(server.requests) == 100


# -- bad input to the kit itself -------------------------------------------------------------


def test_fault_values_are_checked():
    with pytest.raises(ValueError):
        ErrorResponse(99)
    with pytest.raises(ValueError):
        Delay(-1)
    with pytest.raises(ValueError):
        CutStream(-1)
    with pytest.raises(ValueError):
        StreamError(-2)


def test_inject_and_add_reject_foreign_objects(server):
    with pytest.raises(TypeError, match="not a fault"):
        server.inject("429")
    with pytest.raises(TypeError, match="a ChatResponse, a Message or a str"):
        server.add(42)
    with pytest.raises(TypeError, match="a ChatResponse, a Message or a str"):
        FakeServer(default=3.5)


@pytest.mark.anyio
async def test_fields_of_unexpected_types_are_a_400_not_a_crash(server, http):
    odd = {**OPENAI, "stream": True, "stream_options": "yes"}
    reply = await http.post("/v1/chat/completions", json=odd)
    assert reply.status_code == 400 and reply.json()["error"]["param"] == "stream_options"
    reply = await http.post("/v1/messages", json={**ANTHROPIC, "thinking": "on"})
    assert reply.status_code == 400
    assert reply.json()["error"]["message"].startswith("invalid request body: AttributeError")
    embed = await http.post("/v1/embeddings", json={"model": "e", "input": "x", "dimensions": 0})
    assert embed.status_code == 400 and embed.json()["error"]["param"] == "dimensions"
    ollama = await http.post("/api/embed", json={"model": "e", "input": "x", "dimensions": True})
    assert ollama.json() == {"error": "dimensions must be a positive integer"}


@pytest.mark.anyio
async def test_undecodable_chat_request_is_a_value_error(server, http):
    server.add("ok")
    await http.post("/v1/chat/completions", json={**OPENAI, "response_format": "json"})
    with pytest.raises(ValueError, match="cannot decode the openai chat request"):
        server.requests[0].chat_request()


# -- compatible-server quirks ----------------------------------------------------------------


@pytest.mark.anyio
async def test_openai_quirks_in_a_stream():
    quirks = OpenAIQuirks(
        omit_ids=True,
        same_index=True,
        whole_arguments=True,
        stop_finish=True,
        reasoning_field="reasoning",
    )
    reply = Message.assistant(
        tool_calls=(ToolCall("", "f", {"a": 1}), ToolCall("", "g", {"b": 2})), reasoning="hmm"
    )
    async with FakeServer(reply, openai_quirks=quirks) as server, httpx.AsyncClient() as http:
        streamed = await http.post(
            f"{server.openai_url}/chat/completions", json={**OPENAI, "stream": True}, headers=AUTH
        )
    chunks = [orjson.loads(d) for d in sse_data(streamed.text)[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas[0] == {"role": "assistant", "content": None, "reasoning": "hmm"}
    fragments = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert fragments == [
        {"index": 0, "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}},
        {"index": 0, "type": "function", "function": {"name": "g", "arguments": '{"b":2}'}},
    ]
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


@pytest.mark.anyio
async def test_openai_quirks_in_a_whole_answer():
    quirks = OpenAIQuirks(
        empty_ids=True, object_arguments=True, reasoning_field="reasoning_content"
    )
    reply = Message.assistant("x", tool_calls=(ToolCall("call_1", "f", {"a": [1]}),), reasoning="r")
    async with FakeServer(reply, openai_quirks=quirks) as server, httpx.AsyncClient() as http:
        answer = await http.post(f"{server.openai_url}/chat/completions", json=OPENAI, headers=AUTH)
    choice = answer.json()["choices"][0]
    assert choice["message"]["reasoning_content"] == "r"
    assert choice["message"]["tool_calls"] == [
        {"id": "", "type": "function", "function": {"name": "f", "arguments": {"a": [1]}}}
    ]
    assert choice["finish_reason"] == "tool_calls"
