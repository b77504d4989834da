"""A store failure surfaces as `CheckpointError`, from every effect path and the commit.

Never wrapped in `NodeFailed`, never retried as a node failure, never routed by
an error transition; it carries where the run was (`.context`, `.step`, `.path`).
"""

import threading

import pytest

from agentgraph import (
    AgentContext,
    CheckpointError,
    GraphBuilder,
    GraphRunner,
    Message,
    NodeFailed,
    RetryPolicy,
    node,
    tool,
)
from agentgraph.checkpoint import MemoryStore, SQLiteStore
from agentgraph.llm import ChatRequest, ToolCall
from agentgraph.nodes import parallel
from agentgraph.testing import ScriptedModel

pytestmark = pytest.mark.anyio


class FailingStore(MemoryStore):
    """A store that works until `failing` is set; then each `write`, or only each
    `flush` (a store that queues its writes), raises what `error()` makes."""

    def __init__(self, error, *, at="write"):
        super().__init__()
        self.error = error
        self.at = at
        self.failing = False

    def write(self, records):
        if self.failing and self.at == "write":
            raise self.error()
        super().write(records)

    async def flush(self, run_id=None):
        if self.failing:
            raise self.error()
        await super().flush(run_id)


def refused():
    return CheckpointError("the store refused the write: disk full")


def disk_full():
    return OSError(28, "No space left on device")


class Words:
    dimensions = 2

    async def embed(self, texts):
        return [[float(len(t)), 1.0] for t in texts]


@tool(retry_safe=False)
def send(to: str) -> str:
    """Send a message."""
    return f"sent to {to}"


@tool
def look(query: str) -> str:
    """Look something up."""
    return f"found {query}"


REQUEST = ChatRequest(messages=[Message.user("hi")])


async def call_model(rt):
    await rt.call_model(ScriptedModel("hello"), REQUEST)


async def stream_model(rt):
    async with rt.stream_model(ScriptedModel("hello"), REQUEST) as events:
        async for _ in events:
            pass


async def call_unsafe_tool(rt):
    await rt.call_tools([send], [ToolCall("c1", "send", {"to": "ann"})])


async def call_safe_tool(rt):
    await rt.call_tools([look], [ToolCall("c1", "look", {"query": "x"})])


async def once(rt):
    await rt.once("now", lambda: 12.5)


async def embed(rt):
    await rt.embed(Words(), ["a text"])


async def interrupt(rt):
    await rt.interrupt("go on?")


EFFECTS = {
    "call_model": call_model,
    "stream_model": stream_model,
    "call_tools (unsafe)": call_unsafe_tool,
    "call_tools (safe)": call_safe_tool,
    "once": once,
    "embed": embed,
    "interrupt": interrupt,
}


def graph_of(effect, store, runs):
    @node
    async def work(ctx: AgentContext[str], rt) -> AgentContext[str]:
        runs.append(ctx.input)
        store.failing = True
        await effect(rt)
        return ctx.with_input("done")

    @node
    def handler(ctx):
        raise AssertionError("a store failure is not a node failure to route")

    # A policy that retries anything: a store failure is still not retried.
    work = work.with_retry(RetryPolicy(attempts=3, initial=0, jitter=0, retry_on=lambda e: True))
    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(work).edge_to(g.finish)
        work.on_error(handler).edge_to(g.finish)
    return g.build()


@pytest.mark.parametrize("error", [refused, disk_full])
@pytest.mark.parametrize("effect", sorted(EFFECTS))
async def test_a_store_failure_in_an_effect_is_a_checkpoint_error_where_it_happened(effect, error):
    store, runs = FailingStore(error), []
    with pytest.raises(CheckpointError) as failed:
        await GraphRunner().run(
            graph_of(EFFECTS[effect], store, runs), AgentContext("in"), store=store
        )
    stopped = failed.value
    assert not isinstance(stopped, NodeFailed)
    assert runs == ["in"]  # tried once: not retried, whatever the node's policy says
    assert (stopped.context.input, stopped.step, stopped.path) == ("in", 1, ("g", "work"))
    if error is disk_full:  # a store that raised something else: named, and kept as the cause
        assert isinstance(stopped.__cause__, OSError)
        assert "No space left on device" in str(stopped)


@pytest.mark.parametrize("at", ["write", "flush"])
async def test_a_store_failure_at_a_commit_or_at_the_end_is_a_checkpoint_error(at):
    store = FailingStore(disk_full, at=at)

    @node
    def work(ctx: AgentContext[str]) -> AgentContext[str]:
        store.failing = True
        return ctx.with_input("done")

    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(work).edge_to(g.finish)
    with pytest.raises(CheckpointError) as failed:
        await GraphRunner().run(g.build(), AgentContext("in"), store=store)
    stopped = failed.value
    assert isinstance(stopped.__cause__, OSError)
    # The step's output is the last good context: it ran, its record is what failed.
    assert stopped.context.input == "done" and stopped.step == 1
    assert stopped.path == (("g", "work") if at == "write" else ("g",))


async def test_a_store_failure_in_a_nested_graph_or_a_fan_out_is_not_wrapped():
    store = FailingStore(refused)

    @node
    async def inner_work(ctx: AgentContext[str], rt) -> AgentContext[str]:
        store.failing = True
        await rt.once("now", lambda: 1)
        return ctx

    with GraphBuilder[str, str]("inner") as inner:
        inner.start.edge_to(inner_work).edge_to(inner.finish)
    both = parallel(inner.build(), inner.build(), merge=lambda ctx, outs: outs[0])
    with GraphBuilder[str, str]("outer") as g:
        g.start.edge_to(both).edge_to(g.finish)
    with pytest.raises(CheckpointError) as failed:
        await GraphRunner().run(g.build(), AgentContext("in"), store=store)
    assert failed.value.path[-2:] == ("inner", "inner_work")
    assert failed.value.context.input == "in"


class SmallDisk(SQLiteStore):
    """A store whose database may grow to a few pages only: a full disk, in effect."""

    def _connect(self):
        conn = super()._connect()
        conn.execute("PRAGMA max_page_count = 12")
        return conn


@pytest.mark.parametrize("effect", ["interrupt", "call_tools (unsafe)"])
async def test_a_full_disk_under_an_effect_that_waits_for_the_disk_is_a_checkpoint_error(
    tmp_path, effect
):
    @node
    async def work(ctx: AgentContext[str], rt) -> AgentContext[str]:
        await rt.once("big", lambda: "x" * 200_000)
        await EFFECTS[effect](rt)
        return ctx

    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(work).edge_to(g.finish)
    seen: list[BaseException] = []
    hook, threading.excepthook = threading.excepthook, lambda args: seen.append(args.exc_value)
    try:
        store = SmallDisk(tmp_path / "small.db")
        with pytest.raises(CheckpointError) as failed:
            await GraphRunner().run(g.build(), AgentContext("in"), store=store)
        await store.aclose()
    finally:
        threading.excepthook = hook
    assert not isinstance(failed.value, NodeFailed)
    assert "full" in str(failed.value).splitlines()[0]
    assert failed.value.path == ("g", "work") and failed.value.step == 1
