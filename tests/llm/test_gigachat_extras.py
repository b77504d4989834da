"""GigaChat embeddings (signed in like the chat client) and few-shot examples on functions."""

from __future__ import annotations

import httpx
import pytest

from agentgraph import ResponseFormatError, tool
from agentgraph.llm import ChatRequest, GigaChatEmbedder, Message

from .support import Server, Sleeps, json_response, retry
from .test_gigachat import AUTH, CREDENTIALS, UNAUTHORIZED, completion, model, token

pytestmark = pytest.mark.anyio


def embedder(server: Server, **kwargs) -> GigaChatEmbedder:
    return GigaChatEmbedder(
        credentials=CREDENTIALS,
        base_url="https://giga.test/api/v1",
        auth_url=AUTH,
        http_client=server.client(),
        retry=retry(Sleeps()),
        **kwargs,
    )


def vectors(*rows: list[float], shuffle: bool = False) -> httpx.Response:
    data = [{"object": "embedding", "embedding": row, "index": i} for i, row in enumerate(rows)]
    if shuffle:
        data.reverse()
    return json_response({"object": "list", "data": data, "model": "Embeddings"})


async def test_embeddings_sign_in_batch_and_keep_the_input_order(anyio_backend):
    server = Server(
        token("tok-1"),
        vectors([1.0, 0.0], [0.0, 1.0], shuffle=True),
        vectors([0.5, 0.5]),
    )
    embed = embedder(server, batch_size=2)
    got = await embed.embed(["a", "b", "c"])
    assert got == [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]] and embed.dimensions == 2
    assert server.paths == ["/api/v2/oauth", "/api/v1/embeddings", "/api/v1/embeddings"]
    assert server.body(1) == {"model": "Embeddings", "input": ["a", "b"]}
    assert server.requests[2].headers["authorization"] == "Bearer tok-1"


async def test_embeddings_refresh_the_token_once_and_refuse_broken_answers(anyio_backend):
    server = Server(
        token("old"),
        json_response(UNAUTHORIZED, 401),
        token("new"),
        vectors([1.0]),
        json_response({"data": [{"embedding": "nope", "index": 0}]}),
    )
    embed = embedder(server)
    assert await embed.embed(["x"]) == [[1.0]]
    assert server.requests[3].headers["authorization"] == "Bearer new"
    with pytest.raises(ResponseFormatError, match="not a list of numbers"):
        await embed.embed(["y"])


async def test_tool_examples_become_few_shot_examples(anyio_backend):
    @tool(examples=[("weather in Oslo?", {"city": "Oslo"})])
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    server = Server(token("t"), json_response(completion({"content": "ok"})))
    await model(server).request(ChatRequest([Message.user("hi")], tools=[get_weather.spec]))
    (function,) = server.body()["functions"]
    assert function["few_shot_examples"] == [
        {"request": "weather in Oslo?", "params": {"city": "Oslo"}}
    ]
