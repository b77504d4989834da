"""Memory through the run's journal: no double write on resume, no write on replay, forks."""

import sqlite3
import sys
import uuid

import anyio
import pytest

from agentgraph import AgentContext, GraphBuilder, GraphRunner, ReplayDiverged, Runtime, node
from agentgraph.checkpoint import MemoryStore, fork
from agentgraph.memory import InMemoryMemory, journaled
from tests.checkpoint.support import Crash
from tests.memory.crash import ROOT, kill_after_write, open_memory, resume_after_kill

pytestmark = pytest.mark.anyio

USER = ("user", "42")


class Counted(InMemoryMemory):
    """Counts what reaches the store."""

    def __init__(self):
        super().__init__()
        self.reads = 0
        self.writes = 0

    async def get(self, namespace, key):
        self.reads += 1
        return await super().get(namespace, key)

    async def put_many(self, namespace, values, **options):
        self.writes += 1
        return await super().put_many(namespace, values, **options)


def visits_graph(memory, crash=None):
    """read (a get) -> write (a put of the count + 1) -> after; `crash` dies once after the put."""

    @node
    async def read(ctx: AgentContext[int], rt: Runtime) -> AgentContext[int]:
        seen = await journaled(memory, rt).get(USER, "visits")
        return ctx.with_input(0 if seen is None else seen.value["n"])

    @node
    async def write(ctx: AgentContext[int], rt: Runtime) -> AgentContext[int]:
        item = await rt.memory(memory).put(USER, "visits", {"n": ctx.input + 1})
        if crash is not None and crash.pop():
            raise Crash("after the put")
        return ctx.with_input(item.version)

    @node
    async def after(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx

    with GraphBuilder[int, int]("visits") as g:
        g.start.edge_to(read).edge_to(write).edge_to(after).edge_to(g.finish)
    return g.build()


async def test_without_a_store_the_calls_go_straight_through():
    memory = Counted()
    out = await GraphRunner().run(visits_graph(memory), AgentContext(0))
    out = await GraphRunner().run(visits_graph(memory), AgentContext(0))
    assert out.input == 2 and (memory.reads, memory.writes) == (2, 2)


async def test_replay_serves_recorded_reads_and_writes_nothing():
    memory, store = Counted(), MemoryStore()
    runner = GraphRunner()
    out = await runner.run(visits_graph(memory), AgentContext(0), store=store, run_id="r")
    assert out.input == 1
    await memory.put(USER, "visits", {"n": 41})  # the world moved on since
    before = (memory.reads, memory.writes)
    replayed = await runner.replay(visits_graph(memory), "r", store)
    assert replayed.input == 1
    assert (memory.reads, memory.writes) == before
    assert (await memory.get(USER, "visits")).value == {"n": 41}


async def test_a_replay_that_calls_memory_the_record_lacks_diverges():
    memory, store = Counted(), MemoryStore()
    runner = GraphRunner()
    await runner.run(visits_graph(memory), AgentContext(0), store=store, run_id="r")

    @node
    async def other(ctx: AgentContext[int], rt: Runtime) -> AgentContext[int]:
        await journaled(memory, rt).get(("user", "43"), "visits")
        return ctx

    with GraphBuilder[int, int]("visits") as g:
        g.start.edge_to(other).edge_to(g.finish)
    with pytest.raises(ReplayDiverged, match="called memory"):
        await runner.replay(g.build(), "r", store)


async def test_a_fork_reads_what_the_original_read_and_writes_as_a_new_run():
    memory, store = Counted(), MemoryStore()
    runner = GraphRunner()
    await memory.put(USER, "visits", {"n": 10})
    await runner.run(visits_graph(memory), AgentContext(0), store=store, run_id="r")
    assert (await memory.get(USER, "visits")).value == {"n": 11}
    log = await store.load("r")
    read_step = log.steps[0].step
    reads = memory.reads
    forked = await fork(store, "r", read_step)
    out = await runner.resume(visits_graph(memory), forked, store)
    # The fork went on from what the original read (10), not from the store's 11 now,
    # and its write is its own: a new version.
    assert memory.reads == reads
    item = await memory.get(USER, "visits")
    assert item.value == {"n": 11} and item.version == 3 and out.input == 3


async def test_a_crash_after_the_write_does_not_write_twice_on_resume():
    memory, store = Counted(), MemoryStore()
    runner = GraphRunner()
    with pytest.raises(Crash):
        await runner.run(
            visits_graph(memory, crash=[True]), AgentContext(0), store=store, run_id="r"
        )
    out = await runner.resume(visits_graph(memory), "r", store)
    assert out.input == 1
    item = await memory.get(USER, "visits")
    assert (item.version, item.value) == (1, {"n": 1})


async def test_a_write_the_journal_never_recorded_is_not_applied_twice():
    """The memory store committed, the journal lost the record: the effect id saves the day."""
    memory = Counted()

    class Forgetful(MemoryStore):
        def write(self, records):
            kept = [r for r in records if getattr(r, "kind", None) != "memory"]
            super().write(kept)

    lossy = Forgetful()
    runner = GraphRunner()
    with pytest.raises(Crash):
        await runner.run(
            visits_graph(memory, crash=[True]), AgentContext(0), store=lossy, run_id="r"
        )
    out = await runner.resume(visits_graph(memory), "r", lossy)
    item = await memory.get(USER, "visits")
    assert memory.writes == 2  # the resumed step did call put ...
    assert (item.version, item.value) == (1, {"n": 1})  # ... and the store applied it once
    assert out.input == 1


async def test_sigkill_between_the_write_and_the_journal_then_resume(tmp_path):
    runs, mem = tmp_path / "runs.db", tmp_path / "memory.db"
    await kill_after_write("crash_memory", runs, mem)
    out = (await resume_after_kill("crash_memory", runs, mem)).split()
    assert out == ["visit", "1", "version", "1"]  # the resumed step read what it read first
    with sqlite3.connect(mem) as conn:
        rows = conn.execute("SELECT value, version FROM memory_items").fetchall()
        effects = conn.execute("SELECT count(*) FROM memory_effects").fetchone()[0]
    assert rows == [(b'{"n":1}', 1)] and effects == 1


@pytest.fixture
def two_databases(postgres_server):
    """Two PostgreSQL databases of their own, for the checkpoint store and memory."""
    import psycopg

    names = [f"t_{uuid.uuid4().hex[:16]}" for _ in range(2)]
    with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
        for name in names:
            conn.execute(f"CREATE DATABASE {name}")
    base = postgres_server.dsn.rsplit("/", 1)[0]
    yield [f"{base}/{name}" for name in names]
    with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
        for name in names:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.mark.parametrize(
    "where",
    ["sqlite", "sqlite, one file", "postgres", "postgres, one database", "sqlite, postgres"],
)
async def test_a_step_killed_after_its_write_is_served_its_earlier_read(tmp_path, request, where):
    """The step read n=0 and wrote n=1, then died: its resume must read n=0 again (its
    recorded read), not the n=1 it wrote, or its output and memory disagree."""
    if where.startswith("sqlite") and "postgres" not in where:
        runs, mem = str(tmp_path / "runs.db"), str(tmp_path / "memory.db")
    else:
        runs, mem = request.getfixturevalue("two_databases")
        if where.startswith("sqlite"):
            runs = str(tmp_path / "runs.db")
    if where.endswith(("one file", "one database")):
        mem = runs
    await kill_after_write("crash_memory", runs, mem, "--run-id=killed")
    out = (await resume_after_kill("crash_memory", runs, mem, "--run-id=killed")).split()
    assert out == ["visit", "1", "version", "1"]
    memory = open_memory(mem)
    try:
        item = await memory.get(USER, "visits")
        assert item is not None
        assert (dict(item.value), item.version) == ({"n": 1}, 1)
    finally:
        memory.close()


async def test_two_processes_share_one_sqlite_file(tmp_path):
    path = tmp_path / "shared.db"
    script = (
        "import anyio, sys\n"
        "from agentgraph.memory import SQLiteMemory\n"
        "async def main():\n"
        "    m = SQLiteMemory(sys.argv[1])\n"
        "    for i in range(50):\n"
        "        await m.put(('shared',), 'counter', {'by': sys.argv[2], 'i': i})\n"
        "        await m.put(('shared', sys.argv[2]), f'k{i}', {'text': f'item {i}'})\n"
        "    m.close()\n"
        "anyio.run(main)\n"
    )
    async with anyio.create_task_group() as tg:
        for who in ("a", "b"):
            tg.start_soon(
                lambda who=who: anyio.run_process(
                    [sys.executable, "-c", script, str(path), who], cwd=ROOT
                )
            )
    from agentgraph.memory import SQLiteMemory

    memory = SQLiteMemory(path)
    counter = await memory.get(("shared",), "counter")
    assert counter.version == 100  # every put of both processes counted, none lost
    assert len(await memory.search(("shared", "a"), limit=100)) == 50
    assert len(await memory.search(("shared", "b"), limit=100)) == 50
    memory.close()
