"""Sinks that say which events they want get only those, and events nobody wants are not built."""

from __future__ import annotations

from typing import Any

import pytest

import agentgraph._core._runtime
from agentgraph import (
    AgentContext,
    GraphRunner,
    NodeFinished,
    NodeStarted,
    RouteChosen,
    RunFinished,
    RunStarted,
)
from tests.helpers import adder, chain

pytestmark = pytest.mark.anyio


class Picky:
    """A sink that takes the kinds in `wants` and keeps them."""

    def __init__(self, *kinds: type[Any]) -> None:
        self.wants = frozenset(kinds)
        self.got: list[Any] = []

    def __call__(self, event: Any) -> None:
        self.got.append(event)


class AsyncPicky(Picky):
    async def __call__(self, event: Any) -> None:  # type: ignore[override]
        self.got.append(event)


def kinds(events: list[Any]) -> list[str]:
    return [type(e).__name__ for e in events]


async def test_a_sink_gets_only_the_kinds_it_wants_and_a_plain_one_gets_all():
    every: list[Any] = []
    finished = Picky(NodeFinished, RunFinished)
    routes = AsyncPicky(RouteChosen)
    runner = GraphRunner(sinks=[finished, every.append, routes])
    await runner.run(chain("g", adder("a"), adder("b")), AgentContext(0))
    assert kinds(every) == [
        "RunStarted",
        "RouteChosen",
        "NodeStarted",
        "NodeFinished",
        "RouteChosen",
        "NodeStarted",
        "NodeFinished",
        "RouteChosen",
        "RunFinished",
    ]
    assert kinds(finished.got) == ["NodeFinished", "NodeFinished", "RunFinished"]
    assert kinds(routes.got) == ["RouteChosen"] * 3
    assert [e for e in every if type(e) in finished.wants] == finished.got


async def test_events_nobody_wants_are_never_built(monkeypatch):
    def refused(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("an event built for nobody")

    for name in ("NodeStarted", "NodeFinished", "RouteChosen"):
        monkeypatch.setattr(agentgraph._core._runtime, name, refused)
    quiet, ends = Picky(), Picky(RunFinished)
    out = await GraphRunner(sinks=[quiet, ends]).run(chain("g", adder("a")), AgentContext(0))
    assert out.input == 1
    assert quiet.got == [] and kinds(ends.got) == ["RunFinished"]


async def test_a_stream_gets_every_event_beside_a_sink_that_wants_none():
    quiet = Picky()
    async with GraphRunner(sinks=[quiet]).stream(chain("g", adder("a")), AgentContext(0)) as events:
        got = [event async for event in events]
    assert kinds(got)[:3] == ["RunStarted", "RouteChosen", "NodeStarted"]
    assert isinstance(got[-1], RunFinished) and quiet.got == []


async def test_a_failing_picky_sink_is_detached_and_the_others_go_on(caplog):
    class Broken(Picky):
        def __call__(self, event: Any) -> None:
            raise RuntimeError("full disk")

    broken, starts = Broken(NodeStarted), Picky(NodeStarted, RunStarted)
    graph = chain("g", adder("a"), adder("b"))
    await GraphRunner(sinks=[broken, starts]).run(graph, AgentContext(0))
    assert kinds(starts.got) == ["RunStarted", "NodeStarted", "NodeStarted"]
    assert len([r for r in caplog.records if "detached" in r.getMessage()]) == 1


@pytest.mark.parametrize("wants", ["NodeFinished", 3, [NodeFinished, "RunFinished"]])
def test_wants_must_be_a_set_of_event_classes(wants):
    class Odd:
        def __call__(self, event: Any) -> None:
            return None

    sink = Odd()
    sink.wants = wants  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="a set of event classes"):
        GraphRunner(sinks=[sink])
