"""Lost nodes, a killed driver and held leases: every row finishes once, no committed effect twice.

The side-effect file gets one line per execution of the `bump` tool (`KEY PID`),
as in the checkpoint crash trials.
"""

import functools
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentgraph.checkpoint import SQLiteStore
from agentgraph.ray import run_batch
from agentgraph.ray._batch import run_id_for

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parents[2]
AGENT = "tests.raybatch.graphs:agent"
ROWS = 12
LEASE = 2.0  # seconds: short, so a lease a lost runner held lapses soon


def questions(counter: Path, pause: float) -> list[str]:
    return [f"{counter}|k{i}|{pause}" for i in range(ROWS)]


def executions(counter: Path) -> Counter[str]:
    if not counter.exists():
        return Counter()
    return Counter(line.split()[0] for line in counter.read_text().splitlines())


def wait_for_lines(counter: Path, lines: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while sum(executions(counter).values()) < lines:
        assert time.monotonic() < deadline, "the batch never got going"
        time.sleep(0.05)


StoreFactory = Callable[[], Any]


@pytest.fixture(params=["sqlite", "postgres"])
def shared_store(request, tmp_path) -> Iterator[StoreFactory]:
    """A store every process of the batch opens for itself: a SQLite file, or a Postgres schema."""
    if request.param == "sqlite":
        yield functools.partial(SQLiteStore, tmp_path / "runs.db", lease_term=LEASE)
        return
    from agentgraph.checkpoint import PostgresStore
    from tests.pg_server import drop_schema, fresh_schema

    server = request.getfixturevalue("postgres_server")
    schema = fresh_schema()
    yield functools.partial(PostgresStore, server.dsn, schema=schema, lease_term=LEASE)
    drop_schema(server.dsn, schema)


def committed_results(db: Path | StoreFactory, batch_id: str) -> set[str]:
    """The keys whose `bump` result the store holds (an effect it would never redo)."""
    opened = db if callable(db) else functools.partial(SQLiteStore, db)

    async def read() -> set[str]:
        async with opened() as store:
            found = set()
            for i in range(ROWS):
                log = await store.load(run_id_for(batch_id, str(i)))
                if log is not None and any(e.kind == "result" for e in log.effects):
                    found.add(f"k{i}")
            return found

    return anyio.run(read)


def check_steps_once(db: Path | StoreFactory, batch_id: str) -> None:
    """Each run's record commits every step once, in order, and ends at finish."""
    opened = db if callable(db) else functools.partial(SQLiteStore, db)

    async def read() -> None:
        async with opened() as store:
            for i in range(ROWS):
                log = await store.load(run_id_for(batch_id, str(i)))
                assert log is not None
                steps = [r.step for r in log.steps]
                assert steps == sorted(set(steps)), steps
                assert log.steps[-1].next == "finish"

    anyio.run(read)


def check_outcome(rows, counter: Path, committed_before: set[str]) -> None:
    assert [r.status for r in rows] == ["finished"] * ROWS, [r.error for r in rows]
    assert [r.output for r in rows] == [f"done k{i}" for i in range(ROWS)]
    runs = executions(counter)
    assert set(runs) == {f"k{i}" for i in range(ROWS)}
    assert max(runs.values()) <= 2, runs  # retry-safe, uncommitted: repeated at most once
    for key in committed_before:
        assert runs[key] == 1, key  # a committed result is never redone


@pytest.mark.timeout(300)
def test_a_node_lost_mid_batch_costs_no_row_and_repeats_no_committed_effect(
    ray_cluster, tmp_path, shared_store
):
    counter, store = tmp_path / "effects.txt", shared_store
    doomed = ray_cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1", resources={"pool": 1})
    outcome: list = []

    def drive() -> None:
        try:
            outcome.append(
                run_batch(
                    AGENT,
                    questions(counter, 0.4),
                    store=store,
                    batch_id="node-loss",
                    concurrency=4,
                    progress=False,
                    ray_remote_args={"resources": {"pool": 1}, "num_cpus": 0},
                )
            )
        except BaseException as error:
            outcome.append(error)

    driver = threading.Thread(target=drive)
    driver.start()
    try:
        wait_for_lines(counter, 5)
    finally:
        ray_cluster.remove_node(doomed)
    lost = executions(counter)
    committed = committed_results(store, "node-loss")
    ray_cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1", resources={"pool": 1})
    driver.join(timeout=200)
    assert not driver.is_alive()
    rows = outcome[0]
    assert not isinstance(rows, BaseException), rows
    assert sum(lost.values()) >= 5 and len(committed) < ROWS
    check_outcome(rows, counter, committed)
    check_steps_once(store, "node-loss")


def test_a_killed_driver_loses_nothing_and_a_second_run_finishes_the_batch(ray_cluster, tmp_path):
    counter, db = tmp_path / "effects.txt", tmp_path / "runs.db"
    command = [sys.executable, "-m", "tests.raybatch.driver", str(db), str(counter), "killed"]
    # A session of its own, so the kill takes the driver and the Ray it started together.
    with subprocess.Popen(
        command, cwd=ROOT, stderr=subprocess.DEVNULL, start_new_session=True
    ) as process:
        try:
            wait_for_lines(counter, 5)
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    committed = committed_results(db, "killed")
    assert len(committed) < ROWS

    store = functools.partial(SQLiteStore, db, lease_term=LEASE)
    rows = run_batch(AGENT, questions(counter, 0.4), store=store, batch_id="killed", progress=False)
    check_outcome(rows, counter, committed)
    check_steps_once(db, "killed")
    origins = Counter(r.origin for r in rows)
    assert origins["stored"] == len(committed_results(db, "killed") & committed) or origins


def test_a_row_whose_lease_another_runner_holds_waits_for_it_to_lapse(ray_cluster, tmp_path):
    counter, db = tmp_path / "effects.txt", tmp_path / "runs.db"

    def hold(batch_id: str, term: float) -> None:
        """A runner on another machine took row 0 of the batch, then vanished."""

        async def take() -> None:
            store = SQLiteStore(db, lease_term=term)
            await store.acquire(run_id_for(batch_id, "0"), owner="elsewhere:1:0000")
            store.close()

        anyio.run(take)

    store = functools.partial(SQLiteStore, db, lease_term=LEASE)
    given = questions(counter, 0.0)[:2]
    hold("refused", 120.0)
    refused = run_batch(
        AGENT, given, store=store, batch_id="refused", lease_wait=0.0, progress=False
    )
    assert [r.status for r in refused] == ["failed", "finished"]
    assert refused[0].error_type == "RunBusy" and "elsewhere:1:0000" in refused[0].error
    assert executions(counter) == Counter({"k1": 1})

    hold("waited", 8.0)  # outlasts the actor's start, so the row finds it held
    waited = run_batch(
        AGENT, given, store=store, batch_id="waited", lease_wait=60.0, progress=False
    )
    assert [(r.status, r.origin) for r in waited] == [("finished", "new")] * 2
    assert executions(counter) == Counter({"k0": 1, "k1": 2})
