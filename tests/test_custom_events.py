"""A node's own data (`Runtime.emit_custom`) as `CustomEvent`s: to sinks and streams, never
recorded, sent again only by a step that runs again, and not built when nobody listens."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

import agentgraph._core._runtime
from agentgraph import (
    AgentContext,
    CustomEvent,
    GraphBuilder,
    GraphRunner,
    Interrupted,
    Runtime,
    node,
)
from agentgraph.checkpoint import MemoryStore
from agentgraph.tracing import JsonlSink
from tests.helpers import chain
from tests.test_sink_wants import Picky

pytestmark = pytest.mark.anyio


@node(name="work")
async def work(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
    await rt.emit_custom({"progress": 0.5})
    await rt.emit_custom("half way", name="status")
    return ctx.with_input(ctx.input + " done")


def graph() -> Any:
    with GraphBuilder[str, str]("outer") as g:
        g.start.edge_to(chain("inner", work)).edge_to(g.finish)
    return g.build()


async def test_custom_data_reaches_every_sink_and_the_stream_in_order_with_its_step():
    every: list[Any] = []
    await GraphRunner(sinks=[every.append]).run(graph(), AgentContext("x"))
    customs = [e for e in every if isinstance(e, CustomEvent)]
    assert customs == [
        CustomEvent(2, ("outer", "inner", "work"), {"progress": 0.5}, "custom"),
        CustomEvent(2, ("outer", "inner", "work"), "half way", "status"),
    ]
    kinds = [type(e).__name__ for e in every]
    started = kinds.index("NodeStarted", kinds.index("NodeStarted") + 1)
    assert kinds[started + 1 : started + 3] == ["CustomEvent", "CustomEvent"]
    async with GraphRunner().stream(graph(), AgentContext("x")) as events:
        streamed = [e async for e in events if isinstance(e, CustomEvent)]
    assert streamed == customs


async def test_a_sink_that_wants_custom_events_gets_them_alone_and_others_do_not(tmp_path):
    customs, ends = Picky(CustomEvent), Picky(agentgraph.RunFinished)
    path = tmp_path / "trace.jsonl"
    with JsonlSink(path) as trace:
        await GraphRunner(sinks=[customs, ends, trace]).run(graph(), AgentContext("x"))
    assert [e.data for e in customs.got] == [{"progress": 0.5}, "half way"]
    assert [type(e).__name__ for e in ends.got] == ["RunFinished"]
    records = [orjson.loads(line) for line in path.read_text().splitlines()]
    written = [r for r in records if r["event"] == "custom_event"]
    assert [(r["name"], r["data"], r["path"]) for r in written] == [
        ("custom", {"progress": 0.5}, ["outer", "inner", "work"]),
        ("status", "half way", ["outer", "inner", "work"]),
    ]


async def test_custom_events_are_not_built_when_nobody_listens(monkeypatch):
    def refused(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a custom event built for nobody")

    monkeypatch.setattr(agentgraph._core._runtime, "CustomEvent", refused)
    out = await GraphRunner().run(graph(), AgentContext("x"))
    assert out.input == "x done"
    # Nor when the sinks there are want other kinds only.
    ends = Picky(agentgraph.RunFinished, agentgraph.NodeFinished)
    out = await GraphRunner(sinks=[ends]).run(graph(), AgentContext("x"))
    assert out.input == "x done" and len(ends.got) == 3


async def test_a_resumed_run_sends_again_only_the_custom_events_of_the_step_that_runs_again():
    @node(name="first")
    async def first(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
        await rt.emit_custom("first")
        return ctx

    @node(name="ask")
    async def ask(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
        await rt.emit_custom("asking")
        answer = await rt.interrupt("may I?")
        await rt.emit_custom(f"told {answer}")
        return ctx.with_input(str(answer))

    store = MemoryStore()
    events: list[Any] = []
    runner = GraphRunner(sinks=[events.append])
    with pytest.raises(Interrupted) as stopped:
        await runner.run(chain("g", first, ask), AgentContext("x"), store=store)
    sent = [e.data for e in events if isinstance(e, CustomEvent)]
    assert sent == ["first", "asking"]
    events.clear()
    out = await runner.resume(chain("g", first, ask), stopped.value.run_id, store, answer="yes")
    assert out.input == "yes"
    # `first` committed and is not run again; `ask` is, from its start.
    assert [e.data for e in events if isinstance(e, CustomEvent)] == ["asking", "told yes"]
