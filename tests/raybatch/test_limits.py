"""Shared rate limits: the buckets, and the gate every model call passes (a batch uses them in
test_batch)."""

import pytest

from agentgraph import (
    AgentContext,
    GraphBuilder,
    GraphRunner,
    Message,
    ModelGate,
    ProviderError,
    node,
)
from agentgraph.checkpoint import MemoryStore
from agentgraph.llm import ChatRequest
from agentgraph.nodes import chat
from agentgraph.ray import RateLimit
from agentgraph.ray._limits import Buckets, SharedRateLimits, estimate_tokens
from agentgraph.testing import ScriptedModel


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr("agentgraph.ray._limits.time.monotonic", clock)
    return clock


def test_a_bucket_allows_a_minute_at_once_then_one_refill_at_a_time(clock):
    buckets = Buckets({"openai": RateLimit(requests_per_minute=60)})
    assert [buckets.take("openai", 10) for _ in range(60)] == [0.0] * 60
    assert buckets.take("openai", 10) == pytest.approx(1.0)  # one request a second refills
    assert buckets.take("openai", 10) == pytest.approx(2.0)  # reserved behind the first
    clock.now += 10
    assert buckets.take("openai", 10) == pytest.approx(0.0)
    assert buckets.take("other", 10**9) == 0.0  # no limit for it


def test_tokens_beyond_the_estimate_are_settled_and_a_429_pauses_everyone(clock):
    buckets = Buckets({"m": RateLimit(tokens_per_minute=600)})
    assert buckets.take("m", 500) == 0.0
    buckets.settle("m", 200)  # the answer was longer than estimated: 100 tokens in debt
    assert buckets.take("m", 100) == pytest.approx(20.0)  # 200 tokens at 10 a second
    clock.now += 60
    buckets.pause("m", 7.5)
    assert buckets.take("m", 1) == pytest.approx(7.5)
    clock.now += 8
    assert buckets.take("m", 1) == 0.0


class Remote:
    """Stands in for a Ray actor method: `.remote(...)` calls it, awaitable like a ref."""

    def __init__(self, fn, calls, name):
        self.fn, self.calls, self.name = fn, calls, name

    def remote(self, *args):
        self.calls.append((self.name, *args))
        return Ref(self.fn(*args))


class Ref:
    """Awaitable like a Ray object ref, and harmless when nobody awaits it."""

    def __init__(self, value):
        self.value = value

    def __await__(self):
        return self.value
        yield


class LocalActor:
    def __init__(self, buckets):
        self.calls = []
        for name in ("take", "settle", "pause"):
            setattr(self, name, Remote(getattr(buckets, name), self.calls, name))


def test_the_gate_asks_before_each_model_call_and_settles_after_it(clock):
    actor = LocalActor(Buckets({"scripted": RateLimit(requests_per_minute=600)}))
    gate = SharedRateLimits(frozenset({"scripted"}), actor)
    assert isinstance(gate, ModelGate)
    model = ScriptedModel("one", "two", name="scripted")
    runner = GraphRunner(model_gate=gate)
    first, second = chat(model, name="first"), chat(model, name="second")

    @node
    async def ask(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx.append(Message.user(ctx.input))

    with GraphBuilder[str, str]("two_calls") as g:
        g.start.edge_to(ask).edge_to(first).edge_to(second).edge_to(g.finish)
    out = runner.run_sync(g.build(), AgentContext("hello"))
    assert out.history.last().content == "two"
    request = model.requests[0]
    assert [c[0] for c in actor.calls] == ["take", "settle", "take", "settle"]
    assert actor.calls[0] == ("take", "scripted", estimate_tokens(request))
    assert actor.calls[2] == ("take", "scripted", estimate_tokens(model.requests[1]))
    settled = out.usage.total_tokens - estimate_tokens(request) - estimate_tokens(model.requests[1])
    assert sum(c[2] for c in actor.calls if c[0] == "settle") == settled


def test_a_429_pauses_the_bucket_for_its_retry_after_and_unlimited_models_pass(clock):
    actor = LocalActor(Buckets({"scripted": RateLimit(requests_per_minute=600)}))
    gate = SharedRateLimits(frozenset({"scripted"}), actor)
    busy = ProviderError("slow down", status=429, retry_after=4.0)
    runner = GraphRunner(model_gate=gate)
    with pytest.raises(Exception, match="slow down"):
        runner.run_sync(chat(ScriptedModel(busy, name="scripted")), AgentContext("hi"))
    assert actor.calls[-1] == ("pause", "scripted", 4.0)
    assert actor.take.fn("scripted", 1) == pytest.approx(4.0)

    actor.calls.clear()
    runner.run_sync(chat(ScriptedModel("free", name="unlimited")), AgentContext("hi"))
    assert actor.calls == []


@pytest.mark.anyio
async def test_a_step_served_from_the_record_is_not_admitted_again(clock, anyio_backend):
    actor = LocalActor(Buckets({"scripted": RateLimit(requests_per_minute=600)}))
    gate = SharedRateLimits(frozenset({"scripted"}), actor)
    store = MemoryStore()
    graph = chat(ScriptedModel("recorded", name="scripted"))
    runner = GraphRunner(model_gate=gate)
    first = await runner.run(graph, AgentContext("hi"), store=store, run_id="r")
    replayed = await runner.replay(graph, "r", store)
    assert replayed.history == first.history
    assert [c[0] for c in actor.calls] == ["take", "settle"]


def test_a_stream_is_admitted_and_settled_too(clock):
    actor = LocalActor(Buckets({"scripted": RateLimit(tokens_per_minute=6000)}))
    gate = SharedRateLimits(frozenset({"scripted"}), actor)
    model = ScriptedModel("streamed answer", name="scripted")

    @node
    async def stream(ctx: AgentContext[str], rt) -> AgentContext[str]:
        request = ChatRequest([Message.user(ctx.input)])
        async with rt.stream_model(model, request) as events:
            async for _ in events:
                pass
        return ctx

    GraphRunner(model_gate=gate).run_sync(stream, AgentContext("hi"))
    assert [c[0] for c in actor.calls] == ["take", "settle"]
