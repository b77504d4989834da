"""The scheduler in each worker: fires the crons' ticks as runs on the queue.

Every worker runs one beside its claim loop. It sleeps until the soonest tick
of any cron (at most `_POLL` seconds, and less when woken: a cron created or
changed is announced like a queued run), claims the ticks due
(`CronStore.claim_ticks`: each tick by one worker), and queues each tick's run
as the API would queue it: on the cron's thread under its
`multitask_strategy`, or on a new thread that its run deletes when it ends
(`on_run_completed="delete"`, the default) or keeps. A cron whose thread or
assistant was deleted is deleted at its next tick. A tick whose worker stopped
before queuing its run is taken over by another after `STALL` seconds; its run
id is the tick's, so it is queued once.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

from ._api import run_settings
from ._crons import CronStore, Tick
from ._queue import QueuedRun, RunQueue

__all__ = ("STALL", "Scheduler", "queue_tick")

_log = logging.getLogger("agentgraph.server")

_POLL = 1.0
"""Seconds the scheduler sleeps at most between looks at the crons."""
_TICK = 0.01
STALL = 30.0
"""Seconds after which a tick claimed but not queued is taken over by another worker."""
_STALL_CHECK = 5.0


def _duplicate(error: Exception) -> bool:
    """Whether `error` is a database's refusal of a second row with the same key."""
    if isinstance(error, sqlite3.IntegrityError):
        return True
    try:
        import psycopg
    except ImportError:
        return False
    return isinstance(error, psycopg.errors.UniqueViolation)


def queue_tick(queue: RunQueue, tick: Tick, now: float) -> str:
    """Queue a claimed tick's run; what became of the tick (`queued`, `rejected` by its
    thread's strategy, or `failed` when its assistant or thread is gone)."""
    cron = tick.cron
    if queue.run(tick.run_id) is not None:
        return "queued"  # queued already, by a worker that stopped before recording it
    assistant = queue.assistant(cron.assistant_id)
    if assistant is None:
        return "failed"
    payload = cron.payload
    # The tick's run, and its thread when it makes one, are the cron's owner's, and the
    # thread has the cron's metadata, so the filters that find the cron find them too.
    owner = queue.owner("crons", cron.cron_id)
    if cron.thread_id is None:
        metadata = {**cron.metadata, "cron_id": cron.cron_id}
        queue.put_thread(tick.thread_id, metadata, replace=False, owner=owner)
    elif queue.thread(cron.thread_id) is None:
        return "failed"
    modes = payload.get("stream_mode") or ["values"]
    kwargs: dict[str, Any] = {
        "input": payload.get("input"),
        "command": None,
        "stream_mode": [modes] if isinstance(modes, str) else list(modes),
        "config": payload.get("config") or {},
        "on_disconnect": "continue",
    }
    kwargs.update(run_settings(assistant, payload))
    if payload.get("webhook") is not None:
        kwargs["webhook"] = payload["webhook"]  # checked as the cron was made or changed
    if cron.thread_id is None:
        kwargs["on_completion"] = cron.on_run_completed or "delete"
    run = QueuedRun(
        run_id=tick.run_id,
        thread_id=tick.thread_id,
        assistant_id=assistant.assistant_id,
        graph_id=assistant.graph_id,
        status="pending",
        kwargs=kwargs,
        metadata={**cron.metadata, "cron_id": cron.cron_id},
        multitask_strategy=payload.get("multitask_strategy") or "enqueue",
        graph_run=None,
        cancel=None,
        attempt=0,
        created_at=now,
        updated_at=now,
    )
    if not queue.events(run.run_id, 0):
        queue.add_events(run.run_id, [("metadata", {"run_id": run.run_id, "attempt": 1})])
    try:
        queued = queue.enqueue(run, owner=owner)
    except Exception as error:
        if _duplicate(error):
            return "queued"  # another worker queued it a moment ago
        raise
    if queued is None:
        queue.delete_run(run.run_id)
        return "rejected"
    return "queued"


class Scheduler:
    """Fires due crons' ticks from the database at `path`, as the worker `name`.

    `clock` gives the current Unix time (tests pass a fake one).
    """

    def __init__(
        self,
        path: str,
        *,
        name: str,
        schema: str = "agentgraph",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self.name = name
        self.schema = schema
        self.clock = clock
        self._wake = threading.Event()

    def wake(self) -> None:
        """Look at the crons now (one was created or changed)."""
        self._wake.set()

    def fire(self, crons: CronStore, queue: RunQueue, stalled: bool = False) -> int:
        """Claim the ticks due now (and with `stalled`, those left by stopped workers) and
        queue their runs; how many runs were queued."""
        now = self.clock()
        ticks = crons.claim_ticks(self.name, now)
        if stalled:
            ticks += crons.stalled(self.name, now, older_than=STALL)
        queued = 0
        for tick in ticks:
            try:
                status = queue_tick(queue, tick, now)
            except Exception as error:  # left claimed: the stalled ticks' sweep retries it
                _log.warning(
                    "tick %s of cron %s not queued: %r", tick.tick_at, tick.cron.cron_id, error
                )
                continue
            if status == "failed":
                # Its thread or its assistant was deleted: it has nothing to run on.
                crons.delete(tick.cron.cron_id)
                continue
            crons.mark(tick, status)
            queued += status == "queued"
        return queued

    async def serve(
        self, queue: RunQueue, stopping: threading.Event, ran: Callable[[], None]
    ) -> None:
        """Fire ticks until `stopping`; `ran` is called when runs were queued."""
        crons = await anyio.to_thread.run_sync(lambda: CronStore(self.path, schema=self.schema))
        last_stall_check = 0.0
        try:
            while not stopping.is_set():
                self._wake.clear()
                stalled = self.clock() - last_stall_check >= _STALL_CHECK
                if stalled:
                    last_stall_check = self.clock()
                if await anyio.to_thread.run_sync(self.fire, crons, queue, stalled):
                    ran()
                due = await anyio.to_thread.run_sync(crons.next_due)
                wait = _POLL if due is None else min(_POLL, due - self.clock())
                until = time.monotonic() + wait
                while not (self._wake.is_set() or stopping.is_set()):
                    left = until - time.monotonic()
                    if left <= 0:
                        break
                    await anyio.sleep(min(_TICK, left))
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(crons.close)
