"""Retention through the official Python client, on SQLite and PostgreSQL: a thread's ttl
(`delete` and `keep_latest`), `threads.prune`, the run retention, and the checkpoint
store's records and webhook deliveries going with what they belong to."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from agentgraph.checkpoint import PostgresStore, SQLiteStore
from agentgraph.server._queue import RunQueue
from agentgraph.server._retention import Retention
from tests.pg_server import drop_schema, fresh_schema

from .support import GATE, said, serving

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: Any, tmp_path: Path) -> Iterator[tuple[str, str]]:
    if request.param == "sqlite":
        yield str(tmp_path / "server.db"), "agentgraph"
        return
    dsn = request.getfixturevalue("postgres_server").dsn
    schema = fresh_schema()
    yield dsn, schema
    drop_schema(dsn, schema)


@contextlib.asynccontextmanager
async def client_on(
    tmp_path: Path, database: tuple[str, str], **settings: Any
) -> AsyncIterator[LangGraphClient]:
    where, schema = database
    settings.setdefault("sweep_every", 0.1)
    with serving(tmp_path, where=where, schema=schema, **settings) as url:
        async with get_client(url=url) as client:
            yield client


async def until(check: Callable[[], Any], *, within: float = 30.0) -> Any:
    with anyio.fail_after(within):
        while True:
            answer = await check()
            if answer:
                return answer
            await anyio.sleep(0.05)


async def gone(client: LangGraphClient, thread_id: str) -> bool:
    try:
        await client.threads.get(thread_id)
    except httpx.HTTPStatusError as error:
        return error.response.status_code == 404
    return False


async def in_store(database: tuple[str, str], thread_id: str) -> bool:
    """Whether the checkpoint store keeps thread `thread_id`'s turns."""
    where, schema = database
    store: Any = (
        PostgresStore(where, schema=schema)
        if where.startswith("postgresql")
        else SQLiteStore(where)
    )
    try:
        return await store.load_thread(thread_id) is not None
    finally:
        await store.aclose()


async def test_a_thread_past_its_ttl_is_deleted_with_its_records(
    tmp_path: Path, database: tuple[str, str]
) -> None:
    async with client_on(tmp_path, database) as client:
        kept = await client.threads.create()
        thread = await client.threads.create(ttl={"ttl": 0.02, "strategy": "delete"})
        tid = thread["thread_id"]
        await client.runs.wait(tid, "echo", input=said("hi"))
        await client.runs.wait(kept["thread_id"], "echo", input=said("hi"))
        assert await in_store(database, tid)
        await until(lambda: gone(client, tid))
        assert not await gone(client, kept["thread_id"])
        assert await client.threads.search() == [await client.threads.get(kept["thread_id"])]

        async def store_forgot() -> bool:
            return not await in_store(database, tid)

        await until(store_forgot)
        assert await in_store(database, kept["thread_id"])


async def test_a_busy_thread_expires_once_idle(tmp_path: Path) -> None:
    async with client_on(tmp_path, (str(tmp_path / "server.db"), "agentgraph")) as client:
        thread = await client.threads.create(ttl=0.005)  # minutes: 0.3 s
        tid = thread["thread_id"]
        run = await client.runs.create(tid, "gated", input=said("hi"))
        await anyio.sleep(1.0)  # past its ttl, with sweeps
        assert (await client.threads.get(tid))["status"] == "busy"
        GATE.set()
        await client.runs.join(tid, run["run_id"])
        await until(lambda: gone(client, tid))


async def test_an_update_gives_a_thread_a_ttl_and_keeps_it_alive(tmp_path: Path) -> None:
    async with client_on(tmp_path, (str(tmp_path / "server.db"), "agentgraph")) as client:
        thread = await client.threads.create()
        tid = thread["thread_id"]
        await client.threads.update(tid, metadata={"a": 1}, ttl=0.02)  # 1.2 s from now
        for _ in range(4):  # each update moves its expiry on
            await anyio.sleep(0.5)
            await client.threads.update(tid, metadata={"a": 2})
        assert not await gone(client, tid)
        await until(lambda: gone(client, tid))


async def test_keep_latest_keeps_the_threads_state_and_latest_run(
    tmp_path: Path, database: tuple[str, str]
) -> None:
    async with client_on(tmp_path, database) as client:
        thread = await client.threads.create()
        tid = thread["thread_id"]
        for text in ("one", "two", "three"):
            await client.runs.wait(tid, "recall", input=said(text))
        before = await client.threads.get_state(tid)
        assert len(await client.threads.get_history(tid)) == 3
        assert await client.threads.prune([tid], strategy="keep_latest") == {"pruned_count": 1}
        after = await client.threads.get_state(tid)
        assert after["values"] == before["values"]
        assert after["checkpoint"] == before["checkpoint"]
        assert len(await client.threads.get_history(tid)) == 1
        assert len(await client.runs.list(tid)) == 1
        answer = await client.runs.wait(tid, "recall", input=said("four"))
        assert answer["messages"][-1]["content"].startswith("saw: one | saw: nothing")
        assert len(await client.threads.get_history(tid)) == 2


async def test_prune_deletes_idle_threads_that_exist(
    tmp_path: Path, database: tuple[str, str]
) -> None:
    async with client_on(tmp_path, database) as client:
        first, second, busy = [await client.threads.create() for _ in range(3)]
        for thread in (first, second):
            await client.runs.wait(thread["thread_id"], "echo", input=said("hi"))
        run = await client.runs.create(busy["thread_id"], "gated", input=said("hi"))
        unknown = "00000000-0000-4000-8000-000000000000"
        ids = [first["thread_id"], second["thread_id"], busy["thread_id"], unknown]
        assert await client.threads.prune(ids) == {"pruned_count": 2}
        assert await gone(client, first["thread_id"])
        assert await gone(client, second["thread_id"])
        assert not await gone(client, busy["thread_id"])
        GATE.set()
        await client.runs.join(busy["thread_id"], run["run_id"])

        async def store_forgot() -> bool:
            return not await in_store(database, first["thread_id"])

        await until(store_forgot)


async def test_prune_and_ttl_refuse_what_they_cannot_read(tmp_path: Path) -> None:
    async with client_on(tmp_path, (str(tmp_path / "server.db"), "agentgraph")) as client:
        for ttl in ({"ttl": -1}, {"ttl": 5, "strategy": "forget"}, {"ttl": "soon"}):
            with pytest.raises(httpx.HTTPStatusError) as refused:
                await client.threads.create(ttl=ttl)
            assert refused.value.response.status_code == 422
        for body in (
            {"thread_ids": "x"},
            {"thread_ids": ["nope"]},
            {"thread_ids": [], "strategy": "x"},
        ):
            with pytest.raises(httpx.HTTPStatusError) as refused:
                await client.http.post("/threads/prune", json=body)
            assert refused.value.response.status_code == 422
        assert await client.threads.search() == []


async def test_ended_runs_past_the_run_retention_are_deleted(tmp_path: Path) -> None:
    where = (str(tmp_path / "server.db"), "agentgraph")
    async with client_on(tmp_path, where, run_retention=0.5) as client:
        thread = await client.threads.create()
        tid = thread["thread_id"]
        await client.runs.wait(tid, "echo", input=said("hi"))
        assert len(await client.runs.list(tid)) == 1

        async def no_runs() -> bool:
            return not await client.runs.list(tid)

        await until(no_runs)
        state = await client.threads.get_state(tid)
        assert [m["content"] for m in state["values"]["messages"]] == ["hi", "echo: hi"]


async def test_a_deleted_threads_store_records_go_at_the_next_sweep(tmp_path: Path) -> None:
    where = (str(tmp_path / "server.db"), "agentgraph")
    async with client_on(tmp_path, where) as client:
        thread = await client.threads.create()
        tid = thread["thread_id"]
        await client.runs.wait(tid, "echo", input=said("hi"))
        assert await in_store(where, tid)
        await client.threads.delete(tid)

        async def store_forgot() -> bool:
            return not await in_store(where, tid)

        await until(store_forgot)


def test_deliveries_of_deleted_runs_go_once_sent(tmp_path: Path) -> None:
    queue = RunQueue(str(tmp_path / "server.db"))
    try:
        retention = Retention(queue)
        now = time.time()
        with queue.transaction() as run:
            for webhook_id, status in (
                ("sent", "delivered"),
                ("gave_up", "failed"),
                ("due", "pending"),
            ):
                run(
                    "INSERT INTO server_webhooks (webhook_id, run_id, url, body, status, next_at, "
                    "created_at, updated_at) VALUES (?, ?, 'https://x.test', '{}', ?, ?, ?, ?)",
                    (webhook_id, f"run-{webhook_id}", status, now, now, now),
                )
                run(
                    "INSERT INTO server_webhook_attempts (webhook_id, attempt, run_id, sent_at, "
                    "ended_at) VALUES (?, 1, ?, ?, ?)",
                    (webhook_id, f"run-{webhook_id}", now, now),
                )
        retention.orphan_deliveries()
        left = queue._all("SELECT webhook_id FROM server_webhooks")
        attempts = queue._all("SELECT webhook_id FROM server_webhook_attempts")
    finally:
        queue.close()
    assert left == [("due",)]
    assert attempts == [("due",)]


def test_settings_refuse_a_sweep_interval_or_retention_that_is_not_one() -> None:
    from agentgraph.server import ServerSettings

    with pytest.raises(ValueError, match="sweep_every"):
        ServerSettings(sweep_every=0)
    with pytest.raises(ValueError, match="run_retention"):
        ServerSettings(run_retention=-1)
    assert ServerSettings(run_retention=0).run_retention == 0


def test_the_orphan_look_goes_round_the_deliveries_a_stretch_at_a_time(tmp_path: Path) -> None:
    queue = RunQueue(str(tmp_path / "server.db"))
    try:
        retention = Retention(queue)
        now = time.time()
        with queue.transaction() as run:
            for n in range(5):
                run(
                    "INSERT INTO server_webhooks (webhook_id, run_id, url, body, status, next_at, "
                    "created_at, updated_at) VALUES (?, ?, 'https://x.test', '{}', 'delivered', "
                    "?, ?, ?)",
                    (f"w{n}", f"gone-{n}", now, now, now),
                )
        deleted = [retention.orphan_deliveries(batch=2) for _ in range(3)]
        assert deleted == [2, 2, 1]
        with queue.transaction() as run:  # deleted after the look went past it: next round
            run(
                "INSERT INTO server_webhooks (webhook_id, run_id, url, body, status, next_at, "
                "created_at, updated_at) VALUES ('w0', 'gone-0', 'https://x.test', '{}', "
                "'failed', ?, ?, ?)",
                (now, now, now),
            )
        assert retention.orphan_deliveries(batch=2) == 1
        assert queue._all("SELECT COUNT(*) FROM server_webhooks") == [(0,)]
    finally:
        queue.close()


async def test_a_stateless_runs_thread_leaves_the_checkpoint_store_too(tmp_path: Path) -> None:
    where = (str(tmp_path / "server.db"), "agentgraph")
    async with client_on(tmp_path, where) as client:
        kept = await client.runs.create(None, "echo", input=said("hi"), on_completion="keep")
        run = await client.runs.create(None, "echo", input=said("hi"))
        for each in (kept, run):
            await client.runs.join(each["thread_id"], each["run_id"])

        async def store_forgot() -> bool:
            return not await in_store(where, run["thread_id"])

        await until(store_forgot)
        assert (await client.runs.get(run["thread_id"], run["run_id"]))["status"] == "success"
        assert await in_store(where, kept["thread_id"])
