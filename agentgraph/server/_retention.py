"""Retention: threads that expire (`ttl`), threads pruned on request, and old runs.

A thread created or updated with `ttl` (`{"ttl": minutes, "strategy": …}`)
expires `minutes` after it last changed (a run queued or ended on it, an update):
`delete` then deletes it with everything kept of it, `keep_latest` keeps the
thread and its latest state but deletes its older checkpoints and runs. A busy
thread (a run pending or running) is never pruned; it expires once idle.

Deleting a thread deletes, in one transaction, its runs, their events and
webhook deliveries, its checkpoints and its row, and leaves its id in
`server_forgotten_threads`: a worker's sweep then deletes the checkpoint
store's runs of that thread (the store is the workers'), and the id.

Every worker sweeps every `every` seconds: expired threads, ended runs older
than the run retention (when one is set), webhook deliveries whose run is gone
(once no longer pending; a stretch of the deliveries each sweep), and the
forgotten threads. Sweeps of several workers at once delete the same rows at
most once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
import anyio.to_thread

from ._api import Refused
from ._history import _delta, history_of
from ._logs import LOG
from ._queue import RunQueue
from ._tables import ensure_tables

__all__ = ("SWEEP", "STRATEGIES", "Retention", "ttl_of")

SWEEP = 60.0
"""Seconds between a worker's sweeps, by default."""
ORPHAN_BATCH = 2000
"""Deliveries a sweep looks at for ones whose run is gone."""
STRATEGIES = ("delete", "keep_latest")

_TABLES = (
    """
CREATE TABLE IF NOT EXISTS server_thread_ttl (
    thread_id TEXT PRIMARY KEY,
    strategy TEXT NOT NULL,
    minutes REAL NOT NULL,
    swept_at REAL
)
""",
    """
CREATE TABLE IF NOT EXISTS server_forgotten_threads (
    thread_id TEXT PRIMARY KEY,
    deleted_at REAL NOT NULL
)
""",
    # The run retention's look for ended runs past their age reads this, not every run.
    "CREATE INDEX IF NOT EXISTS server_runs_updated ON server_runs (updated_at)",
)

RunSql = Callable[[str, Sequence[Any]], Any]


MAX_TTL = 100 * 365 * 24 * 60
"""The longest ttl, in minutes (a hundred years): a longer one would overflow the
database's arithmetic on its expiry and stop every sweep."""


def ttl_of(body: Mapping[str, Any]) -> tuple[float, str] | None:
    """A request's `ttl` as minutes and strategy, None when it names none; 422 otherwise.

    The clients send `{"ttl": minutes, "strategy": "delete" | "keep_latest"}`.
    """
    given = body.get("ttl")
    if given is None:
        return None
    if isinstance(given, int | float) and not isinstance(given, bool):
        given = {"ttl": given}
    if not isinstance(given, Mapping):
        raise Refused(422, f"ttl is an object with ttl (minutes) and strategy, not {given!r}")
    minutes = given.get("ttl")
    if (
        isinstance(minutes, bool)
        or not isinstance(minutes, int | float)
        or not 0 < minutes <= MAX_TTL
    ):
        raise Refused(
            422, f"ttl.ttl is a number of minutes above 0 and at most {MAX_TTL}, not {minutes!r}"
        )
    strategy = given.get("strategy") or "delete"
    if strategy not in STRATEGIES:
        raise Refused(422, f"ttl.strategy is one of {list(STRATEGIES)}, not {strategy!r}")
    return float(minutes), str(strategy)


def _delete_runs(run: RunSql, where: str, params: Sequence[Any]) -> None:
    """Delete the runs `where` selects (a condition on `server_runs`), with their events
    and webhook deliveries."""
    runs = f"SELECT run_id FROM server_runs WHERE {where}"
    run(f"DELETE FROM server_events WHERE run_id IN ({runs})", params)
    run(f"DELETE FROM server_webhook_attempts WHERE run_id IN ({runs})", params)
    run(f"DELETE FROM server_webhooks WHERE run_id IN ({runs})", params)
    run(f"DELETE FROM server_runs WHERE {where}", params)


class Retention:
    """The retention of the threads and runs in `queue`'s database."""

    def __init__(self, queue: RunQueue) -> None:
        self.queue = queue
        self.history = history_of(queue)
        ensure_tables(queue, "server_retention", _TABLES)
        self._looked = ""
        """The last delivery `orphan_deliveries` looked at ("": start from the first)."""

    # -- ttl -------------------------------------------------------------------------------
    def set_ttl(self, thread_id: str, ttl: tuple[float, str]) -> None:
        """Give a thread a ttl (minutes, strategy), replacing any it had."""
        minutes, strategy = ttl
        with self.queue.transaction() as run:
            run(
                "INSERT INTO server_thread_ttl (thread_id, strategy, minutes) VALUES (?, ?, ?) "
                "ON CONFLICT (thread_id) DO UPDATE SET strategy = excluded.strategy, "
                "minutes = excluded.minutes, swept_at = NULL",
                (thread_id, strategy, minutes),
            )

    def ttl(self, thread_id: str) -> tuple[float, str] | None:
        rows = self.queue._all(
            "SELECT minutes, strategy FROM server_thread_ttl WHERE thread_id = ?", (thread_id,)
        )
        return (float(rows[0][0]), str(rows[0][1])) if rows else None

    def expired(self, now: float) -> list[tuple[str, str]]:
        """The idle threads whose ttl has run out and are not swept since, with their
        strategy."""
        rows = self.queue._all(
            "SELECT t.thread_id, x.strategy FROM server_threads AS t "
            "JOIN server_thread_ttl AS x ON x.thread_id = t.thread_id "
            "WHERE t.updated_at + x.minutes * 60 <= ? "
            "AND (x.swept_at IS NULL OR x.swept_at < t.updated_at) "
            "AND NOT EXISTS (SELECT 1 FROM server_runs AS r WHERE r.thread_id = t.thread_id "
            "AND r.status IN ('pending', 'running')) ORDER BY t.updated_at",
            (now,),
        )
        return [(row[0], row[1]) for row in rows]

    # -- pruning ---------------------------------------------------------------------------
    def prune(self, thread_ids: Sequence[str], strategy: str) -> list[str]:
        """Prune each of `thread_ids` that exists and is idle, by `strategy`: the ids pruned."""
        prune = self._delete if strategy == "delete" else self._keep_latest
        pruned = []
        for thread_id in dict.fromkeys(thread_ids):
            with self.queue.transaction(thread=thread_id) as run:
                if self._idle(run, thread_id) and prune(run, thread_id):
                    pruned.append(thread_id)
        return pruned

    def _idle(self, run: RunSql, thread_id: str) -> bool:
        """Whether the thread exists with no run pending or running (its row locked)."""
        found = run("SELECT 1 FROM server_threads WHERE thread_id = ?", (thread_id,)).fetchall()
        busy = run(
            "SELECT 1 FROM server_runs WHERE thread_id = ? AND status IN ('pending', 'running')",
            (thread_id,),
        ).fetchall()
        return bool(found) and not busy

    def _delete(self, run: RunSql, thread_id: str) -> bool:
        _delete_runs(run, "thread_id = ?", (thread_id,))
        run("DELETE FROM server_checkpoints WHERE thread_id = ?", (thread_id,))
        run("DELETE FROM server_thread_ttl WHERE thread_id = ?", (thread_id,))
        run("DELETE FROM server_threads WHERE thread_id = ?", (thread_id,))
        run(
            "INSERT INTO server_forgotten_threads (thread_id, deleted_at) VALUES (?, ?) "
            "ON CONFLICT (thread_id) DO NOTHING",
            (thread_id, time.time()),
        )
        return True

    def _keep_latest(self, run: RunSql, thread_id: str) -> bool:
        """Keep the thread's latest checkpoint (stored whole, as it no longer has a parent)
        and its latest run; delete the rest of its checkpoints and runs."""
        latest = self.history._read_in(run, thread_id)
        if latest is not None:
            run(
                "UPDATE server_checkpoints SET vals = ?, chain = 0, parent_id = NULL "
                "WHERE thread_id = ? AND checkpoint_id = ?",
                (_delta(None, latest.values, 0), thread_id, latest.checkpoint_id),
            )
            run(
                "DELETE FROM server_checkpoints WHERE thread_id = ? AND checkpoint_id <> ?",
                (thread_id, latest.checkpoint_id),
            )
        _delete_runs(
            run,
            "thread_id = ? AND run_id NOT IN (SELECT run_id FROM (SELECT run_id FROM "
            "server_runs WHERE thread_id = ? ORDER BY created_at DESC LIMIT 1) AS newest)",
            (thread_id, thread_id),
        )
        run(
            "UPDATE server_thread_ttl SET swept_at = (SELECT updated_at FROM server_threads "
            "WHERE thread_id = ?) WHERE thread_id = ?",
            (thread_id, thread_id),
        )
        return True

    def old_runs(self, older_than: float) -> int:
        """Delete the runs that ended before `older_than` (a time), with their events and
        deliveries: how many."""
        ended = "status NOT IN ('pending', 'running') AND updated_at < ?"
        with self.queue.transaction() as run:
            count = int(
                run(f"SELECT COUNT(*) FROM server_runs WHERE {ended}", (older_than,)).fetchone()[0]
            )
            if count:
                _delete_runs(run, ended, (older_than,))
        return count

    def orphan_deliveries(self, *, batch: int = ORPHAN_BATCH) -> int:
        """Delete the deliveries whose run is gone and that are no longer pending (a pending
        one is still sent: its body was written with its run's end), looking at the next
        `batch` deliveries after those the last call looked at: how many it deleted.

        Each call reads a short stretch of the table by its key, so a sweep costs the same
        however many deliveries are kept, and successive sweeps go round the whole table.
        """
        rows = self.queue._all(
            "SELECT w.webhook_id, w.status, EXISTS (SELECT 1 FROM server_runs AS r "
            "WHERE r.run_id = w.run_id) FROM server_webhooks AS w WHERE w.webhook_id > ? "
            "ORDER BY w.webhook_id LIMIT ?",
            (self._looked, batch),
        )
        self._looked = rows[-1][0] if len(rows) == batch else ""
        doomed = [row[0] for row in rows if row[1] != "pending" and not row[2]]
        if doomed:
            marks = ", ".join("?" for _ in doomed)
            with self.queue.transaction() as run:
                run(f"DELETE FROM server_webhook_attempts WHERE webhook_id IN ({marks})", doomed)
                run(f"DELETE FROM server_webhooks WHERE webhook_id IN ({marks})", doomed)
        return len(doomed)

    def forgotten(self) -> list[str]:
        """The threads deleted whose checkpoint store records are still to delete."""
        rows = self.queue._all(
            "SELECT thread_id FROM server_forgotten_threads ORDER BY deleted_at LIMIT 100"
        )
        return [row[0] for row in rows]

    def forget(self, thread_id: str) -> None:
        """Note a thread deleted elsewhere (`DELETE /threads/{id}`): its ttl goes, and a
        sweep deletes its checkpoint store records."""
        with self.queue.transaction() as run:
            run("DELETE FROM server_thread_ttl WHERE thread_id = ?", (thread_id,))
            run(
                "INSERT INTO server_forgotten_threads (thread_id, deleted_at) VALUES (?, ?) "
                "ON CONFLICT (thread_id) DO NOTHING",
                (thread_id, time.time()),
            )

    def remembered(self, thread_id: str) -> None:
        with self.queue.transaction() as run:
            run("DELETE FROM server_forgotten_threads WHERE thread_id = ?", (thread_id,))

    # -- the sweep -------------------------------------------------------------------------
    async def sweep(self, store: Any, *, run_retention: float | None = None) -> None:
        """One sweep: expired threads, old runs, orphan deliveries, forgotten threads'
        checkpoint store records (`store`, the worker's)."""
        now = time.time()
        expired = await anyio.to_thread.run_sync(self.expired, now)
        for strategy in STRATEGIES:
            chosen = [thread_id for thread_id, s in expired if s == strategy]
            if chosen:
                pruned = await anyio.to_thread.run_sync(self.prune, chosen, strategy)
                for thread_id in pruned:
                    LOG.info("thread expired", extra={"thread_id": thread_id, "ttl": strategy})
        if run_retention is not None:
            count = await anyio.to_thread.run_sync(self.old_runs, now - run_retention)
            if count:
                LOG.info("old runs deleted", extra={"runs": count})
        await anyio.to_thread.run_sync(self.orphan_deliveries)
        for thread_id in await anyio.to_thread.run_sync(self.forgotten):
            await store.delete_thread(thread_id)
            await anyio.to_thread.run_sync(self.remembered, thread_id)

    async def serve(self, store: Any, run_retention: float | None, every: float = SWEEP) -> None:
        """Sweep every `every` seconds, the first at once, until cancelled; a sweep that
        fails is logged and tried again at the next."""
        while True:
            try:
                await self.sweep(store, run_retention=run_retention)
            except Exception:
                LOG.exception("retention sweep failed")
            await anyio.sleep(every)
