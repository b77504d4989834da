"""Real traffic the clients must carry whole: line separators inside streamed text."""

import pytest

from agentgraph.llm import ResponseDone, TextDelta
from tests.testing.test_clients_vs_fake import BOTH, HI, PROVIDERS, chat_requests, drain, make

# Legal, unescaped inside JSON strings, and line breaks to str.splitlines.
SEPARATORS = "one\u2028two\u2029three\u0085four\x1cfive\x1dsix\x1eseven\x0bx\x0cy"


@BOTH
@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_streamed_text_with_unicode_line_separators_arrives_whole(server, provider):
    text = f"Lines: {SEPARATORS} end"
    server.add(text, text)
    async with make(provider, server) as model:
        events = await drain(model, HI)
        plain = await model.request(HI)
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert streamed == text and plain.message.content == text
    assert isinstance(events[-1], ResponseDone) and events[-1].response.message.content == text


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_official_sdk_reads_the_same_stream(server, anyio_backend):
    import openai

    text = f"SDK sees: {SEPARATORS}"
    server.add(text)
    client = openai.AsyncOpenAI(api_key="sk-test", base_url=server.openai_url, max_retries=0)
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    parts = [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]
    await client.close()
    assert "".join(parts) == text


@pytest.mark.anyio
async def test_whitespace_beside_a_tool_call_is_not_sent_to_anthropic(server):
    from agentgraph.llm import ChatRequest, Message, ToolCall
    from tests.testing.test_clients_vs_fake import WEATHER

    server.add("It is sunny.")
    call = ToolCall("toolu_1", "weather", {"city": "Oslo"})
    history = [
        Message.user("weather?"),
        Message.assistant("\n\n", tool_calls=(call,)),
        Message.tool("toolu_1", "sunny", name="weather"),
    ]
    async with make("anthropic", server) as model:
        response = await model.request(ChatRequest(history, (WEATHER,)))
    assert response.message.content == "It is sunny."


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_fake_refuses_whitespace_text_blocks_as_the_service_does(server, anyio_backend):
    import anthropic

    client = anthropic.AsyncAnthropic(api_key="sk-ant", base_url=server.url, max_retries=0)
    with pytest.raises(anthropic.BadRequestError, match="non-whitespace text"):
        await client.messages.create(
            model="claude-test",
            max_tokens=10,
            messages=[{"role": "user", "content": [{"type": "text", "text": "\n\n"}]}],
        )
    await client.close()


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_summary_after_the_system_prompt_is_shaped_for_each_provider(server, provider):
    from agentgraph import AgentContext, GraphBuilder, GraphRunner, Message
    from agentgraph.nodes import chat, summarize

    server.add("The user asked about cats and got answers.", "Cats again, yes.")
    async with make(provider, server) as model:
        shorten = summarize(model, context_window=60, threshold=0.5)
        answer = chat(model)
        with GraphBuilder[str, Message]("g") as g:
            g.start.edge_to(shorten).edge_to(answer).edge_to(g.finish)
        ctx = AgentContext("x", system_prompt="You are terse.").append(
            *[Message.user(f"question {i} about cats " * 3) for i in range(3)],
        )
        out = await GraphRunner().run(g.build(), ctx)
    assert out.input.content == "Cats again, yes."
    last = chat_requests(server)[-1]
    roles = [m.role for m in last.chat_request().messages]
    assert roles.count("system") >= 1
    if provider == "gigachat":
        assert roles[0] == "system" and roles.count("system") == 1


@pytest.mark.anyio
async def test_a_stream_ending_after_its_finish_chunk_reports_unknown_usage_not_zero(server):
    from agentgraph.testing import CutStream

    # "Hi" streams as: the role chunk, the text, the finish chunk, the usage chunk, [DONE].
    server.add("Hi", "Hi")
    async with make("openai", server) as model:
        whole = await drain(model, HI)
        server.inject(CutStream(3, clean=True), endpoint="chat")
        cut = await drain(model, HI)
    assert whole[-1].response.usage.unmetered == 0 and whole[-1].response.usage.input_tokens
    response = cut[-1].response
    assert response.message.content == "Hi" and response.finish_reason == "stop"
    assert response.usage.unmetered == 1 and response.usage.requests == 1


@pytest.mark.anyio
async def test_embedding_batches_stay_under_the_token_limit(server):
    from agentgraph import ProviderConfigError
    from agentgraph.llm import OpenAIEmbedder
    from agentgraph.llm._embed import estimate_tokens

    texts = [f"passage {i}: " + "word " * 700 for i in range(1024)]
    async with OpenAIEmbedder(
        api_key="sk-test", base_url=server.openai_url, encoding_format="float"
    ) as embed:
        vectors = await embed.embed(texts)
        assert len(vectors) == 1024
        batches = [r.body["input"] for r in server.requests if r.endpoint == "embeddings"]
        assert len(batches) > 1 and sum(len(b) for b in batches) == 1024
        assert all(sum(estimate_tokens(t) for t in batch) <= 300_000 for batch in batches)
        with pytest.raises(ProviderConfigError, match="split it"):
            await embed.embed(["word " * 40_000])


@pytest.mark.anyio
@pytest.mark.timeout(60)
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_brownout_shorter_than_the_retry_budget_costs_latency_not_runs(
    server, anyio_backend
):
    import anyio

    from agentgraph import AgentContext, GraphRunner
    from agentgraph.llm import OpenAIModel
    from agentgraph.nodes import chat
    from agentgraph.testing import ErrorResponse

    runs = 200
    server.add(*["fine"] * runs)
    server.inject(ErrorResponse(429, headers={"retry-after": "1"}), times=None, endpoint="chat")
    finished: list[str] = []
    async with OpenAIModel("gpt-4o-mini", api_key="sk-test", base_url=server.openai_url) as model:
        node = chat(model)  # default retry settings: 3 attempts, and a 30 s budget when throttled

        async def one() -> None:
            out = await GraphRunner().run(node, AgentContext("hi"))
            finished.append(out.input.content)

        async def end_brownout() -> None:
            await anyio.sleep(3.0)
            server.clear_faults()

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(end_brownout)
                for _ in range(runs):
                    tg.start_soon(one)
    assert finished == ["fine"] * runs
