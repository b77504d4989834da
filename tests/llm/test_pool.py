"""The spread transport on a real loopback socket."""

import anyio
import httpcore
import httpx
import pytest

from agentgraph.llm import OpenAIModel, SpreadTransport
from agentgraph.llm._pool import default_client
from agentgraph.llm._transport import DEFAULT_TIMEOUT
from agentgraph.testing import FakeServer

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def server():
    with FakeServer(default="hello", delay=0.02) as fake:
        yield fake


async def test_requests_spread_over_pools_and_free_their_slots(server):
    transport = SpreadTransport(pools=4, connections=2)
    peak = [0]
    async with httpx.AsyncClient(transport=transport) as client:

        async def one() -> None:
            body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}
            url = f"{server.openai_url}/chat/completions"
            headers = {"Authorization": "Bearer sk-test-key"}
            response = await client.post(url, json=body, headers=headers)
            peak[0] = max(peak[0], sum(transport.in_flight))
            assert response.status_code == 200

        async with anyio.create_task_group() as tg:
            for _ in range(12):
                tg.start_soon(one)
        assert transport.in_flight == (0, 0, 0, 0)
    assert peak[0] >= 2


async def test_a_failed_request_frees_its_slot():
    transport = SpreadTransport(pools=2, connections=1)
    async with httpx.AsyncClient(transport=transport, timeout=0.5) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get("http://127.0.0.1:9/")  # nothing listens there
    assert transport.in_flight == (0, 0)


async def test_clients_use_it_when_none_is_injected(server, monkeypatch):
    clear_proxies(monkeypatch)
    async with OpenAIModel(
        "fake-model", base_url=server.openai_url, api_key="sk-test-key"
    ) as model:
        from agentgraph.llm import ChatRequest, Message

        response = await model.request(ChatRequest([Message.user("hi")]))
        assert response.message.content == "hello"
        assert isinstance(model._http._http()._transport, SpreadTransport)


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="at least 1"):
        SpreadTransport(pools=0)


PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


def clear_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def proxy_of(client: httpx.AsyncClient, url: str) -> httpcore.URL | None:
    transport = client._transport_for_url(httpx.URL(url))
    pool = getattr(transport, "_pool", None)
    return pool._proxy_url if isinstance(pool, httpcore.AsyncHTTPProxy) else None


async def test_the_default_client_honours_environment_proxies(monkeypatch):
    clear_proxies(monkeypatch)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    monkeypatch.setenv("NO_PROXY", "localhost")
    async with default_client(timeout=DEFAULT_TIMEOUT) as client:
        proxy = proxy_of(client, "https://api.openai.com/v1/chat/completions")
        assert proxy == httpcore.URL("http://127.0.0.1:3128")
        assert proxy_of(client, "https://localhost:8080/v1") is None
        assert client.timeout == DEFAULT_TIMEOUT


async def test_the_default_client_spreads_without_a_proxy(monkeypatch):
    clear_proxies(monkeypatch)
    async with default_client(timeout=DEFAULT_TIMEOUT) as client:
        assert isinstance(client._transport, SpreadTransport)
        assert not client._mounts


def _chat(server: FakeServer, n: int) -> tuple[str, dict, dict]:
    body = {"model": "fake-model", "messages": [{"role": "user", "content": f"request {n}"}]}
    return f"{server.openai_url}/chat/completions", body, {"Authorization": "Bearer sk-test-key"}


async def test_waiters_get_freed_connections_in_arrival_order():
    async with FakeServer(default="ok", delay=0.05) as slow:
        transport = SpreadTransport(pools=1, connections=1)
        async with httpx.AsyncClient(transport=transport, timeout=10) as client:

            async def one(n: int) -> None:
                url, body, headers = _chat(slow, n)
                response = await client.post(url, json=body, headers=headers)
                assert response.status_code == 200

            async with anyio.create_task_group() as tg:
                for n in range(6):
                    tg.start_soon(one, n)
                    await anyio.wait_all_tasks_blocked()  # queued before the next one starts
            assert transport.in_flight == (0,) and transport.waiting == 0
        order = [r.body["messages"][0]["content"] for r in slow.requests]
    assert order == [f"request {n}" for n in range(6)]


async def test_the_whole_wait_is_bounded_and_the_error_names_the_fix():
    async with FakeServer(default="ok", delay=0.5) as slow:
        transport = SpreadTransport(pools=1, connections=2)
        timeout = httpx.Timeout(10, pool=0.1)
        outcomes: list[object] = []
        async with httpx.AsyncClient(transport=transport, timeout=timeout) as client:

            async def one(n: int) -> None:
                url, body, headers = _chat(slow, n)
                try:
                    outcomes.append(
                        (await client.post(url, json=body, headers=headers)).status_code
                    )
                except httpx.PoolTimeout as exc:
                    outcomes.append(exc)

            async with anyio.create_task_group() as tg:
                for n in range(6):
                    tg.start_soon(one, n)
            assert transport.in_flight == (0,) and transport.waiting == 0
        assert len(slow.requests) == 2  # the others never reached the server
    assert outcomes.count(200) == 2
    errors = [o for o in outcomes if isinstance(o, httpx.PoolTimeout)]
    assert len(errors) == 4
    assert "all 2 (1 pools of 2) were busy" in str(errors[0])
    assert "SpreadTransport(pools=..., connections=...)" in str(errors[0])


async def test_a_provider_client_reports_the_wait_as_a_retryable_timeout():
    from agentgraph import ProviderTimeout
    from agentgraph.llm import ChatRequest, Message, ProviderRetry

    async with FakeServer(default="ok", delay=0.5) as slow:
        transport = SpreadTransport(pools=1, connections=1, pool_wait=0.05)
        client = httpx.AsyncClient(transport=transport)
        model = OpenAIModel(
            "fake-model",
            base_url=slow.openai_url,
            api_key="sk-test-key",
            http_client=client,
            retry=ProviderRetry(max_retries=0),
        )
        errors: list[ProviderTimeout] = []

        async def one() -> None:
            try:
                await model.request(ChatRequest([Message.user("hi")]))
            except ProviderTimeout as exc:
                errors.append(exc)

        async with client, anyio.create_task_group() as tg:
            tg.start_soon(one)
            tg.start_soon(one)
    (error,) = errors
    assert error.retryable and "waited too long for a connection" in str(error)


async def test_a_waiter_cancelled_in_line_passes_its_turn_on():
    async with FakeServer(default="ok", delay=0.2) as slow:
        transport = SpreadTransport(pools=1, connections=1)
        async with httpx.AsyncClient(transport=transport, timeout=10) as client:
            url, body, headers = _chat(slow, 0)
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    client.post, url
                )  # holds the one connection (refused after the delay)
                await anyio.wait_all_tasks_blocked()
                with anyio.move_on_after(0.05):
                    await client.post(url, json=body, headers=headers)
                assert transport.waiting == 0
                response = await client.post(url, json=body, headers=headers)
            assert response.status_code == 200
            assert transport.in_flight == (0,)


def test_a_negative_pool_wait_is_refused():
    with pytest.raises(ValueError, match="pool_wait"):
        SpreadTransport(pool_wait=-1)
