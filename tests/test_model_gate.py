"""A run's model gate hears once how every admitted call ended: usage, error, or cut."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from agentgraph import AgentContext, GraphRunner, GraphTimeout, Usage
from agentgraph.guards import PARTIAL, Decision, Guards, guard
from agentgraph.llm import ChatRequest, ChatResponse
from agentgraph.nodes import chat
from agentgraph.testing import ScriptedModel

pytestmark = pytest.mark.anyio


class Gate:
    """Keeps what it was told: admitted calls and how each was settled."""

    def __init__(self) -> None:
        self.admitted = 0
        self.settled: list[tuple[Usage | None, Exception | None]] = []

    async def admit(self, provider: str, model: str, request: ChatRequest) -> None:
        self.admitted += 1

    def settle(self, provider, model, request, usage, error) -> None:
        self.settled.append((usage, error))


class Hanging:
    """A model whose answers never come (its stream stops after a first delta)."""

    name = "hanging"

    async def request(self, request: ChatRequest) -> ChatResponse:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    @asynccontextmanager
    async def stream(self, request: ChatRequest) -> AsyncIterator[AsyncIterator[object]]:
        async def events() -> AsyncIterator[object]:
            from agentgraph.llm import TextDelta

            yield TextDelta("thinking")
            await anyio.sleep_forever()

        yield events()


def let_through(stage: str, value: object) -> Decision:
    return Decision.allow()


GUARDS = {
    "plain": None,
    "guard-before": Guards(input=[guard(let_through, stages=["input"])]),
    "guard-beside": Guards(input=[guard(let_through, stages=["input"], rewrites=False)]),
}


@pytest.mark.parametrize("stream", [False, True], ids=["request", "stream"])
@pytest.mark.parametrize("guards", GUARDS, ids=list(GUARDS))
async def test_a_call_cut_by_the_runs_timeout_is_settled_as_partial(stream, guards):
    gate = Gate()
    runner = GraphRunner(model_gate=gate, timeout=0.05, guards=GUARDS[guards])
    with pytest.raises(GraphTimeout):
        await runner.run(chat(Hanging(), stream=stream), AgentContext("hi"))
    assert gate.admitted == 1 and gate.settled == [(PARTIAL, None)]


@pytest.mark.parametrize("stream", [False, True], ids=["request", "stream"])
@pytest.mark.parametrize("guards", GUARDS, ids=list(GUARDS))
async def test_an_answered_call_is_settled_with_its_usage(stream, guards):
    gate = Gate()
    model = ScriptedModel("hello there")
    runner = GraphRunner(model_gate=gate, guards=GUARDS[guards])
    out = await runner.run(chat(model, stream=stream), AgentContext("hi"))
    assert gate.admitted == 1 and gate.settled == [(out.usage, None)]
    assert out.usage.total_tokens > 0
