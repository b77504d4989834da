"""What only `PostgresStore` does: its schema and migrations, many processes, pickling,
a lost server, and damaged rows (the shared behaviour runs in the conformance suite)."""

import pickle
import sys
from pathlib import Path

import anyio
import attrs
import orjson
import psycopg
import pytest
from psycopg import sql

from agentgraph import (
    AgentContext,
    CheckpointError,
    ContextDecodingError,
    GraphRunner,
    LeaseLost,
    ResumeError,
    RunBusy,
    node,
)
from agentgraph.checkpoint import Effect, PostgresStore, StepRecord
from agentgraph.checkpoint._pgschema import MIGRATIONS
from tests.checkpoint.support import Crash
from tests.helpers import chain
from tests.pg_server import free_port

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


def query(dsn: str, schema: str, text: str, params: tuple = ()) -> list[tuple]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        cursor = conn.execute(text, params)
        return cursor.fetchall() if cursor.description else []


@node
async def add(ctx):
    return ctx.with_input(ctx.input + 1)


def adds(n: int):
    return chain("g", *[add.with_name(f"add{i}") for i in range(n)])


async def test_the_schema_is_created_at_the_latest_version_on_first_use(dsn, schema):
    async with PostgresStore(dsn, schema=schema) as store:
        out = await GraphRunner().run(adds(2), AgentContext(0), store=store)
        assert out.input == 2 and len(await store.run_ids()) == 1
    assert query(dsn, schema, "SELECT version FROM schema_version") == [(len(MIGRATIONS),)]
    tables = query(
        dsn,
        "public",
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
        (schema,),
    )
    assert {t for (t,) in tables} == {
        "runs",
        "steps",
        "effects",
        "leases",
        "blobs",
        "schema_version",
        "threads",
    }
    async with PostgresStore(dsn, schema=schema) as again:  # a second first use changes nothing
        assert len(await again.run_ids()) == 1


async def test_a_schema_of_a_newer_version_is_refused_and_left_alone(dsn, schema):
    async with PostgresStore(dsn, schema=schema) as store:
        await store.run_ids()
    query(dsn, schema, "UPDATE schema_version SET version = 99")
    store = PostgresStore(dsn, schema=schema)
    with pytest.raises(CheckpointError, match="version 99, written by a newer agentgraph"):
        await store.run_ids()
    with pytest.raises(CheckpointError, match="newer agentgraph"):
        await GraphRunner().run(adds(1), AgentContext(0), store=store)
    await store.aclose()
    assert query(dsn, schema, "SELECT version FROM schema_version") == [(99,)]


WRITER = """
import functools, sys, anyio
from agentgraph import AgentContext, GraphRunner, node
from agentgraph.checkpoint import Effect, PostgresStore, StepRecord
from tests.helpers import chain

@node
async def add(ctx):
    return ctx.with_input(ctx.input + 1)

async def main(dsn, schema, tag):
    async with PostgresStore(dsn, schema=schema) as store:
        async with anyio.create_task_group() as tg:
            for n in range(5):
                graph = chain("g", *[add.with_name(f"add{i}") for i in range(3)])
                run = functools.partial(GraphRunner().run, store=store, run_id=f"{tag}-{n}")
                tg.start_soon(run, graph, AgentContext(n))
    print("ok", flush=True)

anyio.run(main, *sys.argv[1:])
"""


@pytest.mark.timeout(120)
async def test_many_processes_create_the_schema_at_once_and_share_it(dsn, schema):
    async def one(tag: str) -> str:
        done = await anyio.run_process(
            [sys.executable, "-c", WRITER, dsn, schema, tag], cwd=ROOT, check=False
        )
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout.decode()

    outputs: list[str] = []

    async def collect(tag: str) -> None:
        outputs.append(await one(tag))

    async with anyio.create_task_group() as tg:
        for p in range(4):
            tg.start_soon(collect, f"p{p}")
    assert outputs == ["ok\n"] * 4
    async with PostgresStore(dsn, schema=schema) as store:
        ids = await store.run_ids()
        assert sorted(ids) == sorted(f"p{p}-{n}" for p in range(4) for n in range(5))
        for run_id in ids:
            log = await store.load(run_id)
            assert log is not None and [s.seq for s in log.steps] == [1, 2, 3]


async def test_a_store_pickles_as_its_settings_and_hides_the_password(dsn, schema):
    store = PostgresStore(dsn, schema=schema, lease_term=5.0, connect_timeout=3.0)
    await GraphRunner().run(adds(1), AgentContext(0), store=store, run_id="r")
    copy = pickle.loads(pickle.dumps(store))
    assert isinstance(copy, PostgresStore) and copy is not store
    assert (copy.conninfo, copy.schema, copy.lease_term, copy.connect_timeout) == (
        dsn,
        schema,
        5.0,
        3.0,
    )
    assert await copy.run_ids() == ("r",)
    await copy.aclose()
    await store.aclose()
    secret = PostgresStore("postgresql://app:s3cret@db.example:6543/agents")
    assert "s3cret" not in repr(secret) and "db.example:6543/agents" in repr(secret)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("host=a port",), "not a PostgreSQL connection string"),
        (("postgresql://x/db",), "schema is a name"),
    ],
)
def test_bad_settings_are_refused_at_once(args, message):
    kwargs = {"schema": 'x"; DROP TABLE runs; --'} if "schema" in message else {}
    with pytest.raises(ValueError, match=message):
        PostgresStore(*args, **kwargs)
    with pytest.raises(ValueError, match="lease_term"):
        PostgresStore("postgresql://x/db", lease_term=0)
    with pytest.raises(ValueError, match="connect_timeout"):
        PostgresStore("postgresql://x/db", connect_timeout=-1)


async def test_a_server_that_cannot_be_reached_is_a_checkpoint_error():
    store = PostgresStore(f"postgresql://postgres@127.0.0.1:{free_port()}/x", connect_timeout=2)
    with pytest.raises(CheckpointError, match="stopped storing records: OperationalError"):
        await GraphRunner().run(adds(1), AgentContext(0), store=store)
    with pytest.raises(CheckpointError, match="stopped storing records"):
        store.write(())
    await store.aclose()


async def test_a_lost_connection_stops_the_store_and_a_new_store_resumes(dsn, schema):
    crash = {"on": True}

    @node
    async def stop(ctx):
        if crash["on"]:
            raise Crash
        return ctx

    graph = chain("g", add, stop, add.with_name("again"))
    store = PostgresStore(dsn, schema=schema)
    with pytest.raises(Crash):
        await GraphRunner().run(graph, AgentContext(0), store=store, run_id="r")
    query(
        dsn,
        schema,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE application_name = 'agentgraph' AND pid <> pg_backend_pid()",
    )
    while query(
        dsn, schema, "SELECT 1 FROM pg_stat_activity WHERE application_name = 'agentgraph'"
    ):
        await anyio.sleep(0.01)  # terminating a backend takes a moment
    gone = r"stopped storing records: (AdminShutdown|OperationalError)"  # as psycopg sees it
    with pytest.raises(CheckpointError, match=gone):
        await store.run_ids()
    with pytest.raises(CheckpointError, match="stopped storing records"):
        store.write(())
    await store.aclose()
    crash["on"] = False
    query(dsn, schema, "UPDATE leases SET expires = 0")  # the crashed runner's lease lapses
    async with PostgresStore(dsn, schema=schema) as fresh:
        out = await GraphRunner().resume(graph, "r", fresh)
    assert out.input == 2


async def test_a_commit_after_the_lease_passed_on_is_refused(dsn, schema):
    async with PostgresStore(dsn, schema=schema) as old, PostgresStore(dsn, schema=schema) as new:
        await GraphRunner().run(adds(1), AgentContext(0), store=new, run_id="r")
        await old.acquire("r", owner="old")
        query(dsn, schema, "UPDATE leases SET expires = 0")
        taken = await new.acquire("r", owner="new")
        assert taken.fence == 3  # the first run's lease, the old store's, and this one
        log = await new.load("r")
        assert log is not None
        old.write((log.steps[-1],))
        with pytest.raises(LeaseLost, match="another runner took it over"):
            await old.flush(run_id="r")


# -- damaged rows -----------------------------------------------------------------------


async def crashed_run(dsn: str, schema: str):
    crash = {"on": True}

    @node
    def step(ctx):
        if crash["on"]:
            raise Crash
        return ctx

    graph = chain("g", add, step)
    async with PostgresStore(dsn, schema=schema) as store:
        with pytest.raises(Crash):
            await GraphRunner().run(graph, AgentContext(0), store=store, run_id="r")
    crash["on"] = False
    return graph


@pytest.mark.parametrize("tag", ["subprocess:Popen", "builtins:eval", "os:system"])
async def test_a_hostile_context_row_is_refused_on_resume_without_running_code(
    dsn, schema, tag, tmp_path
):
    graph = await crashed_run(dsn, schema)
    sentinel = tmp_path / "ran"
    edited = orjson.dumps({"H": [], "i": {"$type": tag, "args": ["touch", str(sentinel)]}})
    query(dsn, schema, "UPDATE runs SET context = %s", (edited,))
    query(dsn, schema, "UPDATE steps SET context = %s", (edited,))
    async with PostgresStore(dsn, schema=schema) as store:
        with pytest.raises(ContextDecodingError, match=tag):
            await GraphRunner().resume(graph, "r", store)
    assert not sentinel.exists()


@pytest.mark.parametrize(
    ("update", "error", "message"),
    [
        ("UPDATE steps SET path = ARRAY[NULL]::text[]", CheckpointError, "is damaged: its path"),
        ("UPDATE steps SET context = '\\x00ff'::bytea", CheckpointError, "cannot be decoded"),
        ("UPDATE runs SET graph = 'other'", ResumeError, "recorded with graph 'other'"),
    ],
)
async def test_a_damaged_row_is_a_typed_error(dsn, schema, update, error, message):
    graph = await crashed_run(dsn, schema)
    query(dsn, schema, update)
    async with PostgresStore(dsn, schema=schema) as store:
        with pytest.raises(error, match=message):
            await GraphRunner().resume(graph, "r", store)


async def test_a_dropped_table_is_a_checkpoint_error_naming_the_store(dsn, schema):
    graph = await crashed_run(dsn, schema)
    query(dsn, schema, "DROP TABLE steps")
    async with PostgresStore(dsn, schema=schema) as store:
        with pytest.raises(CheckpointError, match=f"/{schema}' cannot be read: UndefinedTable"):
            await GraphRunner().resume(graph, "r", store)


async def test_values_postgres_cannot_keep_refuse_their_write_alone(dsn, schema):
    async with PostgresStore(dsn, schema=schema) as store:
        with pytest.raises(CheckpointError, match=r"cannot lease runs: .*NUL"):
            await GraphRunner().run(adds(1), AgentContext(0), store=store, run_id="bad\x00id")
        good = adds(2)
        step = StepRecord("ok", 1, 1, ("g",), "add0", "add1", 1, 1, b"{}", 0.0, 0.0)
        await GraphRunner().run(good, AgentContext(0), store=store, run_id="ok")
        store.write((Effect("ok", "1.1.1:x\x00", "value", b"1"),))  # refused, alone
        store.write((attrs.evolve(step, seq=9),))  # goes in beside it
        with pytest.raises(CheckpointError, match=r"refused records of run 'ok'.*(NUL|0x00)"):
            await store.flush(run_id="ok")
        log = await store.load("ok")
        assert log is not None and [s.seq for s in log.steps] == [1, 2, 9]
        assert await store.run_ids() == ("ok",)


async def test_a_lease_is_renewed_while_its_run_writes_nothing(dsn, schema):
    quick = PostgresStore(dsn, schema=schema, lease_term=1.0)
    async with quick as owner, PostgresStore(dsn, schema=schema) as other:
        lease = await owner.acquire("quiet", owner="owner")
        await anyio.sleep(1.5)  # past the first term: only a renewal keeps it
        with pytest.raises(RunBusy, match="owner"):
            await other.acquire("quiet", owner="other")
        held = owner.held("quiet")
        assert held is not None and held.fence == lease.fence
        assert held.expires > lease.expires


def test_without_server_binaries_the_tests_skip_saying_why_but_fail_in_ci(monkeypatch):
    from tests import pg_server

    monkeypatch.setattr(pg_server, "bindir", lambda: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="installs the Debian postgresql package"):
        pg_server.server_binaries()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run these tests"):
        pg_server.server_binaries()


def test_the_server_helper_finds_the_binaries_it_runs():
    from tests import pg_server

    found = pg_server.server_binaries()  # skips without them, outside CI
    assert all((found / tool).exists() for tool in ("initdb", "pg_ctl", "postgres"))
