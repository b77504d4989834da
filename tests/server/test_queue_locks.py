"""The queue's transactions on a real PostgreSQL, each interleaved with another one by hand.

A worker's claim and a client's double text or cancel commit in any order on
PostgreSQL. Each test holds one side's transaction open at the point where
the other side meets its locks, waits until the other side is blocked on
them (`pg_locks`), then lets it go: the interleavings that broke runs under
load, made deterministic.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from agentgraph.server._queue import QueuedRun, RunQueue

pytestmark = pytest.mark.timeout(60)


def queued(thread_id: str, strategy: str = "enqueue") -> QueuedRun:
    now = time.time()
    return QueuedRun(
        str(uuid.uuid4()), thread_id, "a", "echo", "pending", {}, {}, strategy,
        None, None, 0, now, now,
    )  # fmt: skip


@pytest.fixture
def queue(pg: tuple[str, str]) -> Iterator[RunQueue]:
    dsn, schema = pg
    opened = RunQueue(dsn, schema=schema)
    yield opened
    opened.close()


@pytest.fixture
def other(pg: tuple[str, str]) -> Iterator[psycopg.Connection[Any]]:
    """A second connection, for the transaction a test holds open."""
    dsn, schema = pg
    with psycopg.connect(dsn, autocommit=True, options=f"-c search_path={schema}") as conn:
        yield conn


def blocked_on_a_lock(held_by: psycopg.Connection[Any], call: Callable[[], Any]) -> Any:
    """Start `call` on a thread, wait until it waits for a lock `held_by` holds, and
    return a function giving its result (or raising its error) once it ends."""
    outcome: dict[str, Any] = {}

    def main() -> None:
        try:
            outcome["result"] = call()
        except BaseException as exc:  # re-raised by the test
            outcome["error"] = exc

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    holder = held_by.info.backend_pid
    with psycopg.connect(held_by.info.dsn, autocommit=True) as watch:
        while thread.is_alive():
            waiting = watch.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
                (holder,),
            ).fetchone()
            if waiting is not None and waiting[0]:
                break
            time.sleep(0.01)

    def result() -> Any:
        thread.join(30)
        assert not thread.is_alive()
        if "error" in outcome:
            raise outcome["error"]
        return outcome.get("result")

    return result


def claim_by_hand(conn: psycopg.Connection[Any], run_id: str) -> None:
    """What a worker's claim does to a run, in a transaction left open."""
    conn.execute("BEGIN")
    conn.execute("SELECT run_id FROM server_runs WHERE run_id = %s FOR UPDATE", (run_id,))
    conn.execute(
        "UPDATE server_runs SET status = 'running', claimed_by = 'w', "
        "claimed_until = %s, attempt = attempt + 1 WHERE run_id = %s",
        (time.time() + 45, run_id),
    )


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
def test_a_double_text_meeting_a_claim_cancels_the_run_the_claim_started(
    queue: RunQueue, other: psycopg.Connection[Any], strategy: str
):
    queue.put_thread("t", {}, replace=False)
    first = queue.enqueue(queued("t"))
    assert first is not None
    claim_by_hand(other, first.run_id)
    double_text = blocked_on_a_lock(other, lambda: queue.enqueue(queued("t", strategy)))
    other.execute("COMMIT")
    second = double_text()
    # The claimed run is running: it is asked to stop, not marked ended (or deleted)
    # while its worker goes on, and the thread gives no other run to a worker meanwhile.
    stored = queue.run(first.run_id)
    assert stored is not None
    assert (stored.status, stored.cancel) == ("running", strategy)
    assert queue.claim("w2", 10) == []
    queue.finish(first.run_id, "t", "interrupted", {})
    assert [r.run_id for r in queue.claim("w2", 10)] == [second.run_id]


def test_a_cancel_meeting_a_claim_asks_the_claimed_run_to_stop(
    queue: RunQueue, other: psycopg.Connection[Any]
):
    queue.put_thread("t", {}, replace=False)
    first = queue.enqueue(queued("t"))
    assert first is not None
    claim_by_hand(other, first.run_id)
    cancel = blocked_on_a_lock(other, lambda: queue.request_cancel(first.run_id, "interrupt"))
    other.execute("COMMIT")
    answered = cancel()
    assert answered is not None
    assert (answered.status, answered.cancel) == ("running", "interrupt")


def test_a_run_finishing_while_a_double_text_holds_its_thread_waits_for_it(
    queue: RunQueue, other: psycopg.Connection[Any]
):
    queue.put_thread("t", {}, replace=False)
    first = queue.enqueue(queued("t"))
    assert first is not None
    [claimed] = queue.claim("w", 1)
    # A double text takes the thread's row, then marks the thread's running runs.
    other.execute("BEGIN")
    other.execute("SELECT thread_id FROM server_threads WHERE thread_id = 't' FOR UPDATE")
    finish = blocked_on_a_lock(other, lambda: queue.finish(claimed.run_id, "t", "interrupted", {}))
    other.execute("SET LOCAL lock_timeout = '20s'")
    other.execute(
        "UPDATE server_runs SET cancel = 'interrupt' WHERE run_id = %s", (claimed.run_id,)
    )
    other.execute("COMMIT")
    finish()
    stored = queue.run(claimed.run_id)
    assert stored is not None and stored.status == "interrupted"
