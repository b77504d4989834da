"""agentgraph's provider clients against the fake server: answers, validation, every fault."""

import base64

import anyio
import pytest

from agentgraph import (
    AuthenticationError,
    BadRequestError,
    NotFoundError,
    ProviderConnectionError,
    ProviderStatusError,
    ProviderTimeout,
    RateLimitError,
    ResponseFormatError,
    ServerError,
)
from agentgraph.llm import (
    AnthropicModel,
    ChatRequest,
    GigaChatModel,
    Message,
    OllamaEmbedder,
    OllamaModel,
    OpenAIEmbedder,
    OpenAIModel,
    OpenAIResponsesModel,
    ProviderRetry,
    ResponseDone,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
)
from agentgraph.testing import (
    CutStream,
    Delay,
    ErrorResponse,
    FakeServer,
    MalformedJson,
    OpenAIQuirks,
    ScriptedModel,
    StreamError,
    default_embedding,
)

PROVIDERS = ("openai", "openai-responses", "anthropic", "ollama", "gigachat")
BASIC = base64.b64encode(b"client:secret").decode()
HI = ChatRequest([Message.user("hi")])
WEATHER = ToolSpec(
    "weather",
    "Weather in a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


BOTH = pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
"""The clients are anyio code: the paths that touch the network run on both backends."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Sleeps:
    """A `ProviderRetry.sleep` that records the waits and does not wait."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await anyio.lowlevel.checkpoint()


def make(provider: str, server: FakeServer, *, retries: int = 0, sleeps=None, timeout=None):
    retry = ProviderRetry(max_retries=retries, sleep=sleeps or Sleeps(), retry_after_jitter=0.0)
    common = {"retry": retry, "timeout": timeout}
    if provider == "openai":
        return OpenAIModel("gpt-4o-mini", api_key="sk-test", base_url=server.openai_url, **common)
    if provider == "openai-responses":
        return OpenAIResponsesModel(
            "gpt-4o-mini", api_key="sk-test", base_url=server.openai_url, **common
        )
    if provider == "anthropic":
        return AnthropicModel("claude-test", api_key="sk-ant", base_url=server.url, **common)
    if provider == "ollama":
        return OllamaModel("llama3.2", base_url=server.url, **common)
    return GigaChatModel(
        "GigaChat",
        credentials=BASIC,
        base_url=server.gigachat_url,
        auth_url=server.gigachat_auth_url,
        **common,
    )


def chat_requests(server: FakeServer):
    return [r for r in server.requests if r.endpoint == "chat"]


async def drain(model, request=HI):
    async with model.stream(request) as events:
        return [event async for event in events]


# -- answers and history round trips ---------------------------------------------------------


@BOTH
@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_text_answer_and_stream(server, provider):
    server.add("Hello from the fake", "Streamed hello from the fake")
    async with make(provider, server) as model:
        response = await model.request(HI)
        events = await drain(model)
    assert response.message.content == "Hello from the fake"
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Streamed hello from the fake"
    assert isinstance(events[-1], ResponseDone)
    assert events[-1].response.message.content == text


@BOTH
@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("streamed", [False, True])
async def test_tool_call_round_trip_passes_validation(server, provider, streamed):
    server.add(ScriptedModel.tool_call("weather", city="Paris"), "It is sunny in Paris.")
    request = ChatRequest([Message.user("weather in Paris?")], (WEATHER,))
    async with make(provider, server) as model:
        if streamed:
            events = await drain(model, request)
            assert any(isinstance(e, ToolCallDelta) for e in events)
            first = events[-1].response
        else:
            first = await model.request(request)
        (call,) = first.message.tool_calls
        assert (call.name, dict(call.arguments)) == ("weather", {"city": "Paris"})
        history = [
            *request.messages,
            first.message,
            Message.tool(call.id, '{"sky": "clear"}', name="weather"),
        ]
        second = await model.request(ChatRequest(history, request.tools))
    # The fake refuses histories the real service would refuse, so reaching the
    # final answer proves the client echoed the tool call and its result correctly.
    assert second.message.content == "It is sunny in Paris."
    replayed = chat_requests(server)[-1].chat_request()
    assert [m.role for m in replayed.messages][-3:] == ["user", "assistant", "tool"]


@pytest.mark.anyio
@pytest.mark.parametrize("provider", ["openai", "anthropic", "ollama"])
async def test_parallel_tool_calls(server, provider):
    server.add(ScriptedModel.tool_calls(("weather", {"city": "A"}), ("weather", {"city": "B"})))
    async with make(provider, server) as model:
        events = await drain(model, ChatRequest([Message.user("two")], (WEATHER,)))
    calls = events[-1].response.message.tool_calls
    assert [dict(c.arguments) for c in calls] == [{"city": "A"}, {"city": "B"}]
    assert len({c.id for c in calls}) == 2


# -- status faults -------------------------------------------------------------------------


@BOTH
@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_rate_limit_is_retried_after_the_servers_delay(server, provider):
    server.add("after the wait")
    server.inject(ErrorResponse(429, retry_after=1.5), endpoint="chat")
    sleeps = Sleeps()
    async with make(provider, server, retries=2, sleeps=sleeps) as model:
        response = await model.request(HI)
    assert response.message.content == "after the wait"
    assert sleeps.waits == [1.5]
    assert len(chat_requests(server)) == 2


@pytest.mark.anyio
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_retry_after_ms_wins(server, provider):
    server.add("ok")
    server.inject(ErrorResponse(503, retry_after=9, retry_after_ms=250))
    sleeps = Sleeps()
    async with make(provider, server, retries=1, sleeps=sleeps) as model:
        await model.request(HI)
    assert sleeps.waits == [0.25]


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("status", [500, 502, 503, 529])
async def test_server_errors_are_retried_with_backoff(server, provider, status):
    server.add("recovered")
    server.inject(ErrorResponse(status), times=2, endpoint="chat")
    sleeps = Sleeps()
    async with make(provider, server, retries=2, sleeps=sleeps) as model:
        response = await model.request(HI)
    assert response.message.content == "recovered"
    assert len(sleeps.waits) == 2 and all(w > 0 for w in sleeps.waits)
    if status == 529:
        assert sleeps.waits[0] >= 1.5  # a longer base delay after an overload


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (ErrorResponse(400, message="bad thing"), BadRequestError),
        (ErrorResponse(403), AuthenticationError),
        (ErrorResponse(404), NotFoundError),
        (ErrorResponse(422), BadRequestError),
    ],
)
async def test_client_errors_are_not_retried(server, provider, fault, error):
    server.inject(fault, endpoint="chat")
    sleeps = Sleeps()
    async with make(provider, server, retries=2, sleeps=sleeps) as model:
        with pytest.raises(error) as caught:
            await model.request(HI)
    assert caught.value.status == fault.status and not caught.value.retryable
    assert sleeps.waits == [] and len(chat_requests(server)) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("provider", ["openai", "anthropic", "ollama"])
async def test_unauthorized_is_an_authentication_error(server, provider):
    server.inject(ErrorResponse(401), endpoint="chat")
    async with make(provider, server, retries=2) as model:
        with pytest.raises(AuthenticationError):
            await model.request(HI)


@pytest.mark.anyio
async def test_insufficient_quota_is_not_retried(server):
    server.inject(ErrorResponse(429, code="insufficient_quota", retry_after=1))
    async with make("openai", server, retries=2) as model:
        with pytest.raises(RateLimitError) as caught:
            await model.request(HI)
    assert not caught.value.retryable and len(server.requests) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_x_should_retry_false_vetoes_a_retry(server, provider):
    server.inject(ErrorResponse(503, headers={"x-should-retry": "false"}))
    async with make(provider, server, retries=2) as model:
        with pytest.raises(ServerError):
            await model.request(HI)
    assert len(server.requests) == 1


# -- transport faults ----------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_malformed_json_body_is_retried_once_like_a_gateway_error(server, provider):
    server.add("clean")
    server.inject(MalformedJson(), endpoint="chat")
    async with make(provider, server, retries=1) as model:
        assert (await model.request(HI)).message.content == "clean"
    server.inject(MalformedJson(), times=None, endpoint="chat")
    async with make(provider, server) as model:
        with pytest.raises(ResponseFormatError):
            await model.request(HI)


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_cut_response_body_is_a_connection_error(server, provider):
    # The cut answer used up its scripted reply, as a generated answer would.
    server.add("lost", "whole")
    server.inject(CutStream(), endpoint="chat")
    async with make(provider, server, retries=1) as model:
        assert (await model.request(HI)).message.content == "whole"
    server.add("lost again")
    server.inject(CutStream(), endpoint="chat")
    async with make(provider, server) as model:
        with pytest.raises(ProviderConnectionError):
            await model.request(HI)


@BOTH
@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_cut_stream_after_output_is_not_retried(server, provider):
    server.add("a reply long enough to take several stream events", "unused")
    server.inject(CutStream(5), endpoint="chat")
    received = []
    async with make(provider, server, retries=2) as model:
        with pytest.raises(ProviderConnectionError):
            async with model.stream(HI) as events:
                async for event in events:
                    received.append(event)
    assert received and len(chat_requests(server)) == 1
    assert server.remaining == 1


@BOTH
@pytest.mark.anyio
@pytest.mark.parametrize("provider", ["openai", "anthropic", "ollama"])
async def test_error_inside_a_stream(server, provider):
    server.add("a reply long enough to take several stream events")
    server.inject(StreamError(2, "overloaded midway", error_type="overloaded_error"))
    async with make(provider, server, retries=2) as model:
        with pytest.raises(ProviderStatusError, match="overloaded midway"):
            await drain(model)
    assert len(chat_requests(server)) == 1


@BOTH
@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_slow_first_byte_times_out_then_the_retry_succeeds(server, provider):
    server.add("in time")
    server.inject(Delay(5.0), endpoint="chat")
    async with make(provider, server, retries=1, timeout=0.1) as model:
        response = await model.request(HI)
    assert response.message.content == "in time"
    async with make(provider, server, timeout=0.1) as model:
        server.inject(Delay(5.0), endpoint="chat")
        with pytest.raises(ProviderTimeout):
            await model.request(HI)


@BOTH
@pytest.mark.anyio
async def test_slow_stream_events_time_out(server):
    server.add("a reply long enough to take several stream events")
    server.inject(Delay(between_events=5.0))
    opened = False
    async with make("openai", server, timeout=0.1) as model:
        with pytest.raises(ProviderTimeout):
            async with model.stream(HI) as events:
                opened = True
                async for _ in events:
                    pass
    assert opened  # the stall came after the first event, not before the response


# -- GigaChat tokens and embeddings --------------------------------------------------------


@BOTH
@pytest.mark.anyio
async def test_gigachat_refreshes_an_expired_token(server):
    server.add("one", "two")
    async with make("gigachat", server) as model:
        await model.request(HI)
        server.expire_gigachat_tokens()
        assert (await model.request(HI)).message.content == "two"
    assert [r.endpoint for r in server.requests] == ["oauth", "chat", "chat", "oauth", "chat"]


@pytest.mark.anyio
async def test_gigachat_refused_credentials():
    async with (
        FakeServer(gigachat_credentials="c29tZW9uZTplbHNl") as server,
        make("gigachat", server) as model,
    ):
        with pytest.raises(AuthenticationError, match="did not issue an access token"):
            await model.request(HI)


@pytest.mark.anyio
async def test_anthropic_thinking_round_trip_keeps_the_signature(server):
    server.add(
        Message.assistant(
            tool_calls=(ToolCall("", "weather", {"city": "Oslo"}),), reasoning="plan"
        ),
        "Cold.",
    )
    request = ChatRequest([Message.user("weather?")], (WEATHER,), think=True, max_output=4096)
    async with make("anthropic", server) as model:
        first = await model.request(request)
        assert first.message.reasoning == "plan"
        (call,) = first.message.tool_calls
        history = [*request.messages, first.message, Message.tool(call.id, "-5", name="weather")]
        second = await model.request(
            ChatRequest(history, request.tools, think=True, max_output=4096)
        )
    assert second.message.content == "Cold."
    assert server.requests[-1].body["thinking"]["type"] in ("enabled", "adaptive")


@pytest.mark.anyio
async def test_embedders(server):
    server.inject(ErrorResponse(500), endpoint="embeddings")
    retry = ProviderRetry(max_retries=1, sleep=Sleeps())
    async with OpenAIEmbedder(
        "text-embedding-3-small", api_key="k", base_url=server.openai_url, retry=retry
    ) as openai_embedder:
        vectors = await openai_embedder.embed(["a", "b"])
    assert vectors == [default_embedding("a", 8), default_embedding("b", 8)]
    async with OllamaEmbedder("nomic-embed-text", base_url=server.url) as ollama_embedder:
        assert await ollama_embedder.embed(["c"]) == [default_embedding("c", 8)]
    assert [r.provider for r in server.requests] == ["openai", "openai", "ollama"]


@pytest.mark.anyio
async def test_tool_call_ids_survive_the_trip(server):
    server.add(Message.assistant(tool_calls=(ToolCall("call_kept", "weather", {"city": "X"}),)))
    async with make("openai", server) as model:
        response = await model.request(ChatRequest([Message.user("x")], (WEATHER,)))
    assert response.message.tool_calls[0].id == "call_kept"


# -- compatible-server quirks --------------------------------------------------------------

QUIRKS = [
    OpenAIQuirks(whole_arguments=True),
    OpenAIQuirks(omit_ids=True),
    OpenAIQuirks(empty_ids=True),
    OpenAIQuirks(same_index=True, omit_ids=True),
    OpenAIQuirks(object_arguments=True),
    OpenAIQuirks(stop_finish=True),
]
QUIRK_NAMES = ["whole", "no_ids", "empty_ids", "one_index", "object_args", "stop_finish"]


@pytest.mark.anyio
@pytest.mark.parametrize("quirks", QUIRKS, ids=QUIRK_NAMES)
async def test_openai_client_normalizes_compatible_server_quirks(quirks):
    reply = ScriptedModel.tool_calls(("weather", {"city": "A"}), ("weather", {"city": "B"}))
    request = ChatRequest([Message.user("two")], (WEATHER,))
    async with (
        FakeServer(reply, reply, openai_quirks=quirks) as server,
        make("openai", server) as model,
    ):
        whole = await model.request(request)
        streamed = (await drain(model, request))[-1].response
    for response in (whole, streamed):
        calls = response.message.tool_calls
        assert [(c.name, dict(c.arguments)) for c in calls] == [
            ("weather", {"city": "A"}),
            ("weather", {"city": "B"}),
        ]
        assert all(c.id for c in calls) and len({c.id for c in calls}) == 2


@pytest.mark.anyio
@pytest.mark.parametrize("field", ["reasoning", "reasoning_content"])
async def test_openai_client_reads_both_reasoning_fields(field):
    reply = Message.assistant("answer", reasoning="because")
    async with (
        FakeServer(reply, reply, openai_quirks=OpenAIQuirks(reasoning_field=field)) as server,
        make("openai", server) as model,
    ):
        whole = await model.request(HI)
        events = await drain(model)
    assert whole.message.reasoning == "because"
    assert events[-1].response.message.reasoning == "because"
