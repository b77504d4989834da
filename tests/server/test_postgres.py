"""The agent server on a real PostgreSQL: two API servers and three workers share one queue."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from langgraph_sdk import get_client

from agentgraph.checkpoint import PostgresStore
from agentgraph.server import Worker
from agentgraph.server._queue import RunQueue

from .support import GATE, GRAPHS, said, serving, worker_process

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

RUNS = int(os.environ.get("AGENTGRAPH_SERVER_RUNS", "30"))
"""Runs the many-workers test queues (`make test-server-many` sets 1,000)."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_two_api_servers_and_three_workers_run_every_run_once(
    tmp_path: Path, pg: tuple[str, str]
):
    dsn, schema = pg
    workers = [Worker(dsn, GRAPHS, schema=schema, grace=1) for _ in range(3)]
    with (
        serving(tmp_path, where=dsn, schema=schema, workers=0) as first,
        serving(tmp_path, where=dsn, schema=schema, workers=0) as second,
    ):
        for worker in workers:
            worker.start()
        try:
            async with get_client(url=first) as a, get_client(url=second) as b:
                threads = [(await a.threads.create())["thread_id"] for _ in range(10)]
                created = []
                for n in range(RUNS):
                    client = (a, b)[n % 2]
                    tid = threads[n % len(threads)]
                    created.append(await client.runs.create(tid, "echo", input=said(str(n))))
                for run in created:
                    await b.runs.join(run["thread_id"], run["run_id"])
                finished = [await a.runs.get(r["thread_id"], r["run_id"]) for r in created]
        finally:
            for worker in workers:
                worker.stop()
    assert {run["status"] for run in finished} == {"success"}
    queue = RunQueue(dsn, schema=schema)
    try:  # each run was claimed once: its attempt is its first
        assert {queue.run(r["run_id"]).attempt for r in created} == {1}  # type: ignore[union-attr]
    finally:
        queue.close()
    async with PostgresStore(dsn, schema=schema) as store:
        assert len(await store.run_ids()) == RUNS


async def test_a_stream_dropped_on_one_api_server_is_rejoined_on_the_other(
    tmp_path: Path, pg: tuple[str, str]
):
    dsn, schema = pg
    with (
        serving(tmp_path, where=dsn, schema=schema) as first,
        serving(tmp_path, where=dsn, schema=schema, workers=0) as second,
    ):
        async with get_client(url=first) as a, get_client(url=second) as b:
            tid = (await a.threads.create())["thread_id"]
            stream = a.runs.stream(
                tid, "gated", input=said("x"), stream_mode=["values", "updates"]
            ).__aiter__()
            head = await anext(stream)
            await stream.aclose()
            assert head.event == "metadata"
            run_id = head.data["run_id"]
            GATE.set()
            rest = [
                (part.event, part.data)
                async for part in b.runs.join_stream(tid, run_id, last_event_id="1")
            ]
            every = [
                (part.event, part.data)
                async for part in b.runs.join_stream(tid, run_id, last_event_id="-1")
            ]
    assert [event for event, _ in rest] == ["values", "updates"]
    assert every[1:] == rest


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
            # reject: of five at once on an idle thread, one goes in.
            tid = (await client.threads.create())["thread_id"]
            made = await create_at_once(client, tid, "reject", 5)
            assert sorted(m if isinstance(m, int) else 200 for m in made) == [
                200,
                409,
                409,
                409,
                409,
            ]
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
