"""Background writers (JSON-lines sinks, the SQLite and Postgres stores' writers) hold a
bounded number of threads, however often they are opened and closed."""

import threading

import pytest

from agentgraph import AgentContext, GraphRunner, node
from agentgraph._util._writers import MOST
from agentgraph.checkpoint import SQLiteStore
from agentgraph.tracing import JsonlSink, load_traces
from tests.helpers import chain

pytestmark = pytest.mark.anyio

ROUNDS = 150


@node
async def add(ctx: AgentContext[int]) -> AgentContext[int]:
    return ctx.with_input(ctx.input + 1)


GRAPH = chain("g", add, add.with_name("again"))


async def test_sinks_opened_and_closed_in_a_loop_hold_a_bounded_number_of_threads(tmp_path):
    before = threading.active_count()
    most = before
    for i in range(ROUNDS):
        with JsonlSink(tmp_path / f"{i}.jsonl") as sink:
            await GraphRunner(sinks=[sink]).run(GRAPH, AgentContext(i))
        most = max(most, threading.active_count())
    assert most <= before + MOST
    assert [t.input for t in load_traces(tmp_path / f"{ROUNDS - 1}.jsonl")] == [ROUNDS - 1]


async def test_many_sinks_open_at_once_share_the_writer_threads(tmp_path):
    before = threading.active_count()
    sinks = [JsonlSink(tmp_path / f"{i}.jsonl") for i in range(40)]
    try:
        runner = GraphRunner(sinks=sinks)
        for start in range(3):
            await runner.run(GRAPH, AgentContext(start))
        assert threading.active_count() <= before + MOST
    finally:
        for sink in sinks:
            sink.close()
    assert [t.input for t in load_traces(tmp_path / "39.jsonl")] == [0, 1, 2]


async def test_stores_opened_and_closed_in_a_loop_hold_a_bounded_number_of_threads(tmp_path):
    await GraphRunner().run(GRAPH, AgentContext(0), store=SQLiteStore(tmp_path / "warm.db"))
    before = threading.active_count()
    most = before
    for i in range(ROUNDS // 3):
        async with SQLiteStore(tmp_path / "runs.db") as store:
            await GraphRunner().run(GRAPH, AgentContext(i), store=store)
        most = max(most, threading.active_count())
    # A closed store's writer has ended; reads borrow the event loop's worker threads,
    # which the warm-up run started.
    assert most <= before + 1
