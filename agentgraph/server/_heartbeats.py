"""Worker heartbeats: a row per worker in the queue's database, renewed while it runs.

Any process reading the database (an API process answering `/ready` or
`/metrics`) sees every worker of every machine sharing it: a worker is alive
while its row was renewed within `ALIVE` seconds. A stopping worker deletes its
row; the row of a worker that died is deleted by the next beat of any worker
once `FORGOTTEN` seconds old.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable

import anyio
import anyio.to_thread
import attrs

from ._logs import LOG
from ._queue import RunQueue
from ._tables import ensure_tables

__all__ = ("ALIVE", "BEAT", "Heartbeat", "WorkerBeat", "heartbeats")

BEAT = 5.0
"""Seconds between a worker's heartbeats."""
ALIVE = 3 * BEAT
"""Seconds after its last heartbeat a worker still counts as alive."""
FORGOTTEN = 3600.0
"""Seconds after its last heartbeat a dead worker's row is deleted."""

_TABLES = (
    """
CREATE TABLE IF NOT EXISTS server_workers (
    worker TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    running INTEGER NOT NULL,
    started_at REAL NOT NULL,
    seen_at REAL NOT NULL
)
""",
)


@attrs.frozen
class WorkerBeat:
    """A worker's last heartbeat as stored."""

    worker: str
    host: str
    pid: int
    running: int
    started_at: float
    seen_at: float

    def alive(self, now: float) -> bool:
        return now - self.seen_at <= ALIVE


def heartbeats(queue: RunQueue) -> list[WorkerBeat]:
    """Every worker's last heartbeat, by name."""
    ensure_tables(queue, "server_workers", _TABLES)
    rows = queue._all(
        "SELECT worker, host, pid, running, started_at, seen_at FROM server_workers ORDER BY worker"
    )
    return [WorkerBeat(*row) for row in rows]


class Heartbeat:
    """The heartbeats of one worker, named `worker`, through `queue`."""

    def __init__(self, queue: RunQueue, worker: str) -> None:
        ensure_tables(queue, "server_workers", _TABLES)
        self.queue = queue
        self.worker = worker
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.started_at = time.time()

    def beat(self, running: int) -> None:
        """Record that the worker is alive with `running` runs, and forget dead workers."""
        now = time.time()
        with self.queue.transaction() as run:
            run(
                "INSERT INTO server_workers (worker, host, pid, running, started_at, seen_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (worker) DO UPDATE SET "
                "running = excluded.running, seen_at = excluded.seen_at",
                (self.worker, self.host, self.pid, running, self.started_at, now),
            )
            run("DELETE FROM server_workers WHERE seen_at < ?", (now - FORGOTTEN,))

    def stopped(self) -> None:
        """Delete the worker's row: it stopped on purpose."""
        with self.queue.transaction() as run:
            run("DELETE FROM server_workers WHERE worker = ?", (self.worker,))

    async def serve(self, running: Callable[[], int]) -> None:
        """Beat every `BEAT` seconds, the first at once, with `running()` runs, until
        cancelled."""
        while True:
            try:
                await anyio.to_thread.run_sync(self.beat, running())
            except Exception:  # the database is away for now: /ready says so meanwhile
                LOG.warning("heartbeat failed", exc_info=True, extra={"worker": self.worker})
            await anyio.sleep(BEAT)
