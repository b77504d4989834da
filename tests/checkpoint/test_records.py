"""What a run stores: one record per committed step, contexts as changes, linear in length."""

import dataclasses
import enum
import time

import attrs
import orjson
import pytest

from agentgraph import (
    AgentContext,
    CheckpointError,
    ContextEncodingError,
    GraphBuilder,
    GraphRunner,
    Message,
    NodeFailed,
    RunHandle,
    Types,
    node,
)
from agentgraph._core._json import to_data
from agentgraph.checkpoint import MemoryStore, RunLog, SQLiteStore, decode_contexts
from tests.checkpoint.support import Tally

pytestmark = pytest.mark.anyio


async def test_every_step_commits_one_record_after_its_graph_routed(store):
    tally = Tally()
    handle = RunHandle()
    before = time.time()
    out = await GraphRunner().run(tally.three_levels(), AgentContext(0), store=store, handle=handle)
    assert out.input == 7 and handle.run_id is not None
    log = await store.load(handle.run_id)
    rows = [(r.seq, r.step, "/".join(r.path), r.node, r.next, r.local, r.steps) for r in log.steps]
    assert rows == [
        (1, 1, "a", "a1", "b", 1, 1),
        (2, 3, "a/b", "b1", "c", 1, 3),
        (3, 5, "a/b/c", "c1", "c2", 1, 5),
        (4, 6, "a/b/c", "c2", "c3", 2, 6),
        (5, 7, "a/b/c", "c3", "finish", 3, 7),
        (6, 4, "a/b", "c", "b2", 2, 7),
        (7, 8, "a/b", "b2", "finish", 3, 8),
        (8, 2, "a", "b", "a2", 2, 8),
        (9, 9, "a", "a2", "finish", 3, 9),
    ]
    assert all(before <= r.at <= time.time() and r.duration >= 0 for r in log.steps)
    assert log.steps[5].duration >= log.steps[2].duration  # a composite spans its steps
    # Each context is the change since the record before: here one message and the input.
    assert orjson.loads(log.steps[0].context) == {"i": 1, "h": [{"r": "user", "c": "a1"}]}
    assert orjson.loads(log.steps[5].context) == {}  # c's output is c3's, unchanged
    assert log.run.graph == "a" and log.run.parent is None
    shape = orjson.loads(log.run.structure)
    assert shape["nodes"] == ["a1", "b", "a2"]
    assert shape["edges"]["a1"] == ["b"]
    assert shape["subgraphs"]["b"]["subgraphs"]["c"]["nodes"] == ["c1", "c2", "c3"]
    contexts = decode_contexts(log)
    assert contexts[0] == AgentContext(0) and contexts[-1] == out
    assert [m.content for m in contexts[-1].history] == [
        "a1", "b1", "c1", "c2", "c3", "b2", "a2"
    ]  # fmt: skip


async def test_a_given_run_id_is_used_and_never_reused(store):
    tally = Tally()
    handle = RunHandle()
    graph = tally.three_levels()
    await GraphRunner().run(graph, AgentContext(0), store=store, run_id="r1", handle=handle)
    assert handle.run_id == "r1"
    with pytest.raises(CheckpointError, match="'r1' is already in the store"):
        await GraphRunner().run(graph, AgentContext(0), store=store, run_id="r1")


def message(i: int) -> Message:
    if i % 2:
        return Message.tool(f"call-{i}", f"result number {i}", name="probe")
    return Message.assistant(f"step {i}: calling the probe tool")


def loop(total: int):
    """llm <-> tool, each step appending one message, until the history holds `total`."""

    @node
    async def llm(ctx: AgentContext[None]) -> AgentContext[None]:
        return ctx.append(message(len(ctx.history)))

    @node
    async def tool(ctx: AgentContext[None]) -> AgentContext[None]:
        return ctx.append(message(len(ctx.history)))

    with GraphBuilder[None, None]("loop") as g:
        g.start.edge_to(llm)
        llm.edge_to(lambda ctx: tool if len(ctx.history) < total else None, targets=(tool,))
        llm.edge_to(g.finish)
        tool.edge_to(llm)
    return g.build()


# Per step, beyond the message itself: six 8-byte numbers (seq, step, local, steps, at,
# duration) = 48, the names (path "loop", node "llm"/"tool", next "tool"/"llm") <= 12, and
# the JSON around the message (`{"h":[` ... `]}`) = 7. 80 leaves a little slack.
STEP_OVERHEAD = 80


async def test_a_thousand_steps_store_each_message_once():
    store = MemoryStore()
    handle = RunHandle()
    runner = GraphRunner(max_steps=2000)
    out = await runner.run(loop(1000), AgentContext(None), store=store, handle=handle)
    log = await store.load(handle.run_id)
    assert len(log.steps) == len(out.history) == 1001  # it ends on llm
    encoded = sum(len(orjson.dumps(to_data(m))) for m in out.history)
    stored = sum(r.nbytes for r in log.steps)
    assert stored < 2 * encoded + STEP_OVERHEAD * 1001
    assert stored < encoded + STEP_OVERHEAD * 1001  # in fact each message is stored once
    assert decode_contexts(log)[-1] == out


async def test_the_sqlite_file_grows_linearly_with_the_run(tmp_path):
    sizes = {}
    for steps in (500, 1000, 2000):
        path = tmp_path / f"{steps}.db"
        async with SQLiteStore(path) as store:
            await GraphRunner(max_steps=3000).run(loop(steps), AgentContext(None), store=store)
        sizes[steps] = path.stat().st_size
    # Doubling the run doubles the file (a quadratic store would quadruple it).
    assert 1.6 < sizes[1000] / sizes[500] < 2.4
    assert 1.6 < sizes[2000] / sizes[1000] < 2.4


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.frozen
class Order:
    item: str
    colour: Colour
    sizes: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Basket:
    orders: list[Order]
    notes: dict[int, str]


async def test_inputs_and_state_holding_attrs_dataclasses_and_enums_round_trip(store):
    @node
    async def fill(ctx: AgentContext[Basket]) -> AgentContext[Basket]:
        more = Order("hat", Colour.BLUE, (1, 2))
        basket = Basket([*ctx.input.orders, more], {**ctx.input.notes, 2: "gift"})
        return ctx.with_input(basket).with_state(last=more, colours=(Colour.RED,))

    with GraphBuilder[Basket, Basket]("shop") as g:
        g.start.edge_to(fill).edge_to(g.finish)
    start = AgentContext(Basket([Order("cap", Colour.RED, (3,))], {1: "first"}))
    handle = RunHandle()
    out = await GraphRunner().run(g.build(), start, store=store, handle=handle)
    types = Types.of(Basket)  # Order and Colour come along: Basket's fields hold them
    initial, final = decode_contexts(await store.load(handle.run_id), types=types)
    assert initial == start and final == out
    assert isinstance(final.input, Basket) and final.input.orders[1].colour is Colour.BLUE
    assert final.state["last"] == Order("hat", Colour.BLUE, (1, 2))
    assert final.input.notes == {1: "first", 2: "gift"}


async def test_an_unencodable_context_fails_the_step_naming_the_field(store):
    @node
    async def connect(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx.with_state(db={"handle": object()})

    with GraphBuilder[int, int]("g") as g:
        g.start.edge_to(connect).edge_to(g.finish)
    with pytest.raises(NodeFailed) as info:
        await GraphRunner().run(g.build(), AgentContext(1), store=store)
    error = info.value
    assert error.path == ("g", "connect") and error.step == 1
    assert error.context == AgentContext(1)
    assert isinstance(error.__cause__, ContextEncodingError)
    assert error.__cause__.field == "context.state['db']['handle']"
    assert "context.state['db']['handle']" in str(error)


async def test_an_unencodable_initial_context_is_refused_before_any_step(store):
    ran = []

    @node
    async def work(ctx):
        ran.append(1)
        return ctx

    with GraphBuilder("g") as g:
        g.start.edge_to(work).edge_to(g.finish)
    with pytest.raises(ContextEncodingError, match=r"context\.input"):
        await GraphRunner().run(g.build(), AgentContext({1, 2}), store=store)
    assert ran == []


async def test_a_run_log_survives_json_lines(store):
    handle = RunHandle()
    await GraphRunner().run(Tally().three_levels(), AgentContext(0), store=store, handle=handle)
    log = await store.load(handle.run_id)
    again = RunLog.loads(log.dumps())
    assert again.steps == log.steps and again.run == log.run
    assert decode_contexts(again) == decode_contexts(log)
    with pytest.raises(CheckpointError, match="line 1"):
        RunLog.loads(b'{"record": "nonsense"}\n')
    with pytest.raises(CheckpointError, match="without its run record"):
        RunLog.loads(b"")


async def test_unknown_runs_and_broken_stores_raise_checkpoint_errors(tmp_path):
    graph = Tally().three_levels()
    with pytest.raises(CheckpointError, match="no run 'nope'"):
        await GraphRunner().resume(graph, "nope", MemoryStore())
    assert await SQLiteStore(tmp_path / "empty.db").load("nope") is None

    broken = SQLiteStore(tmp_path)  # a directory cannot be opened as a database
    with pytest.raises(CheckpointError, match=r"cannot lease runs: .*unable to open"):
        await GraphRunner().run(graph, AgentContext(0), store=broken)
    await broken.aclose()

    closed = SQLiteStore(tmp_path / "closed.db")
    await closed.aclose()
    with pytest.raises(CheckpointError, match="is closed"):
        await GraphRunner().run(graph, AgentContext(0), store=closed)
    with pytest.raises(ValueError, match="synchronous"):
        SQLiteStore(tmp_path / "x.db", synchronous="OFF")
    with pytest.raises(CheckpointError, match="never started"):
        MemoryStore().write((attrs.evolve(_a_step(), run_id="ghost"),))


def _a_step():
    from agentgraph.checkpoint import StepRecord

    return StepRecord("r", 1, 1, ("g",), "n", "finish", 1, 1, b"{}", 0.0, 0.0)


async def test_records_for_an_unknown_run_are_refused_without_stopping_an_sqlite_store(tmp_path):
    store = SQLiteStore(tmp_path / "runs.db")
    store.write((_a_step(),))
    with pytest.raises(CheckpointError, match="never started"):
        await store.flush()
    store.write((_a_step(),))  # the store goes on taking records
    with pytest.raises(CheckpointError, match="never started"):
        await store.flush(run_id="r")
    await store.flush()  # reported once
    await store.aclose()


async def test_sqlite_lists_its_runs_and_memory_too(tmp_path):
    graph = Tally().three_levels()
    async with SQLiteStore(tmp_path / "runs.db") as sqlite:
        memory = MemoryStore()
        for store in (sqlite, memory):
            for rid in ("x", "y"):
                await GraphRunner().run(graph, AgentContext(0), store=store, run_id=rid)
        assert await sqlite.run_ids() == ("x", "y")
        assert memory.run_ids == ("x", "y")
