"""The agent server on a real PostgreSQL: API servers and workers in processes of their own
share one queue."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from langgraph_sdk import get_client

from agentgraph.checkpoint import PostgresStore
from agentgraph.server._queue import RunQueue

from .support import (
    GATE,
    api_process,
    said,
    served_at,
    serving,
    worker_process,
    workers_process,
    working,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

RUNS = int(os.environ.get("AGENTGRAPH_SERVER_RUNS", "60"))
"""Runs the many-workers test queues (`make test-server-many` sets 1,000)."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_two_api_servers_and_three_workers_run_every_run_once(
    tmp_path: Path, pg: tuple[str, str]
):
    """Five processes: `agentgraph server --workers 0` twice, `agentgraph worker` three times."""
    dsn, schema = pg
    with contextlib.ExitStack() as processes:
        apis = [processes.enter_context(api_process(dsn, schema, tmp_path)) for _ in range(2)]
        workers = [
            processes.enter_context(workers_process(dsn, schema, tmp_path)) for _ in range(3)
        ]
        urls = [served_at(api) for api in apis]
        for worker in workers:
            working(worker)
        async with get_client(url=urls[0]) as a, get_client(url=urls[1]) as b:
            clients = (a, b)
            threads = [(await a.threads.create())["thread_id"] for _ in range(RUNS // 6 + 1)]
            created: list[Any] = [None] * RUNS
            finished: list[Any] = [None] * RUNS
            started = time.perf_counter()
            limit = anyio.Semaphore(50)  # requests in flight at most

            async def one(n: int) -> None:
                tid = threads[n % len(threads)]
                async with limit:
                    run = await clients[n % 2].runs.create(tid, "echo", input=said(str(n)))
                    created[n] = run
                # Joined on the API process that did not create it.
                await clients[(n + 1) % 2].runs.join(tid, run["run_id"])
                async with limit:
                    finished[n] = await clients[n % 2].runs.get(tid, run["run_id"])

            async with anyio.create_task_group() as tasks:
                for n in range(RUNS):
                    tasks.start_soon(one, n)
            took = time.perf_counter() - started
    assert {run["status"] for run in finished} == {"success"}
    queue = RunQueue(dsn, schema=schema)
    try:  # each run was claimed once: its attempt is its first, and none is left over
        attempts = [queue.run(r["run_id"]).attempt for r in created]  # type: ignore[union-attr]
        stored = sum(len(queue.runs(tid, limit=RUNS, offset=0)) for tid in threads)
    finally:
        queue.close()
    assert attempts == [1] * RUNS
    assert stored == RUNS
    async with PostgresStore(dsn, schema=schema) as store:
        assert len(await store.run_ids()) == RUNS
    print(f"{RUNS} runs through 2 API and 3 worker processes in {took:.1f} s")


async def test_a_stream_dropped_on_one_api_process_is_rejoined_on_the_other(
    tmp_path: Path, pg: tuple[str, str]
):
    """Three processes: two API servers alone and a worker; the run waits for a file."""
    dsn, schema = pg
    with (
        api_process(dsn, schema, tmp_path) as first,
        api_process(dsn, schema, tmp_path) as second,
        workers_process(dsn, schema, tmp_path) as worker,
    ):
        working(worker)
        async with get_client(url=served_at(first)) as a, get_client(url=served_at(second)) as b:
            tid = (await a.threads.create())["thread_id"]
            stream = a.runs.stream(
                tid, "crash", input=said("x"), stream_mode=["values", "updates"]
            ).__aiter__()
            head = [await anext(stream) for _ in range(3)]  # metadata, the first step's two
            await stream.aclose()  # dropped mid-run: the run waits for `go`
            assert [part.event for part in head] == ["metadata", "values", "updates"]
            run_id = head[0].data["run_id"]
            (tmp_path / "go").touch()
            rest = [
                part async for part in b.runs.join_stream(tid, run_id, last_event_id=head[-1].id)
            ]
            every = [part async for part in b.runs.join_stream(tid, run_id, last_event_id="-1")]
    assert [part.event for part in rest] == ["values", "updates"]
    assert every == head + rest  # every event once, in order
    ids = [int(part.id) for part in every]  # type: ignore[arg-type]
    assert ids == sorted(set(ids))
    assert rest[0].data["messages"][-1]["content"] == "held"


async def test_a_sigkilled_worker_on_postgres_leaves_its_run_to_another(
    tmp_path: Path, pg: tuple[str, str], monkeypatch: pytest.MonkeyPatch
):
    dsn, schema = pg
    monkeypatch.setenv("SERVER_TEST_DIR", str(tmp_path))
    with serving(tmp_path, where=dsn, schema=schema, workers=0) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            run = await client.runs.create(tid, "crash", input=said("go on"))
            first = worker_process(dsn, tmp_path, schema=schema)
            try:
                async with PostgresStore(dsn, schema=schema) as store:
                    while True:
                        log = await store.load(run["run_id"])
                        if log is not None and log.steps:
                            break
                        await anyio.sleep(0.02)
            finally:
                os.kill(first.pid, signal.SIGKILL)
                first.wait(timeout=30)
                assert first.stdout is not None
                first.stdout.close()
            (tmp_path / "go").touch()
            second = worker_process(dsn, tmp_path, schema=schema)
            try:
                final = await client.runs.join(tid, run["run_id"])
            finally:
                second.terminate()
                second.wait(timeout=30)
                assert second.stdout is not None
                second.stdout.close()
            assert isinstance(final, dict)
            assert [m["content"] for m in final["messages"]] == ["held"]
            assert (tmp_path / "effects").read_text() == "effect\n"


async def create_at_once(
    client: Any, tid: str, strategy: str, count: int, graph: str = "echo"
) -> list[Any]:
    """`count` runs on `tid` created concurrently: each run, or the error refusing it."""
    made: list[Any] = [None] * count

    async def one(n: int) -> None:
        try:
            made[n] = await client.runs.create(
                tid, graph, input=said(str(n)), multitask_strategy=strategy
            )
        except httpx.HTTPStatusError as refused:
            made[n] = refused.response.status_code

    async with anyio.create_task_group() as tasks:
        for n in range(count):
            tasks.start_soon(one, n)
    return made


@pytest.mark.timeout(120)
async def test_concurrent_double_texts_follow_their_strategy(tmp_path: Path, pg: tuple[str, str]):
    dsn, schema = pg
    with serving(tmp_path, where=dsn, schema=schema) as url:
        async with get_client(url=url) as client:
            # reject: of five at once on an idle thread, one goes in (and is held, so
            # that it is still in flight when the last of the five arrives).
            GATE.clear()
            tid = (await client.threads.create())["thread_id"]
            made = await create_at_once(client, tid, "reject", 5, graph="gated")
            assert sorted(m if isinstance(m, int) else 200 for m in made) == [
                200,
                409,
                409,
                409,
                409,
            ]
            GATE.set()
            # enqueue: all five run, one after another.
            tid = (await client.threads.create())["thread_id"]
            made = await create_at_once(client, tid, "enqueue", 5)
            for run in made:
                await client.runs.join(tid, run["run_id"])
            statuses = [(await client.runs.get(tid, r["run_id"]))["status"] for r in made]
            assert statuses == ["success"] * 5
            state = await client.threads.get_state(tid)
            assert len(state["values"]["messages"]) == 10
            # interrupt and rollback: of a running run and five at once, one survives to run.
            for strategy in ("interrupt", "rollback"):
                GATE.clear()
                tid = (await client.threads.create())["thread_id"]
                held = await client.runs.create(tid, "gated", input=said("held"))
                while (await client.runs.get(tid, held["run_id"]))["status"] != "running":
                    await anyio.sleep(0.02)
                made = await create_at_once(client, tid, strategy, 5, graph="gated")
                while True:  # every run but the last one queued was cancelled
                    listed = await client.runs.list(tid, limit=20)
                    if sum(r["status"] in ("pending", "running") for r in listed) == 1:
                        break
                    await anyio.sleep(0.02)
                GATE.set()
                for run in await client.runs.list(tid, limit=20):  # rolled back ones are gone
                    await client.runs.join(tid, run["run_id"])
                runs = {r["run_id"]: r["status"] for r in await client.runs.list(tid, limit=20)}
                ran = [r for r in made if runs.get(r["run_id"]) == "success"]
                assert len(ran) == 1, (strategy, runs)
                if strategy == "interrupt":
                    assert sorted(runs.values()) == ["interrupted"] * 5 + ["success"]
                else:
                    assert list(runs.values()) == ["success"]
