"""Whatever a router returns or raises, and whatever the disk does, the error is typed."""

import threading

import pytest

from agentgraph import AgentContext, CheckpointError, GraphBuilder, GraphRunner, RoutingError, node
from agentgraph.checkpoint import SQLiteStore

pytestmark = pytest.mark.anyio


class BadHash:
    def __hash__(self):
        raise RuntimeError("no hash")

    def __repr__(self):
        raise RuntimeError("no repr")


@node
def start(ctx):
    return ctx


@pytest.mark.parametrize(
    ("router", "message"),
    [
        (lambda ctx: [start], "returned [<FunctionNode 'start'>] (list), not a node"),
        (lambda ctx: {"next": 1}, "(dict), not a node"),
        (lambda ctx: BadHash(), "<BadHash whose repr raised RuntimeError>"),
        (lambda ctx: 1 / 0, "raised ZeroDivisionError: division by zero"),
        (lambda ctx: "x" * 10_000_000, "…"),
        (lambda ctx: ctx, "returned an AgentContext, not a node"),
    ],
)
async def test_a_router_that_returns_or_raises_something_else_is_a_routing_error(router, message):
    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(start)
        start.edge_to(router, targets=(g.finish,))
    with pytest.raises(RoutingError) as failed:
        await GraphRunner().run(g.build(), AgentContext("in"))
    error = failed.value
    assert message in str(error) and error.step == 1 and error.context.input == "in"
    assert len(str(error)) < 500


class SmallDisk(SQLiteStore):
    """A store whose database may grow to a few pages only: a full disk, in effect."""

    def _connect(self):
        conn = super()._connect()
        conn.execute("PRAGMA max_page_count = 12")
        return conn


async def test_a_full_disk_says_so_in_the_first_line(tmp_path):
    @node
    def grow(ctx):
        return ctx.with_state(blob="x" * 200_000)

    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(grow).edge_to(g.finish)
    seen: list[BaseException] = []
    hook, threading.excepthook = threading.excepthook, lambda args: seen.append(args.exc_value)
    try:
        store = SmallDisk(tmp_path / "small.db")
        with pytest.raises(CheckpointError) as failed:
            await GraphRunner().run(g.build(), AgentContext("in"), store=store)
        await store.aclose()
    finally:
        threading.excepthook = hook
    first = str(failed.value).splitlines()[0]
    assert "full" in first and "rollback" not in first
    assert seen == []  # the writer thread printed nothing
