"""The queue's order per thread, at the level of `RunQueue` itself (SQLite)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from agentgraph.server._queue import QueuedRun, RunQueue


def queued(thread_id: str, created_at: float) -> QueuedRun:
    return QueuedRun(
        str(uuid.uuid4()), thread_id, "a", "echo", "pending", {}, {}, "enqueue",
        None, None, 0, created_at, created_at,
    )  # fmt: skip


def test_a_thread_with_a_running_run_gives_no_other_run_to_a_worker(tmp_path: Path):
    queue = RunQueue(str(tmp_path / "queue.db"))
    try:
        queue.put_thread("t", {}, replace=False)
        first = queue.enqueue(queued("t", time.time()))
        assert first is not None
        assert [r.run_id for r in queue.claim("w1", 10)] == [first.run_id]
        second = queue.enqueue(queued("t", time.time()))
        assert second is not None and second.created_at >= first.created_at
        # A run made visible out of order (another process's transaction committed after
        # a newer one's) is older than the run going on: the thread is still taken.
        queue._tx(("UPDATE server_runs SET created_at = ? WHERE run_id = ?", (0.0, second.run_id)))
        assert queue.claim("w2", 10) == []
        queue.finish(first.run_id, "t", "success", {})
        assert [r.run_id for r in queue.claim("w2", 10)] == [second.run_id]
    finally:
        queue.close()


def test_a_run_is_ordered_by_when_it_was_queued_not_when_it_was_made(tmp_path: Path):
    queue = RunQueue(str(tmp_path / "queue.db"))
    try:
        queue.put_thread("t", {}, replace=False)
        late = queued("t", time.time() - 60)  # made a minute ago, queued now
        early = queue.enqueue(queued("t", time.time()))
        stored = queue.enqueue(late)
        assert early is not None and stored is not None
        assert stored.created_at >= early.created_at
        assert [r.run_id for r in queue.claim("w", 10)] == [early.run_id]
    finally:
        queue.close()


def test_a_rolled_back_run_is_gone_as_it_ends(tmp_path: Path):
    queue = RunQueue(str(tmp_path / "queue.db"))
    try:
        queue.put_thread("t", {}, replace=False)
        first = queue.enqueue(queued("t", time.time()))
        assert first is not None
        queue.claim("w", 1)
        queue.add_events(first.run_id, [("values", {})])
        running = queue.request_cancel(first.run_id, "rollback")
        assert running is not None and running.status == "running"
        # The worker sees the cancel and ends the run: no reader finds it ended but there.
        queue.finish(first.run_id, "t", "interrupted", {})
        assert queue.run(first.run_id) is None
        assert queue.events(first.run_id, 0) == []
        assert queue.thread("t").status == "idle"  # type: ignore[union-attr]
    finally:
        queue.close()
