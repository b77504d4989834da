"""A lease whose release could not be written (the store failed, then closed) is free at
once for the other stores of this process; a live store keeps its runs."""

import contextlib

import anyio
import pytest

from agentgraph import AgentContext, CheckpointError, GraphRunner, Message, RunBusy, node
from agentgraph.checkpoint import PostgresStore, SQLiteStore
from agentgraph.checkpoint._lease import new_owner
from tests.checkpoint.support import chain

pytestmark = pytest.mark.anyio


async def test_a_closed_store_frees_its_leases_at_once_and_a_live_one_keeps_them(places):
    db = places("runs")
    first, second = db.store(), db.store()
    try:
        lease = await first.acquire("r", owner=new_owner())
        with pytest.raises(RunBusy):  # the owner names this process, and its store is live
            await second.acquire("r", owner=new_owner())
        await first.aclose()  # closed without giving the lease back: nobody can renew it
        taken = await second.acquire("r", owner=new_owner())
        assert taken.fence == lease.fence + 1 and second.held("r") == taken
    finally:
        await first.aclose()
        await second.aclose()


def grown(ctx: AgentContext[int]) -> AgentContext[int]:
    return ctx.with_input(ctx.input + 1).append(Message.user("x" * 20_000))


grow = node(name="grow")(grown)


def growing(steps: int, store: SQLiteStore):
    @node
    async def committed(ctx: AgentContext[int]) -> AgentContext[int]:
        # The step before commits alone, so the disk fills up part of the way; the run
        # meets the failure at its next write.
        with contextlib.suppress(CheckpointError):
            await store.flush()
        return grown(ctx)

    return chain("g", *[committed.with_name(f"grow{i}") for i in range(steps)])


async def test_sqlite_disk_full_then_space_freed_resumes_at_once_in_this_process(
    tmp_path, monkeypatch
):
    disk = {"room": 12}  # pages of 4 KiB left on the "disk" of the writer's connection
    connect = SQLiteStore._connect

    def full_disk(self):
        conn = connect(self)
        if disk["room"] is not None:  # SQLite then fails a commit as a full disk does
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count = {pages + disk['room']}")
        return conn

    monkeypatch.setattr(SQLiteStore, "_connect", full_disk)
    path = tmp_path / "runs.db"
    async with SQLiteStore(path) as store:
        graph = growing(6, store)
        with pytest.raises(CheckpointError, match="database or disk is full"):
            await GraphRunner().run(graph, AgentContext(0), store=store, run_id="r")
    disk["room"] = None  # space freed
    async with SQLiteStore(path) as store:
        log = await store.load("r")
        assert log is not None and 0 < len(log.steps) < 6  # stopped part of the way
        out = await GraphRunner().resume(growing(6, store), "r", store)  # no RunBusy for 30 s
        assert out.input == 6


async def test_postgres_restarted_mid_run_resumes_at_once_in_this_process(postgres_server):
    from tests.pg_server import drop_schema, fresh_schema

    schema, restart = fresh_schema(), {"on": True}
    store = PostgresStore(postgres_server.dsn, schema=schema)

    @node
    async def restarting(ctx: AgentContext[int]) -> AgentContext[int]:
        if restart["on"]:
            restart["on"] = False
            await store.flush()  # the first step is committed: there is something to resume
            await anyio.to_thread.run_sync(postgres_server.restart)
        return ctx.with_input(ctx.input + 10)

    graph = chain("g", grow, restarting, grow.with_name("after"))
    try:
        with pytest.raises(CheckpointError, match="stopped storing records"):
            await GraphRunner().run(graph, AgentContext(0), store=store, run_id="r")
        await store.aclose()
        async with PostgresStore(postgres_server.dsn, schema=schema) as fresh:
            out = await GraphRunner().resume(graph, "r", fresh)  # no RunBusy for 30 s
        assert out.input == 12
    finally:
        await store.aclose()
        drop_schema(postgres_server.dsn, schema)
