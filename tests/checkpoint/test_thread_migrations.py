"""Databases made before threads (schema version 1) are migrated when a store opens them."""

import sqlite3

import pytest

from agentgraph import AgentContext, CheckpointError, GraphRunner
from agentgraph.checkpoint import MemoryStore, PostgresStore, SQLiteStore, read_thread
from agentgraph.nodes import chat
from agentgraph.testing import ScriptedModel
from tests.pg_server import drop_schema, fresh_schema

pytestmark = pytest.mark.anyio

# The tables as the version before threads made them (a frozen copy of that release's schema).
V1_SQLITE = """
CREATE TABLE runs (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE, graph TEXT NOT NULL,
    structure BLOB NOT NULL, context BLOB NOT NULL, created REAL NOT NULL, parent TEXT,
    parent_step INTEGER);
CREATE TABLE steps (run INTEGER NOT NULL, seq INTEGER NOT NULL, step INTEGER NOT NULL,
    path TEXT NOT NULL, node TEXT NOT NULL, next TEXT NOT NULL, local INTEGER NOT NULL,
    steps INTEGER NOT NULL, context BLOB NOT NULL, at REAL NOT NULL, duration REAL NOT NULL,
    PRIMARY KEY (run, seq)) WITHOUT ROWID;
CREATE TABLE effects (run INTEGER NOT NULL, key TEXT NOT NULL, kind TEXT NOT NULL,
    value BLOB NOT NULL, UNIQUE (run, key, kind));
CREATE TABLE leases (run_id TEXT PRIMARY KEY, owner TEXT NOT NULL, fence INTEGER NOT NULL,
    expires REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE blobs (digest TEXT PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID;
"""


async def recorded_run():
    """A run's records, as a run of the previous version wrote them (no thread columns)."""
    store = MemoryStore()
    model = ScriptedModel("old answer")
    await GraphRunner().run(chat(model), AgentContext("old question"), store=store, run_id="old")
    return await store.load("old")


def timed(step):
    return step.context, step.at, step.duration


def rows(log):
    run = log.run
    started = (1, run.run_id, run.graph, run.structure, run.context, run.created, None, None)
    steps = [
        (1, s.seq, s.step, f'["{s.path[0]}"]', s.node, s.next, s.local, s.steps, *timed(s))
        for s in log.steps
    ]
    effects = [(1, e.key, e.kind, e.value) for e in log.effects]
    return started, steps, effects


async def test_an_sqlite_file_of_the_previous_version_is_migrated_and_threads_work(tmp_path):
    log = await recorded_run()
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(V1_SQLITE)
        started, steps, effects = rows(log)
        conn.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?)", started)
        conn.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", steps)
        conn.executemany("INSERT INTO effects VALUES (?, ?, ?, ?)", effects)
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 0

    model = ScriptedModel("old answer", "new answer")
    async with SQLiteStore(path) as store:
        loaded = await store.load("old")
        assert loaded.steps == log.steps and loaded.run.thread is None
        replayed = await GraphRunner().replay(chat(model), "old", store)
        assert replayed.input.content == "old answer"
        await GraphRunner().run(chat(model), AgentContext("hi"), store=store, thread_id="t")
        assert [m.content for m in (await read_thread(store, "t")).messages][-1] == "old answer"
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    columns = [row[1] for row in conn.execute("PRAGMA table_info(runs)")]
    assert columns[-2:] == ["thread", "base"]


async def test_a_newer_sqlite_schema_is_refused(tmp_path):
    path = tmp_path / "new.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    async with SQLiteStore(path) as store:
        with pytest.raises(
            CheckpointError, match="schema version 99, written by a newer agentgraph"
        ):
            await store.load("x")


async def test_a_postgres_schema_of_the_previous_version_is_migrated(postgres_server):
    import psycopg
    from psycopg import sql

    from agentgraph.checkpoint._pgschema import MIGRATIONS

    log = await recorded_run()
    schema = fresh_schema()
    try:
        with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
            conn.execute(MIGRATIONS[0])
            conn.execute(
                "CREATE TABLE schema_version "
                "(one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), version INTEGER NOT NULL)"
            )
            conn.execute("INSERT INTO schema_version (version) VALUES (1)")
            run = log.run
            conn.execute(
                "INSERT INTO runs (run_id, graph, structure, context, created) "
                "VALUES (%s, %s, %s, %s, %s)",
                (run.run_id, run.graph, run.structure, run.context, run.created),
            )
            for s in log.steps:
                conn.execute(
                    "INSERT INTO steps VALUES (1, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (s.seq, s.step, list(s.path), s.node, s.next, s.local, s.steps, *timed(s)),
                )
        store = PostgresStore(postgres_server.dsn, schema=schema)
        try:
            assert (await store.load("old")).steps == log.steps
            model = ScriptedModel("answer")
            await GraphRunner().run(chat(model), AgentContext("hi"), store=store, thread_id="t")
            assert (await read_thread(store, "t")).head is not None
        finally:
            await store.aclose()
        with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
            assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == 2
    finally:
        drop_schema(postgres_server.dsn, schema)
