"""Reads go on beside the writer: a read about what has nothing queued does not wait for it.

Each test holds the writer inside a commit (another connection keeps a lock it needs)
and reads a run, a thread and the lists while it is held: the reads come back, and
the writer is still held when they do. A read about what is queued still waits, so
a run reads its own writes.
"""

import sqlite3

import anyio
import psycopg
import pytest

from agentgraph import AgentContext, GraphRunner, Message, node
from agentgraph.checkpoint import PostgresStore, RunRecord, SQLiteStore, list_threads, read_thread

pytestmark = pytest.mark.anyio

GUARD = 30
"""Seconds before a read that waits for the held writer fails the test instead of hanging."""


@node(name="reply")
async def reply(ctx):
    return ctx.append(Message.assistant("noted"))


async def _finished_turn(store):
    out = await GraphRunner().run(
        reply, AgentContext(None, [Message.user("hi")]), store=store, thread_id="t"
    )
    return (await read_thread(store, "t")).head, out


def _a_new_run(run_id):
    return (RunRecord(run_id, "g", b"{}", b'{"H":[]}', 0.0),)


async def _reads_while_held(store, head, held):
    """Read the finished turn while the writer is held; the writer is still held after."""
    digest = store.put_blob(b"queued")  # the writer takes it and blocks on the lock
    await anyio.sleep(0.05)
    with anyio.fail_after(GUARD):
        log = await store.load(head)
        thread = await read_thread(store, "t")
        listed = await list_threads(store)
    assert log is not None and log.run.run_id == head
    assert [m.content for m in thread.messages] == ["hi", "noted"]
    assert [t.thread for t in listed] == ["t"]
    assert held()  # nothing above waited for the writer
    return digest


async def test_sqlite_reads_while_a_write_waits_for_the_database(tmp_path):
    path = tmp_path / "runs.db"
    async with SQLiteStore(path) as store:
        head, _ = await _finished_turn(store)
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # holds the database's write lock
        try:
            digest = await _reads_while_held(store, head, lambda: other.in_transaction)
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert await store.get_blob(digest) == b"queued"  # its own write: read after it


async def test_postgres_reads_while_a_write_waits_for_a_lock(dsn, schema):
    async with PostgresStore(dsn, schema=schema) as store:
        head, _ = await _finished_turn(store)
        other = psycopg.connect(dsn)
        other.execute(f'LOCK TABLE "{schema}".blobs IN EXCLUSIVE MODE')  # readers pass
        try:
            held = lambda: other.info.transaction_status != 0  # noqa: E731
            digest = await _reads_while_held(store, head, held)
        finally:
            other.rollback()
            other.close()
        assert await store.get_blob(digest) == b"queued"


async def test_a_read_of_what_is_queued_waits_for_it(tmp_path):
    async with SQLiteStore(tmp_path / "runs.db") as store:
        store.write(_a_new_run("mine"))
        assert (await store.load("mine")) is not None
        assert "mine" in await store.run_ids()
