"""`PostgresStore` settles lease takes, releases and records together in one commit."""

import secrets
import time

import anyio
import pytest

from agentgraph import AgentContext, CheckpointError, GraphRunner, RunBusy
from agentgraph.checkpoint import PostgresStore, RunRecord, ThreadHead
from tests.checkpoint.test_postgres import adds, query
from tests.helpers import load_benchmark


@pytest.mark.anyio
async def test_takes_of_one_commit_are_decided_in_the_order_asked(dsn, schema):
    async with PostgresStore(dsn, schema=schema) as store:
        outcomes: dict[str, object] = {}

        async def take(owner: str) -> None:
            try:
                outcomes[owner] = await store.acquire("same", owner=owner)
            except RunBusy as busy:
                outcomes[owner] = busy

        async with anyio.create_task_group() as tg:  # all queued before the writer looks
            for owner in ("first", "second", "third"):
                tg.start_soon(take, owner)
        leases = [o for o in outcomes.values() if not isinstance(o, RunBusy)]
        assert len(leases) == 1 and leases[0].fence == 1
        assert sum(isinstance(o, RunBusy) for o in outcomes.values()) == 2
        rows = query(dsn, schema, "SELECT owner, fence FROM leases WHERE run_id = 'same'")
        assert rows == [(leases[0].owner, 1)]


@pytest.mark.anyio
async def test_a_refused_take_fails_alone_beside_good_ones(dsn, schema):
    async with PostgresStore(dsn, schema=schema) as store:
        # Too long for the index of lease rows, even compressed: the server refuses it.
        long_id = secrets.token_hex(8_000)
        results: dict[str, object] = {}

        async def take(run_id: str) -> None:
            try:
                results[run_id] = await store.acquire(run_id, owner="me")
            except CheckpointError as error:
                results[run_id] = error

        async with anyio.create_task_group() as tg:
            tg.start_soon(take, long_id)
            tg.start_soon(take, "fine")
        assert isinstance(results[long_id], CheckpointError)
        assert "cannot lease runs" in str(results[long_id])
        assert not isinstance(results["fine"], Exception)
        out = await GraphRunner().run(adds(2), AgentContext(0), store=store, run_id="after")
        assert out.input == 2


@pytest.mark.anyio
async def test_a_refusal_read_before_the_sync_fails_only_its_write(dsn, schema, monkeypatch):
    """psycopg reads the server's answers while it sends: a taken run id can surface at
    the statement after the insert, not at the sync. The store refuses that write and
    goes on, as when the sync reports it."""
    from agentgraph.checkpoint import _pgsql

    insert_runs = _pgsql._insert_runs

    def slow_insert_runs(*args, **kwargs):
        insert_runs(*args, **kwargs)
        time.sleep(0.2)  # the server's answer is in before the next statement is sent

    async with PostgresStore(dsn, schema=schema) as store:
        await GraphRunner().run(adds(2), AgentContext(0), store=store, run_id="r1")
        monkeypatch.setattr(_pgsql, "_insert_runs", slow_insert_runs)
        with pytest.raises(CheckpointError, match="'r1' is already in the store"):
            await GraphRunner().run(adds(2), AgentContext(0), store=store, run_id="r1")
        out = await GraphRunner().run(adds(2), AgentContext(5), store=store, run_id="r2")
        assert out.input == 7
        log = await store.load("r1")
        assert log is not None and [s.step for s in log.steps] == [1, 2]


@pytest.mark.anyio
async def test_many_runs_at_once_commit_every_step_and_free_their_leases(dsn, schema):
    async with PostgresStore(dsn, schema=schema) as store:
        graph = adds(3)

        async def run(i: int) -> None:
            await GraphRunner().run(graph, AgentContext(i), store=store, run_id=f"r{i}")

        async with anyio.create_task_group() as tg:
            for i in range(30):
                tg.start_soon(run, i)
        for i in range(30):
            log = await store.load(f"r{i}")
            assert log is not None and len(log.steps) == 3
    assert query(dsn, schema, "SELECT count(*) FROM leases WHERE expires > 0") == [(0,)]


def _turn(run_id: str, thread: str, base: str | None) -> tuple[RunRecord, ThreadHead]:
    """A thread's turn of no steps, and the head it makes (as a seeded thread writes them)."""
    return (
        RunRecord(run_id, "thread", b"{}", b"{}", 1.0, thread=thread, base=base),
        ThreadHead(run_id, thread, base, 2.0),
    )


@pytest.mark.anyio
async def test_thread_rows_and_heads_go_in_record_order_among_the_runs(dsn, schema):
    async with PostgresStore(dsn, schema=schema) as store:
        # One write: the first turn makes the thread and its head, the second moves the
        # head on from it; heads applied before the runs or the thread row would not.
        store.write((*_turn("a", "t", None), *_turn("b", "t", "a")))
        store.write(_turn("c", "t", "a"))  # started from a head that moved on: kept aside
        store.write(_turn("d", "u", None))
        await store.flush()
        found = await store.load_thread("t")
        assert found is not None and found.head == "b" and found.created == 1.0
        assert found.runs == (("a", None), ("b", "a"), ("c", "a"))
        assert await store.thread_ids() == ("t", "u")
        log = await store.load("c")
        assert log is not None and (log.run.thread, log.run.base) == ("t", "a")


@pytest.mark.anyio
async def test_a_refused_thread_write_fails_alone_beside_good_ones(dsn, schema):
    async with PostgresStore(dsn, schema=schema) as store:
        store.write(_turn("ok", "t", None))
        store.write((ThreadHead("ghost", "t", "ok", 3.0),))  # a run that never started
        store.write(_turn("nul", "bad\x00thread", None))  # text PostgreSQL cannot keep
        store.write((*_turn("ok2", "t", "ok")[:1], ThreadHead("ok2", "t\x00", "ok", 3.0)))
        store.write(_turn("next", "t", "ok"))
        with pytest.raises(CheckpointError, match="'ghost', which never started"):
            await store.flush(run_id="ghost")
        with pytest.raises(CheckpointError, match=r"refused records of run 'nul'.*0x00"):
            await store.flush(run_id="nul")
        with pytest.raises(CheckpointError, match=r"refused records of run 'ok2'.*0x00"):
            await store.flush(run_id="ok2")
        await store.flush()
        found = await store.load_thread("t")
        assert found is not None and found.head == "next"
        assert found.runs == (("ok", None), ("next", "ok"))
        assert await store.thread_ids() == ("t",)
        assert await store.run_ids() == ("ok", "next")


@pytest.mark.anyio
async def test_refusals_commit_after_commit_keep_the_store_going(dsn, schema):
    # Each commit meets a refusal: the statements after it, which the server skips,
    # are ones psycopg prepares at their sixth use; prepared in a skipped part, they
    # are not on the server, and a later commit using them would stop the store.
    async with PostgresStore(dsn, schema=schema) as store:
        store.write((RunRecord("taken", "g", b"{}", b"{}", 1.0),))
        await store.flush()
        for i in range(12):
            store.write((RunRecord(f"r{i}", "g", b"{}", b"{}", 1.0),))
            store.write((RunRecord("taken", "g", b"{}", b"{}", 1.0),))  # refused, alone
            with pytest.raises(CheckpointError, match="'taken' is already in the store"):
                await store.flush(run_id="taken")
        await store.flush()
        assert len(await store.run_ids()) == 13
        out = await GraphRunner().run(adds(2), AgentContext(0), store=store, run_id="after")
        assert out.input == 2


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("postgres_throughput")


@pytest.mark.parametrize("case", ["agentgraph:many", "agentgraph:one"])
def test_the_throughput_benchmark_measures_rates_and_cpu(bench, postgres_server, case):
    result = bench.run_case(case, bench.QUICK, postgres_server.dsn)
    assert result["case"] == case and result["steps"] > 0
    assert result["steps_per_s"] > 0 and result["client_us"] > 0 and result["server_us"] >= 0


def test_the_throughput_benchmark_renders_its_targets(bench):
    fake = {"steps_per_s": 1.0, "ms_per_step": 1.0, "client_us": 1.0, "loop_us": 1.0}
    results = {f"after|{c}": {"case": c, **fake, "server_us": 1.0} for c in bench.CASES}
    section = bench.render(results, bench.QUICK, (0.0, 0.0), None)
    assert section.startswith(bench.HEADING) and "**missed**" in section
