"""After a brownout, throttled clients come back spread out, not all at once.

Simulated time (trio's `MockClock` jumps ahead whenever every task sleeps):
100 clients each send one request a second (a 1 s answer), the service
refuses everything for three seconds with a `retry-after-ms` that points at
the moment it recovers, as a rate limiter whose window resets does, and the
test counts request arrivals per 100 ms window. No wall-clock time is measured.
"""

from __future__ import annotations

import random
from collections import Counter

import anyio
import httpx
import pytest
import trio.testing

from agentgraph.llm import ChatRequest, Message, OpenAIModel, ProviderRetry

CLIENTS = 100
LATENCY = 1.0
BROWNOUT = (5.0, 8.0)
END = 12.0
COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "fine"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}


@pytest.fixture
def anyio_backend():
    return ("trio", {"clock": trio.testing.MockClock(autojump_threshold=0)})


async def arrivals_per_window(retry: ProviderRetry) -> Counter[int]:
    """Request arrivals per 100 ms window of simulated time."""
    windows: Counter[int] = Counter()
    start = anyio.current_time()

    async def handler(request: httpx.Request) -> httpx.Response:
        now = anyio.current_time() - start
        windows[int(now * 10)] += 1
        if BROWNOUT[0] <= now < BROWNOUT[1]:
            wait_ms = (BROWNOUT[1] - now) * 1000
            error = {"error": {"message": "Rate limit reached", "type": "requests", "code": None}}
            return httpx.Response(429, json=error, headers={"retry-after-ms": f"{wait_ms:.3f}"})
        await anyio.sleep(LATENCY)
        return httpx.Response(200, json=COMPLETION)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    model = OpenAIModel("gpt-4o-mini", api_key="sk-test", http_client=client, retry=retry)
    request = ChatRequest([Message.user("hi")])

    async def one(index: int) -> None:
        await anyio.sleep(index * LATENCY / CLIENTS)  # steady load before the brownout
        while anyio.current_time() - start < END:
            await model.request(request)

    async with client, anyio.create_task_group() as group:
        for index in range(CLIENTS):
            group.start_soon(one, index)
    return windows


def burst(windows: Counter[int]) -> tuple[float, int]:
    """(mean arrivals per window before the brownout, most in one window after it)."""
    before = [windows[w] for w in range(20, 50)]
    after = [windows[w] for w in range(80, 110)]
    return sum(before) / len(before), max(after)


@pytest.mark.anyio
async def test_clients_return_spread_out_after_a_brownout():
    random.seed(14)
    level, peak = burst(await arrivals_per_window(ProviderRetry()))
    assert level == pytest.approx(CLIENTS / (LATENCY * 10), rel=0.2)
    assert peak <= 2.5 * level  # 1.5-2.2x over 20 seeds; 10x without the jitter


@pytest.mark.anyio
async def test_without_the_jitter_every_client_returns_in_the_same_window():
    level, peak = burst(await arrivals_per_window(ProviderRetry(retry_after_jitter=0.0)))
    assert peak >= 0.9 * CLIENTS > 5 * level
