"""A cancel reaches the worker running the run as it is asked: announced through
LISTEN/NOTIFY on PostgreSQL, and through a signal within the process on SQLite.

The workers here look at the queue's cancel marks only once an hour, so a run
cancelled before the test's timeout was cancelled by the announcement; the
last test shows that look still catching a cancel whose announcement was lost.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import attrs
import psycopg
import pytest
from langgraph_sdk import get_client

from agentgraph.server import Worker
from agentgraph.server._queue import CANCELS, QueuedRun, RunQueue

from .support import GRAPHS, said, serving, worker_process

pytestmark = pytest.mark.timeout(120)

HOUR = 3600.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_cancel_reaches_a_running_run_on_another_worker_process(
    tmp_path: Path, pg: tuple[str, str]
):
    dsn, schema = pg
    with serving(tmp_path, where=dsn, schema=schema, workers=0) as url:
        worker = worker_process(dsn, tmp_path, schema=schema, claim_term=30.0, cancel_poll=HOUR)
        try:
            async with get_client(url=url) as client:
                tid = (await client.threads.create())["thread_id"]
                # A client's cancel.
                slow = await client.runs.create(tid, "slow", input=said("a"))
                await running(client, tid, slow["run_id"])
                await client.runs.cancel(tid, slow["run_id"])
                await client.runs.join(tid, slow["run_id"])
                assert (await client.runs.get(tid, slow["run_id"]))["status"] == "interrupted"
                # A double text interrupting the run going on.
                slow = await client.runs.create(tid, "slow", input=said("b"))
                await running(client, tid, slow["run_id"])
                echo = await client.runs.create(
                    tid, "echo", input=said("c"), multitask_strategy="interrupt"
                )
                await client.runs.join(tid, echo["run_id"])
                statuses = [
                    (await client.runs.get(tid, run["run_id"]))["status"] for run in (slow, echo)
                ]
                assert statuses == ["interrupted", "success"]
        finally:
            worker.terminate()
            worker.wait(timeout=30)
            assert worker.stdout is not None
            worker.stdout.close()


async def running(client: Any, tid: str, run_id: str) -> None:
    while (await client.runs.get(tid, run_id))["status"] != "running":
        await anyio.sleep(0.02)


def slow_run(thread_id: str) -> QueuedRun:
    now = time.time()
    return QueuedRun(
        str(uuid.uuid4()), thread_id, "a", "slow", "pending", {"input": said("x")}, {},
        "enqueue", None, None, 0, now, now,
    )  # fmt: skip


@pytest.fixture
def queue(tmp_path: Path) -> Iterator[RunQueue]:
    opened = RunQueue(str(tmp_path / "server.db"))
    opened.put_thread("t", {}, replace=False)
    yield opened
    opened.close()


def started(
    queue: RunQueue, *, cancel_poll: float, concurrency: int = 10
) -> tuple[Worker, QueuedRun]:
    """A worker in this process, and a slow run it is running."""
    run = queue.enqueue(slow_run("t"))
    assert run is not None
    worker = Worker(
        queue.where,
        GRAPHS,
        cancel_poll=cancel_poll,
        grace=0,
        concurrency=concurrency,
        schema=queue.schema,
    )
    worker.start()
    while queue.run(run.run_id).status != "running":  # type: ignore[union-attr]
        time.sleep(0.02)
    return worker, run


def ended(queue: RunQueue, run_id: str) -> str | None:
    """The run's status once it ended (None once deleted)."""
    while True:
        found = queue.run(run_id)
        if found is None or found.ended:
            return found.status if found is not None else None
        time.sleep(0.02)


def test_a_cancel_on_sqlite_reaches_the_worker_of_this_process(queue: RunQueue):
    worker, run = started(queue, cancel_poll=HOUR)
    try:
        asking = RunQueue(queue.where)  # another queue on the file, as the API has
        try:
            asking.request_cancel(run.run_id, "interrupt")
        finally:
            asking.close()
        assert ended(queue, run.run_id) == "interrupted"
    finally:
        worker.stop()


@pytest.mark.parametrize(("strategy", "status"), [("interrupt", "interrupted"), ("rollback", None)])
def test_a_double_text_on_sqlite_cancels_the_running_run_at_once(
    queue: RunQueue, strategy: str, status: str | None
):
    worker, run = started(queue, cancel_poll=HOUR)
    try:
        second = queue.enqueue(attrs.evolve(slow_run("t"), multitask_strategy=strategy))
        assert second is not None
        assert ended(queue, run.run_id) == status
        queue.request_cancel(second.run_id, "interrupt")
        assert ended(queue, second.run_id) == "interrupted"
    finally:
        worker.stop()


def test_a_cancel_whose_announcement_was_lost_is_found_by_the_workers_look(queue: RunQueue):
    worker, run = started(queue, cancel_poll=0.1)
    try:
        # Marked without an announcement, as by a process the worker does not hear.
        queue._tx(("UPDATE server_runs SET cancel = 'interrupt' WHERE run_id = ?", (run.run_id,)))
        assert ended(queue, run.run_id) == "interrupted"
    finally:
        worker.stop()


@pytest.mark.timeout(40)  # the slow run sleeps 60 s unless cancelled
def test_deleting_a_thread_cancels_its_running_run_which_then_writes_nothing(queue: RunQueue):
    worker, run = started(queue, cancel_poll=HOUR, concurrency=1)
    try:
        queue.delete_thread("t")
        assert queue.run(run.run_id) is None
        # The worker's one place is free again: the slow run was cancelled.
        queue.put_thread("u", {}, replace=False)
        after = queue.enqueue(attrs.evolve(slow_run("u"), graph_id="echo"))
        assert after is not None
        worker.wake()
        assert ended(queue, after.run_id) == "success"
        assert queue.events(run.run_id, 0) == []
        assert queue.thread("t") is None
        with queue.reading() as read:
            rows = read("SELECT run_id FROM server_checkpoints WHERE thread_id = 't'").fetchall()
        assert rows == []
    finally:
        worker.stop()


def listeners(dsn: str) -> set[int]:
    """The backends of the workers' listeners (their last statement is the second LISTEN)."""
    with psycopg.connect(dsn, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE query = %s", (f"LISTEN {CANCELS}",)
        ).fetchall()
    return {row[0] for row in rows}


def test_a_worker_listens_again_after_losing_its_postgresql_connection(pg: tuple[str, str]):
    dsn, schema = pg
    queue = RunQueue(dsn, schema=schema)
    queue.put_thread("t", {}, replace=False)
    worker, run = started(queue, cancel_poll=HOUR)
    try:
        lost = listeners(dsn)
        assert len(lost) == 1
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (lost.pop(),))
        while not listeners(dsn):
            time.sleep(0.05)
        # Heard only through the listener: the worker looks at cancel marks once an hour.
        queue.request_cancel(run.run_id, "interrupt")
        assert ended(queue, run.run_id) == "interrupted"
    finally:
        worker.stop()
        queue.close()
