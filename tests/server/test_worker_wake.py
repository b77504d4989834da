"""A worker claims the next run as soon as it has room or is told of one, not on a timer."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from agentgraph.server import Worker
from agentgraph.server import _worker as worker_module
from agentgraph.server._queue import QueuedRun, RunQueue

from .support import echo

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def never_look_on_a_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    """An idle worker looks at the queue again only when woken."""
    monkeypatch.setattr(worker_module, "_POLL", 3600.0)


def queue_run(queue: RunQueue, text: str) -> str:
    thread_id = str(uuid.uuid4())
    queue.put_thread(thread_id, {}, replace=False)
    now = time.time()
    run = QueuedRun(
        str(uuid.uuid4()), thread_id, "a", "echo", "pending",
        {"input": {"messages": [{"role": "user", "content": text}]}}, {}, "enqueue",
        None, None, 0, now, now,
    )  # fmt: skip
    stored = queue.enqueue(run)
    assert stored is not None
    return stored.run_id


async def ended(queue: RunQueue, run_ids: list[str]) -> None:
    with anyio.fail_after(60):
        while True:
            runs = [await anyio.to_thread.run_sync(queue.run, r) for r in run_ids]
            if all(r is not None and r.ended for r in runs):
                assert {r.status for r in runs if r is not None} == {"success"}
                return
            await anyio.sleep(0.05)


async def test_a_worker_with_one_place_runs_queued_runs_one_after_another(tmp_path: Path):
    path = str(tmp_path / "server.db")
    queue = RunQueue(path)
    run_ids = [queue_run(queue, str(n)) for n in range(3)]
    worker = Worker(path, {"echo": echo()}, concurrency=1, grace=1)
    worker.start()
    try:
        # Its first look finds three runs and room for one: each run's end makes room.
        await ended(queue, run_ids)
    finally:
        worker.stop()
        queue.close()
    assert worker.error is None


async def test_an_idle_worker_claims_a_run_when_woken(tmp_path: Path):
    path = str(tmp_path / "server.db")
    queue = RunQueue(path)
    worker = Worker(path, {"echo": echo()}, grace=1)
    worker.start()
    try:
        await anyio.sleep(0.5)  # let it find the queue empty and wait
        run_id = queue_run(queue, "hello")
        worker.wake()
        await ended(queue, [run_id])
    finally:
        worker.stop()
        queue.close()
    assert worker.error is None
