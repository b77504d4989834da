"""The webhook outbox: a delivery per ended run that asked for one, and its attempts.

`record_delivery` runs inside the queue's transaction that ends a run, so a run's end
and its delivery are committed together: a run never ends without its delivery, and a
delivery never exists for a run that did not end. Workers then claim due deliveries
(`Outbox.claim`, `FOR UPDATE SKIP LOCKED` on PostgreSQL) and record each attempt
(`Outbox.attempted`) with the next one's time, until a 2xx or the limits.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import orjson

if TYPE_CHECKING:
    from ._queue import RunQueue
    from ._webhook_settings import WebhookSettings

__all__ = ("OUTBOX_SCHEMA", "Delivery", "Outbox", "record_delivery")

OUTBOX_SCHEMA = """
CREATE TABLE IF NOT EXISTS server_webhooks (
    webhook_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    url TEXT NOT NULL,
    body TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at REAL NOT NULL,
    claimed_by TEXT,
    claimed_until REAL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS server_webhooks_due ON server_webhooks (status, next_at);
CREATE INDEX IF NOT EXISTS server_webhooks_run ON server_webhooks (run_id);
CREATE TABLE IF NOT EXISTS server_webhook_attempts (
    webhook_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    sent_at REAL NOT NULL,
    ended_at REAL NOT NULL,
    status_code INTEGER,
    error TEXT,
    PRIMARY KEY (webhook_id, attempt)
);
"""

RunSql = Callable[[str, Sequence[Any]], Any]


def iso(stamp: float | None) -> str | None:
    if stamp is None:
        return None
    return datetime.datetime.fromtimestamp(stamp, tz=datetime.UTC).isoformat()


def webhook_id_of(run_id: str) -> str:
    """A run's delivery id (`webhook-id`): one per run, the same on every attempt."""
    return f"msg_{run_id.replace('-', '')}"


def record_delivery(run_sql: RunSql, run_id: str, status: str, now: float) -> None:
    """Queue the webhook of a run that ended `status` at `now`, if it asked for one.

    Called inside the transaction that ends the run (`run_sql` runs a statement in it):
    the body is the run as its clients read it, with its end, its last `values` and its
    error (`webhook_sent_at` is added to each attempt).
    """
    rows = run_sql(
        "SELECT run_id, thread_id, assistant_id, kwargs, metadata, multitask_strategy, "
        "created_at, started_at FROM server_runs WHERE run_id = ?",
        (run_id,),
    ).fetchall()
    if not rows:
        return
    row = rows[0]
    kwargs = orjson.loads(row[3])
    url = kwargs.get("webhook")
    if not url:
        return
    last = run_sql(
        "SELECT data FROM server_events WHERE run_id = ? AND event = 'values' "
        "ORDER BY seq DESC LIMIT 1",
        (run_id,),
    ).fetchall()
    if last:
        values = orjson.loads(bytes(last[0][0]))
    else:
        state = run_sql(
            "SELECT state FROM server_threads WHERE thread_id = ?", (row[1],)
        ).fetchall()
        values = orjson.loads(state[0][0]) if state else {}
    failed = run_sql(
        "SELECT data FROM server_events WHERE run_id = ? AND event = 'error' "
        "ORDER BY seq DESC LIMIT 1",
        (run_id,),
    ).fetchall()
    body = {
        "run_id": row[0],
        "thread_id": row[1],
        "assistant_id": row[2],
        "created_at": iso(row[6]),
        "updated_at": iso(now),
        "metadata": orjson.loads(row[4]),
        "kwargs": kwargs,
        "multitask_strategy": row[5],
        "status": status,
        "values": values,
        "error": orjson.loads(bytes(failed[0][0])) if failed else None,
        "run_started_at": iso(row[7]),
        "run_ended_at": iso(now),
    }
    run_sql(
        "INSERT INTO server_webhooks (webhook_id, run_id, url, body, status, next_at, "
        "created_at, updated_at) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?) "
        "ON CONFLICT (webhook_id) DO NOTHING",
        (webhook_id_of(run_id), run_id, url, orjson.dumps(body).decode(), now, now, now),
    )


@attrs.frozen
class Delivery:
    """A due delivery, as a worker claimed it."""

    webhook_id: str
    run_id: str
    url: str
    body: dict[str, Any]
    attempts: int
    created_at: float


class Outbox:
    """The deliveries in the queue's database, reached through the queue's connection."""

    def __init__(self, queue: RunQueue) -> None:
        self.queue = queue

    def claim(self, worker: str, count: int, term: float) -> list[Delivery]:
        """Take up to `count` deliveries due now for `term` seconds."""
        now = time.time()
        # A read first: an idle worker's look takes no write lock (SQLite has one writer).
        if not self.queue._all(
            "SELECT 1 FROM server_webhooks WHERE status = 'pending' AND next_at <= ? LIMIT 1",
            (now,),
        ):
            return []
        lock = " FOR UPDATE SKIP LOCKED" if self.queue.postgres else ""
        with self.queue.transaction() as run_sql:
            rows = run_sql(
                "SELECT webhook_id, run_id, url, body, attempts, created_at FROM server_webhooks "
                "WHERE status = 'pending' AND next_at <= ? "
                "AND (claimed_until IS NULL OR claimed_until < ?) "
                f"ORDER BY next_at LIMIT ?{lock}",
                (now, now, count),
            ).fetchall()
            for row in rows:
                run_sql(
                    "UPDATE server_webhooks SET claimed_by = ?, claimed_until = ? "
                    "WHERE webhook_id = ?",
                    (worker, now + term, row[0]),
                )
        return [
            Delivery(row[0], row[1], row[2], orjson.loads(row[3]), row[4], row[5]) for row in rows
        ]

    def attempted(
        self,
        delivery: Delivery,
        settings: WebhookSettings,
        *,
        sent_at: float,
        status_code: int | None,
        error: str | None,
    ) -> str:
        """Record an attempt and what comes next, in one transaction: the delivery's new
        status (`delivered`, `pending` for a retry, `failed` past the limits)."""
        now = time.time()
        with self.queue.transaction() as run_sql:
            attempts = (
                run_sql(
                    "SELECT COALESCE(MAX(attempt), 0) FROM server_webhook_attempts "
                    "WHERE webhook_id = ?",
                    (delivery.webhook_id,),
                ).fetchone()[0]
                + 1
            )
            run_sql(
                "INSERT INTO server_webhook_attempts (webhook_id, attempt, run_id, sent_at, "
                "ended_at, status_code, error) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (delivery.webhook_id, attempts, delivery.run_id, sent_at, now, status_code, error),
            )
            next_at = now + settings.delay(attempts)
            if error is None:
                status = "delivered"
            elif (
                attempts >= settings.max_attempts
                or next_at - delivery.created_at > settings.max_age
            ):
                status = "failed"
            else:
                status = "pending"
            run_sql(
                "UPDATE server_webhooks SET status = ?, attempts = ?, next_at = ?, "
                "claimed_by = NULL, claimed_until = NULL, updated_at = ? WHERE webhook_id = ?",
                (status, attempts, next_at, now, delivery.webhook_id),
            )
        return status

    def log(self, run_id: str) -> list[dict[str, Any]]:
        """A run's deliveries with their attempts, as the API answers them."""
        deliveries = self.queue._all(
            "SELECT webhook_id, url, status, next_at, created_at FROM server_webhooks "
            "WHERE run_id = ? ORDER BY created_at",
            (run_id,),
        )
        answer = []
        for webhook_id, url, status, next_at, created_at in deliveries:
            tried = self.queue._all(
                "SELECT attempt, sent_at, ended_at, status_code, error FROM "
                "server_webhook_attempts WHERE webhook_id = ? ORDER BY attempt",
                (webhook_id,),
            )
            answer.append(
                {
                    "webhook_id": webhook_id,
                    "url": url,
                    "status": status,
                    "created_at": iso(created_at),
                    "next_attempt_at": iso(next_at) if status == "pending" else None,
                    "attempts": [
                        {
                            "attempt": attempt,
                            "sent_at": iso(sent),
                            "ended_at": iso(ended),
                            "status_code": code,
                            "error": error,
                        }
                        for attempt, sent, ended, code, error in tried
                    ],
                }
            )
        return answer
