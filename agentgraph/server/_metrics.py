"""Prometheus metrics of an agent server, read from its database at scrape time.

The gauges (runs and threads by status, queue depth and age, workers'
heartbeats, webhook deliveries) are counted in the database when scraped, so
every API process sharing one PostgreSQL answers the same numbers whichever of
them is scraped. The claim wait histogram is the one measurement made in a
process: it counts the claims of that process's workers, and Prometheus keeps
each scraped process apart by its `instance` label.

`prometheus_client` writes the exposition format (and parses it in the tests):
the text format has escaping and histogram rules a hand-written writer would
have to get right again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ._heartbeats import heartbeats
from ._queue import QueuedRun, RunQueue

__all__ = ("RUN_STATUSES", "ServerMetrics", "claim_waits")

RUN_STATUSES = ("pending", "running", "success", "error", "timeout", "interrupted")
THREAD_STATUSES = ("idle", "busy", "interrupted", "error")
DELIVERY_STATUSES = ("pending", "delivered", "failed")

_WAIT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def claim_waits(queue: RunQueue, runs: Sequence[QueuedRun]) -> list[float]:
    """Seconds each first claim of `runs` waited after its run was due (a run claimed
    again after its worker died is not counted: its wait says nothing of the queue)."""
    first = [run.run_id for run in runs if run.attempt == 1]
    if not first:
        return []
    marks = ", ".join("?" for _ in first)
    rows = queue._all(
        f"SELECT started_at - start_at FROM server_runs WHERE run_id IN ({marks}) "
        "AND started_at IS NOT NULL",
        tuple(first),
    )
    return [max(0.0, float(row[0])) for row in rows]


class _StoreCollector(Collector):
    """The gauges, counted in the database on each scrape."""

    def __init__(self, queue: RunQueue) -> None:
        self.queue = queue

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = time.time()
        yield from self._runs(now)
        yield from self._workers(now)
        yield from self._webhooks()

    def _counts(self, sql: str) -> dict[str, int]:
        return {str(row[0]): int(row[1]) for row in self.queue._all(sql)}

    def _runs(self, now: float) -> Iterator[GaugeMetricFamily]:
        runs = GaugeMetricFamily(
            "agentgraph_runs", "Runs in the store by status.", labels=["status"]
        )
        counted = self._counts("SELECT status, COUNT(*) FROM server_runs GROUP BY status")
        for status in sorted(set(RUN_STATUSES) | set(counted)):
            runs.add_metric([status], counted.get(status, 0))
        yield runs
        threads = GaugeMetricFamily(
            "agentgraph_threads", "Threads in the store by status.", labels=["status"]
        )
        counted = self._counts("SELECT status, COUNT(*) FROM server_threads GROUP BY status")
        for status in sorted(set(THREAD_STATUSES) | set(counted)):
            threads.add_metric([status], counted.get(status, 0))
        yield threads
        depth, oldest = self.queue._all(
            "SELECT COUNT(*), MIN(start_at) FROM server_runs "
            "WHERE status = 'pending' AND start_at <= ?",
            (now,),
        )[0]
        yield GaugeMetricFamily(
            "agentgraph_queue_depth", "Pending runs due now, waiting for a worker.", value=depth
        )
        yield GaugeMetricFamily(
            "agentgraph_queue_oldest_age_seconds",
            "Seconds the oldest pending run due now has been due (0 when none waits).",
            value=0.0 if oldest is None else max(0.0, now - oldest),
        )
        delayed = self.queue._all(
            "SELECT COUNT(*) FROM server_runs WHERE status = 'pending' AND start_at > ?", (now,)
        )[0][0]
        yield GaugeMetricFamily(
            "agentgraph_queue_delayed",
            "Pending runs not due yet (started with a delay).",
            value=delayed,
        )

    def _workers(self, now: float) -> Iterator[GaugeMetricFamily]:
        beats = heartbeats(self.queue)
        yield GaugeMetricFamily(
            "agentgraph_workers_alive",
            "Workers whose last heartbeat is recent enough to count them alive.",
            value=sum(beat.alive(now) for beat in beats),
        )
        age = GaugeMetricFamily(
            "agentgraph_worker_heartbeat_age_seconds",
            "Seconds since each worker's last heartbeat.",
            labels=["worker", "host"],
        )
        running = GaugeMetricFamily(
            "agentgraph_worker_running_runs",
            "Runs each worker had going on at its last heartbeat.",
            labels=["worker", "host"],
        )
        for beat in beats:
            age.add_metric([beat.worker, beat.host], max(0.0, now - beat.seen_at))
            running.add_metric([beat.worker, beat.host], beat.running)
        yield age
        yield running

    def _webhooks(self) -> Iterator[GaugeMetricFamily]:
        deliveries = GaugeMetricFamily(
            "agentgraph_webhook_deliveries",
            "Webhook deliveries in the store by status.",
            labels=["status"],
        )
        counted = self._counts("SELECT status, COUNT(*) FROM server_webhooks GROUP BY status")
        for status in sorted(set(DELIVERY_STATUSES) | set(counted)):
            deliveries.add_metric([status], counted.get(status, 0))
        yield deliveries
        attempts = GaugeMetricFamily(
            "agentgraph_webhook_attempts",
            "Webhook delivery attempts in the store, by outcome (ok: a 2xx).",
            labels=["outcome"],
        )
        ok, failed = self.queue._all(
            "SELECT COALESCE(SUM(CASE WHEN error IS NULL THEN 1 ELSE 0 END), 0), "
            "COALESCE(SUM(CASE WHEN error IS NULL THEN 0 ELSE 1 END), 0) "
            "FROM server_webhook_attempts"
        )[0]
        attempts.add_metric(["ok"], ok)
        attempts.add_metric(["failed"], failed)
        yield attempts


class ServerMetrics:
    """The metrics one server process exposes: the store's gauges and its claim waits."""

    def __init__(self, queue: RunQueue) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(_StoreCollector(queue))
        self.claim_wait = Histogram(
            "agentgraph_claim_wait_seconds",
            "Seconds a run waited, once due, for a worker of this process to claim it "
            "(first claims only; per process).",
            buckets=_WAIT_BUCKETS,
            registry=self.registry,
        )

    def claimed(self, waits: Sequence[float]) -> None:
        """Count the claim waits of this process's workers."""
        for wait in waits:
            self.claim_wait.observe(wait)
