"""One model, several event loops: each loop gets its own connection pool, closed when it ends."""

import asyncio
import base64
import gc
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest
import trio

from agentgraph import AgentContext, GraphRunner, NodeFailed, UsageError
from agentgraph.llm import (
    AnthropicModel,
    ChatRequest,
    GigaChatEmbedder,
    GigaChatModel,
    Message,
    OllamaEmbedder,
    OllamaModel,
    OpenAIEmbedder,
    OpenAIModel,
    OpenAIResponsesModel,
    TextDelta,
    litellm_model,
    model_from_string,
)
from agentgraph.llm import _loops as loops_module
from agentgraph.llm import _transport as transport_module
from agentgraph.llm._loops import LoopPools, current_loop
from agentgraph.nodes import generate
from agentgraph.testing import FakeServer

BASIC = base64.b64encode(b"client:secret").decode()
HI = ChatRequest([Message.user("hi")])
BACKENDS = ("asyncio", "trio", "asyncio")


def in_asyncio(fn: Callable[..., Any], *args: Any) -> Any:
    return asyncio.run(fn(*args))


def in_trio(fn: Callable[..., Any], *args: Any) -> Any:
    return trio.run(fn, *args)


def in_anyio(fn: Callable[..., Any], *args: Any) -> Any:
    return anyio.run(fn, *args)


RUNS = (in_asyncio, in_trio, in_anyio, in_asyncio)
PROVIDERS = ("openai", "openai-responses", "anthropic", "ollama", "gigachat", "litellm")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer(default="hello") as fake:
        yield fake


def make(provider: str, server: FakeServer) -> Any:
    if provider == "openai":
        return OpenAIModel("gpt-4o-mini", api_key="sk-test", base_url=server.openai_url)
    if provider == "openai-responses":
        return OpenAIResponsesModel("gpt-4o-mini", api_key="sk-test", base_url=server.openai_url)
    if provider == "anthropic":
        return AnthropicModel("claude-test", api_key="sk-ant", base_url=server.url)
    if provider == "ollama":
        return OllamaModel("llama3.2", base_url=server.url)
    if provider == "gigachat":
        return GigaChatModel(
            credentials=BASIC, base_url=server.gigachat_url, auth_url=server.gigachat_auth_url
        )
    return litellm_model("fake-model", base_url=server.openai_url, api_key="sk-test")


async def ask_and_stream(model: Any) -> str:
    async with model.stream(HI) as events:
        streamed = "".join([e.text async for e in events if isinstance(e, TextDelta)])
    # Last, so that a kept-alive connection is what the next loop would find.
    answer = await model.request(HI)
    assert streamed == answer.message.content
    return answer.message.content


def pools(model: Any) -> LoopPools:
    source = model._http._source
    assert isinstance(source, LoopPools)
    return source


@contextmanager
def no_leaks() -> Iterator[None]:
    """Fails if a socket, transport or task is collected unclosed meanwhile or at the end."""
    caught: list[str] = []
    previous = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: caught.append(repr(unraisable.exc_value))
    try:
        yield
        gc.collect()
    finally:
        sys.unraisablehook = previous
    assert caught == []


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_model_serves_one_event_loop_after_another(server, provider):
    with no_leaks():
        model = make(provider, server)
        answers = [run(ask_and_stream, model) for run in RUNS]
        assert answers == ["hello"] * 4
        assert pools(model)._pools == {}  # each loop closed its own pool as it ended
        del model


def test_run_sync_twice_with_one_model(server):
    with no_leaks():
        model = model_from_string("openai:fake-model", base_url=server.openai_url, api_key="k")
        graph = generate(instruction="Answer.", model=model)
        runner = GraphRunner()
        first = runner.run_sync(graph, AgentContext("one"))
        second = runner.run_sync(graph, AgentContext("two"), backend="trio")
        third = runner.run_sync(graph, AgentContext("three"))
        assert [first.input, second.input, third.input] == ["hello"] * 3
        del model, graph


@pytest.mark.parametrize("kind", ["openai", "ollama", "gigachat"])
def test_an_embedder_serves_one_event_loop_after_another(server, kind):
    with no_leaks():
        if kind == "openai":
            embedder: Any = OpenAIEmbedder(base_url=server.openai_url, api_key="sk-test")
        elif kind == "ollama":
            embedder = OllamaEmbedder("nomic-embed-text", base_url=server.url)
        else:
            embedder = GigaChatEmbedder(
                credentials=BASIC, base_url=server.gigachat_url, auth_url=server.gigachat_auth_url
            )
        vectors = [anyio.run(embedder.embed, ["a", "b"], backend=b) for b in BACKENDS]
        assert vectors[0] == vectors[1] == vectors[2]
        assert len(vectors[0]) == 2
        del embedder


def proxy_to(server: FakeServer) -> Callable[[httpx.Request], httpx.Response]:
    """A MockTransport handler answering from the fake server: every provider's real format."""
    upstream = httpx.Client()

    def handle(request: httpx.Request) -> httpx.Response:
        forwarded = upstream.build_request(
            request.method, str(request.url), headers=request.headers, content=request.read()
        )
        answer = upstream.send(forwarded)
        headers = {"content-type": answer.headers.get("content-type", "application/json")}
        return httpx.Response(answer.status_code, headers=headers, content=answer.content)

    handle.close = upstream.close  # type: ignore[attr-defined]
    return handle


@pytest.mark.parametrize("provider", PROVIDERS)
def test_each_loop_gets_a_client_of_its_own_closed_when_it_ends(server, provider, monkeypatch):
    handler = proxy_to(server)
    made: list[tuple[object, httpx.AsyncClient]] = []

    def default_client(**_: Any) -> httpx.AsyncClient:
        client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        made.append((current_loop(), client))
        return client

    monkeypatch.setattr(transport_module, "default_client", default_client)
    model = make(provider, server)

    async def twice(model: Any) -> object:
        await ask_and_stream(model)
        await ask_and_stream(model)  # the same loop reuses its client
        return current_loop()

    loops = [anyio.run(twice, model, backend=b) for b in BACKENDS]
    handler.close()  # type: ignore[attr-defined]
    assert [loop for loop, _ in made] == loops
    assert all(client.is_closed for _, client in made)


def test_a_model_entered_in_one_loop_refuses_another(server):
    async def elsewhere(model: Any) -> None:
        await model.request(HI)

    async def main(model: Any) -> None:
        async with model:
            await model.request(HI)
            with pytest.raises(UsageError, match="entered with `async with` in another event"):
                await anyio.to_thread.run_sync(anyio.run, elsewhere, model)
        # Left: another loop may use it again.
        await anyio.to_thread.run_sync(anyio.run, elsewhere, model)

    with no_leaks():
        anyio.run(main, make("openai", server))


def test_the_refusal_reaches_a_run_as_the_cause(server):
    def run_elsewhere(graph: Any) -> None:
        GraphRunner().run_sync(graph, AgentContext("x"), backend="trio")

    async def main(model: Any) -> None:
        graph = generate(instruction="Answer.", model=model)
        async with model:
            with pytest.raises(NodeFailed) as failed:
                await anyio.to_thread.run_sync(run_elsewhere, graph)
            assert isinstance(failed.value.__cause__, UsageError)
            assert "use it without `async with`" in str(failed.value.__cause__)

    with no_leaks():
        anyio.run(main, make("openai", server))


def test_loops_in_two_threads_share_a_model(server):
    answers: list[str] = []
    barrier = threading.Barrier(2, timeout=20)

    async def run_in_thread(model: Any) -> None:
        for _ in range(3):
            answers.append((await model.request(HI)).message.content)
            await anyio.to_thread.run_sync(barrier.wait)  # both loops hold a pool at once

    def thread_main(model: Any, backend: str) -> None:
        anyio.run(run_in_thread, model, backend=backend)

    with no_leaks():
        model = make("openai", server)
        threads = [
            threading.Thread(target=thread_main, args=(model, b)) for b in ("asyncio", "trio")
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert answers == ["hello"] * 6
        assert pools(model)._pools == {}
        del model


def test_aclose_in_a_later_loop_closes_that_loop_s_pool(server):
    async def ask_then_close(model: Any) -> httpx.AsyncClient:
        await model.request(HI)
        client = model._http._http()
        await model.aclose()
        return client

    with no_leaks():
        model = make("openai", server)
        anyio.run(model.request, HI)
        closed = anyio.run(ask_then_close, model, backend="trio")
        assert closed.is_closed
        anyio.run(model.aclose)  # nothing left to close: still fine
        assert pools(model)._pools == {}
        del model


def test_an_injected_client_is_used_as_given(server):
    async def main() -> None:
        async with httpx.AsyncClient() as client:
            model = OpenAIModel(
                "m", api_key="sk-test", base_url=server.openai_url, http_client=client
            )
            await model.request(HI)
            await model.aclose()
            assert model._http._http() is client
            assert not client.is_closed

    anyio.run(main)


def test_gigachat_refreshes_its_token_in_a_later_loop(server):
    async def refresh(model: GigaChatModel) -> str:
        return await model._access_token(stale=model._token)

    with no_leaks():
        model = make("gigachat", server)
        tokens = [anyio.run(refresh, model, backend=b) for b in BACKENDS]
        assert all(tokens)
        del model


def test_a_loop_closed_without_shutting_down_leaves_nothing_pending(server, monkeypatch, caplog):
    handler = proxy_to(server)
    made: list[httpx.AsyncClient] = []

    def default_client(**_: Any) -> httpx.AsyncClient:
        made.append(httpx.AsyncClient(transport=httpx.MockTransport(handler)))
        return made[-1]

    monkeypatch.setattr(transport_module, "default_client", default_client)
    model = make("openai", server)
    loop = asyncio.new_event_loop()
    loop.run_until_complete(model.request(HI))
    loop.close()  # its tasks, the pool's guard among them, are never cancelled
    assert asyncio.run(model.request(HI)).message.content == "hello"
    assert loop not in loops_module._guarded and loop not in pools(model)._pools
    handler.close()  # type: ignore[attr-defined]
    del loop
    gc.collect()
    assert "destroyed but it is pending" not in caplog.text
    assert len(made) == 2 and made[1].is_closed


def test_the_gigachat_embedder_is_entered_like_the_other_clients(server):
    async def embed_elsewhere(embedder: GigaChatEmbedder) -> list[list[float]]:
        return await embedder.embed(["a"])

    async def main() -> None:
        async with GigaChatEmbedder(
            credentials=BASIC, base_url=server.gigachat_url, auth_url=server.gigachat_auth_url
        ) as embedder:
            assert len(await embedder.embed(["a"])) == 1
            with pytest.raises(UsageError, match="entered with `async with`"):
                await anyio.to_thread.run_sync(anyio.run, embed_elsewhere, embedder)

    with no_leaks():
        anyio.run(main)
