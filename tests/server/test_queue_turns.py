"""Threads take turns in the queue: an idle thread's run is not kept behind long queues."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from agentgraph.server._queue import FOLLOW_UPS_YIELD, QueuedRun, RunQueue


def queued(thread_id: str) -> QueuedRun:
    now = time.time()
    return QueuedRun(
        str(uuid.uuid4()), thread_id, "a", "echo", "pending", {}, {}, "enqueue",
        None, None, 0, now, now,
    )  # fmt: skip


def enqueue(queue: RunQueue, thread_id: str) -> str:
    run = queue.enqueue(queued(thread_id))
    assert run is not None
    return run.run_id


def busy_thread_and_idle_thread(queue: RunQueue) -> tuple[str, str]:
    """Thread `busy` with three runs queued at once, the first done; then a run on `idle`.

    Returns the busy thread's next run (a follow-up) and the idle thread's run.
    """
    for thread_id in ("busy", "idle"):
        queue.put_thread(thread_id, {}, replace=False)
    first, follow_up, _ = (enqueue(queue, "busy") for _ in range(3))
    assert [r.run_id for r in queue.claim("w", 1)] == [first]
    queue.finish(first, "busy", "success", {})
    return follow_up, enqueue(queue, "idle")


def test_a_run_on_an_idle_thread_goes_before_a_busy_threads_follow_ups(tmp_path: Path):
    queue = RunQueue(str(tmp_path / "queue.db"))
    try:
        follow_up, fresh = busy_thread_and_idle_thread(queue)
        # The follow-up was queued first, but the idle thread's run goes first.
        assert [r.run_id for r in queue.claim("w", 1)] == [fresh]
        assert [r.run_id for r in queue.claim("w", 1)] == [follow_up]
    finally:
        queue.close()


def test_a_follow_up_ready_for_longer_than_it_yields_goes_first(tmp_path: Path):
    queue = RunQueue(str(tmp_path / "queue.db"))
    try:
        follow_up, fresh = busy_thread_and_idle_thread(queue)
        long_ago = time.time() - FOLLOW_UPS_YIELD - 1
        queue._tx(("UPDATE server_runs SET start_at = ? WHERE run_id = ?", (long_ago, follow_up)))
        assert [r.run_id for r in queue.claim("w", 2)] == [follow_up, fresh]
    finally:
        queue.close()


def test_threads_with_queues_take_turns(tmp_path: Path):
    queue = RunQueue(str(tmp_path / "queue.db"))
    try:
        for thread_id in ("a", "b"):
            queue.put_thread(thread_id, {}, replace=False)
        a1, a2, a3 = (enqueue(queue, "a") for _ in range(3))
        b1, b2 = (enqueue(queue, "b") for _ in range(2))
        done = []
        while len(done) < 5:
            (run,) = queue.claim("w", 1)
            queue.finish(run.run_id, run.thread_id, "success", {})
            done.append(run.run_id)
        # Queued a1 a2 a3 b1 b2, run one thread's then the other's in turn.
        assert done == [a1, b1, a2, b2, a3]
    finally:
        queue.close()
