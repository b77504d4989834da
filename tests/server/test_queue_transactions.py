"""The queue's transactions on SQLite and PostgreSQL: all or nothing, events numbered on."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentgraph.server._queue import QueuedRun, RunQueue
from agentgraph.server._signals import RunSignals
from tests.pg_server import drop_schema, fresh_schema

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(params=["sqlite", "postgres"])
def queue(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunQueue]:
    if request.param == "sqlite":
        opened = RunQueue(str(tmp_path / "queue.db"))
        yield opened
        opened.close()
        return
    server: Any = request.getfixturevalue("postgres_server")
    schema = fresh_schema()
    opened = RunQueue(server.dsn, schema=schema)
    yield opened
    opened.close()
    drop_schema(server.dsn, schema)


def test_a_failed_transaction_keeps_nothing_and_the_queue_goes_on(queue: RunQueue):
    queue.put_thread("t", {}, replace=False)
    with pytest.raises(Exception, match="no_such_column"):
        queue._tx(
            ("UPDATE server_threads SET status = 'busy' WHERE thread_id = ?", ("t",)),
            ("UPDATE server_threads SET no_such_column = 1 WHERE thread_id = ?", ("t",)),
        )
    thread = queue.thread("t")
    assert thread is not None and thread.status == "idle"
    queue.update_thread("t", status="busy")
    thread = queue.thread("t")
    assert thread is not None and thread.status == "busy"


def test_events_are_numbered_on_from_the_last_across_batches(queue: RunQueue):
    queue.add_events("r", [("metadata", {"run_id": "r"})])
    queue.add_events("r", [("values", {"n": 1}), ("updates", {"n": 2}), ("values", {"n": 3})])
    queue.add_events("r", [])
    queue.add_events("other", [("values", {})])
    assert [(seq, name) for seq, name, _ in queue.events("r", 0)] == [
        (1, "metadata"),
        (2, "values"),
        (3, "updates"),
        (4, "values"),
    ]
    assert [data for _, _, data in queue.events("r", 2)] == [b'{"n":2}', b'{"n":3}']


def test_a_finished_run_ends_with_its_thread_in_one_transaction(queue: RunQueue):
    queue.put_thread("t", {}, replace=False)
    now = time.time()
    run = QueuedRun(
        str(uuid.uuid4()), "t", "a", "echo", "pending", {}, {}, "enqueue",
        None, None, 0, now, now,
    )  # fmt: skip
    assert queue.enqueue(run) is not None
    (claimed,) = queue.claim("w", 1)
    queue.finish(claimed.run_id, "t", "success", {"state": {"messages": []}})
    ended, thread = queue.run(run.run_id), queue.thread("t")
    assert ended is not None and ended.status == "success"
    assert thread is not None and thread.status == "idle" and thread.state == {"messages": []}


class _Recording(RunSignals):
    """Readers' signals noting, for each run woken, whether the waking thread still
    held a connection of `queue` (its transaction not yet given back)."""

    def __init__(self, queue: RunQueue) -> None:
        super().__init__()
        self.queue = queue
        self.woken: list[tuple[str, bool]] = []

    def notify(self, run_id: str) -> None:
        held = "connection" in self.queue._lock._lent.__dict__
        self.woken.append((run_id, held))
        super().notify(run_id)


def _pending(queue: RunQueue, thread_id: str) -> QueuedRun:
    queue.put_thread(thread_id, {}, replace=False)
    now = time.time()
    run = QueuedRun(
        str(uuid.uuid4()), thread_id, "a", "echo", "pending", {}, {}, "enqueue",
        None, None, 0, now, now,
    )  # fmt: skip
    assert queue.enqueue(run) is not None
    return run


def test_a_run_ended_in_a_larger_transaction_wakes_its_readers_after_the_commit(
    queue: RunQueue,
):
    recording = queue.signals = _Recording(queue)
    run = _pending(queue, "t")
    (claimed,) = queue.claim("w", 1)
    with queue.transaction(thread="t") as execute:
        queue.finishing(execute, claimed.run_id, "t", "success", {})
        assert recording.woken == []
    assert recording.woken == [(run.run_id, False)]
    ended = queue.run(run.run_id)
    assert ended is not None and ended.status == "success"


def test_a_pending_run_cancelled_wakes_its_readers_after_the_commit(queue: RunQueue):
    recording = queue.signals = _Recording(queue)
    run = _pending(queue, "t")
    cancelled = queue.request_cancel(run.run_id, "interrupt")
    assert cancelled is not None and cancelled.status == "interrupted"
    assert recording.woken == [(run.run_id, False)]
