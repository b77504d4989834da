"""Crons: schedules across daylight-saving changes, the catch-up rule, one claim per tick,
and the SDK's cron client on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import attrs
import httpx
import pytest
from langgraph_sdk import get_client

from agentgraph.server import Worker
from agentgraph.server._api import Api, Refused
from agentgraph.server._crons import TICKS_KEPT, CronStore, StoredCron
from agentgraph.server._queue import RunQueue
from agentgraph.server._schedule import check_schedule, next_tick
from agentgraph.server._scheduler import STALL, Scheduler, queue_tick
from tests.pg_server import drop_schema, fresh_schema

from .support import GRAPHS, said, serving

pytestmark = pytest.mark.timeout(120)

NEW_YORK = ZoneInfo("America/New_York")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def at(*fields: int, fold: int = 0) -> float:
    """A wall-clock time in New York as a Unix time."""
    return datetime.datetime(*fields, tzinfo=NEW_YORK, fold=fold).timestamp()  # type: ignore[misc]


def ticks(schedule: str, after: float, count: int) -> list[str]:
    """The next `count` ticks of `schedule` in New York after `after`, as wall-clock times."""
    found = []
    for _ in range(count):
        tick = next_tick(schedule, "America/New_York", after)
        assert tick is not None
        found.append(datetime.datetime.fromtimestamp(tick, NEW_YORK).isoformat())
        after = tick
    return found


# -- schedules -------------------------------------------------------------------------------
def test_a_time_skipped_in_spring_fires_at_the_first_instant_after_the_gap():
    # 2026-03-08: clocks go from 02:00 EST to 03:00 EDT, so 02:30 does not exist.
    assert ticks("30 2 * * *", at(2026, 3, 7, 12, 0), 3) == [
        "2026-03-08T03:00:00-04:00",
        "2026-03-09T02:30:00-04:00",
        "2026-03-10T02:30:00-04:00",
    ]


def test_a_time_repeated_in_autumn_fires_once():
    # 2026-11-01: clocks go from 02:00 EDT back to 01:00 EST, so 01:30 happens twice.
    assert ticks("30 1 * * *", at(2026, 10, 31, 12, 0), 3) == [
        "2026-11-01T01:30:00-04:00",
        "2026-11-02T01:30:00-05:00",
        "2026-11-03T01:30:00-05:00",
    ]


def test_an_interval_schedule_goes_by_elapsed_time_across_the_changes():
    assert ticks("*/30 * * * *", at(2026, 11, 1, 0, 50), 4) == [
        "2026-11-01T01:00:00-04:00",
        "2026-11-01T01:30:00-04:00",
        "2026-11-01T01:00:00-05:00",
        "2026-11-01T01:30:00-05:00",
    ]
    assert ticks("0 * * * *", at(2026, 3, 8, 0, 30), 3) == [
        "2026-03-08T01:00:00-05:00",
        "2026-03-08T03:00:00-04:00",
        "2026-03-08T04:00:00-04:00",
    ]


def test_a_six_field_schedule_counts_seconds_first():
    start = at(2026, 6, 1, 9, 0)
    assert ticks("*/20 * * * * *", start, 3) == [
        "2026-06-01T09:00:20-04:00",
        "2026-06-01T09:00:40-04:00",
        "2026-06-01T09:01:00-04:00",
    ]


@pytest.mark.parametrize(
    ("schedule", "timezone", "named"),
    [
        ("* * *", None, "schedule '* * *'"),
        ("61 * * * *", None, "schedule '61 * * * *'"),
        ("* * * * *", "Mars/Olympus", "timezone 'Mars/Olympus'"),
    ],
)
def test_a_bad_schedule_or_timezone_is_a_422_naming_it(
    schedule: str, timezone: str | None, named: str
):
    with pytest.raises(Refused) as refused:
        check_schedule(schedule, timezone)
    assert refused.value.status == 422
    assert named in refused.value.detail


# -- the store: catch-up, one claim per tick, a tick left by a stopped worker ---------------
def _cron(cron_id: str, assistant_id: str, next_run_at: float, **changes: Any) -> StoredCron:
    fields: dict[str, Any] = {
        "cron_id": cron_id,
        "assistant_id": assistant_id,
        "thread_id": None,
        "schedule": "* * * * *",
        "timezone": None,
        "end_time": None,
        "enabled": True,
        "on_run_completed": "keep",
        "payload": {"input": said("tick")},
        "metadata": {},
        "next_run_at": next_run_at,
        "created_at": next_run_at - 60,
        "updated_at": next_run_at - 60,
    }
    return StoredCron(**{**fields, **changes})


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[RunQueue, CronStore]]:
    queue = RunQueue(str(tmp_path / "server.db"))
    Api(queue, GRAPHS)  # stores the default assistants
    crons = CronStore(str(tmp_path / "server.db"))
    yield queue, crons
    crons.close()
    queue.close()


def test_ticks_missed_while_no_worker_ran_fire_once_then_the_schedule_goes_on(
    stores: tuple[RunQueue, CronStore],
):
    queue, crons = stores
    assistant = queue.assistants(graph_id="echo")[0].assistant_id
    due = 1_800_000_000.0  # a whole minute
    crons.put(_cron("00000000-0000-4000-8000-000000000001", assistant, due))
    now = due + 3600 + 0.5  # every worker was down for an hour: 61 ticks missed
    clock: Callable[[], float] = lambda: now  # noqa: E731
    scheduler = Scheduler(queue.where, name="w1", clock=clock)
    assert scheduler.fire(crons, queue) == 1
    assert scheduler.fire(crons, queue) == 0
    fired = crons.ticks("00000000-0000-4000-8000-000000000001")
    assert [(t.tick_at, t.status) for t in fired] == [(due, "queued")]
    assert fired[0].cron.next_run_at == due + 3660  # the next minute after `now`
    run = queue.run(fired[0].run_id)
    assert run is not None and run.metadata["cron_id"] == fired[0].cron.cron_id


def test_two_schedulers_claim_a_tick_once(stores: tuple[RunQueue, CronStore]):
    queue, crons = stores
    assistant = queue.assistants(graph_id="echo")[0].assistant_id
    due = 1_800_000_000.0
    crons.put(_cron("00000000-0000-4000-8000-000000000002", assistant, due))
    other = CronStore(queue.where)
    try:
        first = crons.claim_ticks("a", due + 0.1)
        second = other.claim_ticks("b", due + 0.1)
    finally:
        other.close()
    assert [t.tick_at for t in first] == [due]
    assert second == []


def test_a_tick_whose_worker_stopped_before_queuing_its_run_is_queued_once_by_another(
    stores: tuple[RunQueue, CronStore],
):
    queue, crons = stores
    assistant = queue.assistants(graph_id="echo")[0].assistant_id
    due = 1_800_000_000.0
    crons.put(_cron("00000000-0000-4000-8000-000000000003", assistant, due))
    (claimed,) = crons.claim_ticks("gone", due)  # and its worker stopped there
    assert crons.stalled("b", due + 1, older_than=STALL) == []
    (taken,) = crons.stalled("b", due + STALL + 1, older_than=STALL)
    assert crons.stalled("c", due + STALL + 1, older_than=STALL) == []
    assert taken.run_id == claimed.run_id
    assert queue_tick(queue, taken, due + STALL + 1) == "queued"
    assert queue_tick(queue, claimed, due + STALL + 2) == "queued"  # the first, late
    assert [r.run_id for r in queue.runs(taken.thread_id, limit=10, offset=0)] == [taken.run_id]


def test_a_tick_whose_run_could_not_be_queued_is_retried_later(
    stores: tuple[RunQueue, CronStore], monkeypatch: pytest.MonkeyPatch
):
    queue, crons = stores
    assistant = queue.assistants(graph_id="echo")[0].assistant_id
    due = 1_800_000_000.0
    cron_id = "00000000-0000-4000-8000-000000000005"
    crons.put(_cron(cron_id, assistant, due, schedule="0 0 1 1 *"))
    now = due

    def locked(run: Any, *, delay: float = 0.0) -> None:
        raise sqlite3.OperationalError("database is locked")

    scheduler = Scheduler(queue.where, name="w1", clock=lambda: now)
    with monkeypatch.context() as patched:
        patched.setattr(queue, "enqueue", locked)
        assert scheduler.fire(crons, queue) == 0  # and the worker goes on
    assert [t.status for t in crons.ticks(cron_id)] == ["claimed"]
    now = due + STALL + 1
    assert scheduler.fire(crons, queue, stalled=True) == 1
    (tick,) = crons.ticks(cron_id)
    assert tick.status == "queued"
    assert queue.run(tick.run_id) is not None


def test_a_day_of_ticks_is_kept(stores: tuple[RunQueue, CronStore]):
    queue, crons = stores
    assistant = queue.assistants(graph_id="echo")[0].assistant_id
    due = 1_800_000_000.0
    cron_id = "00000000-0000-4000-8000-000000000006"
    crons.put(_cron(cron_id, assistant, due, schedule="0 * * * *"))
    scheduler = Scheduler(queue.where, name="w1", clock=lambda: due)
    assert scheduler.fire(crons, queue) == 1
    later = due + TICKS_KEPT + 3600
    crons.replace(attrs.evolve(crons.get(cron_id), next_run_at=later))  # type: ignore[arg-type]
    assert Scheduler(queue.where, name="w1", clock=lambda: later).fire(crons, queue) == 1
    assert [t.tick_at for t in crons.ticks(cron_id)] == [later]


def test_a_cron_past_its_end_time_fires_no_more(stores: tuple[RunQueue, CronStore]):
    queue, crons = stores
    assistant = queue.assistants(graph_id="echo")[0].assistant_id
    due = 1_800_000_000.0
    cron_id = "00000000-0000-4000-8000-000000000004"
    crons.put(_cron(cron_id, assistant, due, end_time=due + 90))
    assert [t.tick_at for t in crons.claim_ticks("a", due)] == [due]
    assert crons.get(cron_id).next_run_at == due + 60  # type: ignore[union-attr]
    assert [t.tick_at for t in crons.claim_ticks("a", due + 60)] == [due + 60]
    assert crons.get(cron_id).next_run_at is None  # type: ignore[union-attr]
    assert crons.claim_ticks("a", due + 120) == []


# -- through the SDK --------------------------------------------------------------------------
async def _until(check: Callable[[], Any], *, timeout: float = 30.0) -> Any:
    """Poll the awaitable `check()` until it is true; its last value."""
    deadline = time.monotonic() + timeout
    while True:
        found = await check()
        if found or time.monotonic() > deadline:
            return found
        await anyio.sleep(0.1)


@pytest.mark.anyio
async def test_crons_are_created_searched_counted_updated_and_deleted(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            end = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
            on_thread = await client.crons.create_for_thread(
                tid,
                "echo",
                schedule="0 9 * * 1-5",
                input=said("morning"),
                metadata={"team": "a"},
                timezone="America/New_York",
                end_time=end,
            )
            assert on_thread["thread_id"] == tid
            assert on_thread["schedule"] == "0 9 * * 1-5"
            assert on_thread["timezone"] == "America/New_York"
            assert on_thread["enabled"] is True
            assert on_thread["metadata"] == {"team": "a"}
            assert on_thread["payload"]["input"] == said("morning")
            assert on_thread["end_time"] == end.isoformat()
            next_run = datetime.datetime.fromisoformat(on_thread["next_run_date"])
            local = next_run.astimezone(NEW_YORK)
            assert (local.hour, local.minute, local.weekday() < 5) == (9, 0, True)
            stateless = await client.crons.create("echo", schedule="*/5 * * * *")
            assert stateless["thread_id"] is None
            assert stateless["on_run_completed"] == "delete"
            assert stateless["timezone"] is None
            assert {c["cron_id"] for c in await client.crons.search()} == {
                on_thread["cron_id"],
                stateless["cron_id"],
            }
            assert await client.crons.count() == 2
            assert await client.crons.count(thread_id=tid) == 1
            assert await client.crons.count(metadata={"team": "a"}) == 1
            assert await client.crons.count(assistant_id="echo") == 2
            found = await client.crons.search(
                sort_by="created_at", sort_order="asc", select=["cron_id", "schedule"], limit=1
            )
            assert found == [{"cron_id": on_thread["cron_id"], "schedule": "0 9 * * 1-5"}]
            changed = await client.crons.update(
                on_thread["cron_id"], schedule="30 17 * * *", enabled=False, end_time=None
            )
            assert (changed["schedule"], changed["enabled"], changed["end_time"]) == (
                "30 17 * * *",
                False,
                None,
            )
            assert changed["next_run_date"] is None
            assert await client.crons.search(enabled=False) == [changed]
            again = await client.crons.update(on_thread["cron_id"], enabled=True)
            local = datetime.datetime.fromisoformat(again["next_run_date"]).astimezone(NEW_YORK)
            assert (local.hour, local.minute) == (17, 30)
            await client.crons.delete(stateless["cron_id"])
            assert await client.crons.count() == 1
            with pytest.raises(httpx.HTTPStatusError) as missing:
                await client.crons.delete(stateless["cron_id"])
            assert missing.value.response.status_code == 404


@pytest.mark.anyio
async def test_a_bad_cron_is_refused_with_a_422_naming_what_is_wrong(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            refusals = [
                ({"schedule": "every day"}, "schedule 'every day'"),
                ({"schedule": "* * * * *", "timezone": "Mars/Olympus"}, "timezone"),
                ({"schedule": "* * * * *", "multitask_strategy": "twice"}, "multitask_strategy"),
                ({"schedule": "* * * * *", "stream_mode": "tools"}, "stream mode 'tools'"),
                ({"schedule": "* * * * *", "stream_mode": 3}, "stream_mode"),
            ]
            for arguments, named in refusals:
                with pytest.raises(httpx.HTTPStatusError) as refused:
                    await client.crons.create_for_thread(tid, "echo", **arguments)
                assert refused.value.response.status_code == 422
                assert named in refused.value.response.json()["detail"]
            with pytest.raises(httpx.HTTPStatusError) as refused:
                await client.crons.create("echo", schedule="* * * * *", on_run_completed="drop")  # type: ignore[arg-type]
            assert refused.value.response.status_code == 422
            cron = await client.crons.create("echo", schedule="* * * * *")
            with pytest.raises(httpx.HTTPStatusError) as refused:
                await client.crons.update(cron["cron_id"], timezone="Nowhere/At_All")
            assert refused.value.response.status_code == 422
            assert await client.crons.count() == 1


@pytest.mark.anyio
async def test_a_cron_goes_with_its_thread(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            with pytest.raises(httpx.HTTPStatusError) as missing:
                await client.crons.create_for_thread(
                    "00000000-0000-4000-8000-00000000dead", "echo", schedule="* * * * *"
                )
            assert missing.value.response.status_code == 404
            cron = await client.crons.create_for_thread(tid, "echo", schedule="* * * * * *")
            assert await client.crons.count() == 1
            await client.threads.delete(tid)

            async def gone() -> bool:
                return await client.crons.count() == 0

            assert await _until(gone)
            with pytest.raises(httpx.HTTPStatusError) as missing:
                await client.crons.update(cron["cron_id"], enabled=False)
            assert missing.value.response.status_code == 404


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """Where the server keeps its data: SQLite (the default), or a PostgreSQL schema."""
    if request.param == "sqlite":
        yield {}
        return
    server = request.getfixturevalue("postgres_server")
    schema = fresh_schema()
    yield {"where": server.dsn, "schema": schema}
    drop_schema(server.dsn, schema)


@pytest.mark.anyio
async def test_a_cron_every_second_runs_on_its_thread_until_disabled(
    tmp_path: Path, store: dict[str, Any]
):
    with serving(tmp_path, **store) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            cron = await client.crons.create_for_thread(
                tid, "echo", schedule="* * * * * *", input=said("tick"), metadata={"n": 1}
            )

            async def finished() -> list[dict[str, Any]]:
                runs = await client.runs.list(tid, limit=100)
                done = [r for r in runs if r["status"] == "success"]
                return done if len(done) >= 3 else []

            runs = await _until(finished)
            assert len(runs) >= 3
            assert {r["metadata"]["cron_id"] for r in runs} == {cron["cron_id"]}
            assert {r["metadata"]["n"] for r in runs} == {1}
            state = await client.threads.get_state(tid)
            assert state["values"]["messages"][-1]["content"] == "echo: tick"
            off = await client.crons.update(cron["cron_id"], enabled=False)
            assert off["next_run_date"] is None
            await anyio.sleep(1.0)  # a tick claimed just before the update queues its run
            before = len(await client.runs.list(tid, limit=100))
            await anyio.sleep(2.5)
            assert len(await client.runs.list(tid, limit=100)) == before


@pytest.mark.anyio
@pytest.mark.parametrize("on_run_completed", ["delete", "keep"])
async def test_a_stateless_cron_runs_each_tick_on_a_new_thread_deleted_after_by_default(
    tmp_path: Path, store: dict[str, Any], on_run_completed: str
):
    with serving(tmp_path, **store) as url:
        end = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=2.5)
        async with get_client(url=url) as client:
            arguments: dict[str, Any] = {"end_time": end, "input": said("alone")}
            if on_run_completed == "keep":
                arguments["on_run_completed"] = "keep"
            cron = await client.crons.create("echo", schedule="* * * * * *", **arguments)

            async def ended() -> bool:
                found = await client.crons.search()
                return found[0]["next_run_date"] is None

            assert await _until(ended)
            crons = CronStore(
                store.get("where") or str(tmp_path / "server.db"),
                schema=store.get("schema", "agentgraph"),
            )
            queue = RunQueue(
                store.get("where") or str(tmp_path / "server.db"),
                schema=store.get("schema", "agentgraph"),
            )
            try:
                fired = crons.ticks(cron["cron_id"])
                assert 1 <= len(fired) <= 3  # the end time ends it
                assert all(t.tick_at <= end.timestamp() for t in fired)
                assert len({t.thread_id for t in fired}) == len(fired)

                async def all_ended() -> bool:
                    runs = [queue.run(t.run_id) for t in fired]
                    return all(r is not None and r.status == "success" for r in runs)

                assert await _until(all_ended)

                async def settled() -> bool:  # the thread goes once its run has ended
                    kept = [queue.thread(t.thread_id) is not None for t in fired]
                    return all(kept) if on_run_completed == "keep" else not any(kept)

                assert await _until(settled)
                if on_run_completed == "keep":
                    kept = queue.thread(fired[0].thread_id)
                    assert kept is not None
                    assert kept.state["messages"][-1]["content"] == "echo: alone"
            finally:
                crons.close()
                queue.close()


@pytest.mark.anyio
async def test_two_workers_on_one_postgresql_claim_each_tick_once(
    tmp_path: Path, postgres_server: Any
):
    schema = fresh_schema()
    dsn = postgres_server.dsn
    workers = [Worker(dsn, GRAPHS, schema=schema, grace=1) for _ in range(2)]
    try:
        with serving(tmp_path, where=dsn, schema=schema, workers=0) as url:
            for worker in workers:
                worker.start()
            try:
                async with get_client(url=url) as client:
                    tid = (await client.threads.create())["thread_id"]
                    cron = await client.crons.create_for_thread(
                        tid, "echo", schedule="* * * * * *", input=said("tick")
                    )
                    crons = CronStore(dsn, schema=schema)
                    try:

                        async def six() -> bool:
                            return len(crons.ticks(cron["cron_id"])) >= 6

                        assert await _until(six)
                        await client.crons.update(cron["cron_id"], enabled=False)
                        fired = crons.ticks(cron["cron_id"])
                    finally:
                        crons.close()

                    async def done() -> list[dict[str, Any]]:
                        runs = await client.runs.list(tid, limit=100)
                        ended = all(r["status"] == "success" for r in runs)
                        return runs if ended and len(runs) >= len(fired) else []

                    runs = await _until(done)
                    # A tick claimed as the cron was disabled is queued by now: read them again.
                    crons = CronStore(dsn, schema=schema)
                    try:
                        fired = crons.ticks(cron["cron_id"])
                    finally:
                        crons.close()
            finally:
                for worker in workers:
                    worker.stop()
    finally:
        drop_schema(dsn, schema)
    instants = [t.tick_at for t in fired]
    assert instants == sorted(set(instants))  # each tick once
    assert all(tick == int(tick) for tick in instants)  # on the second, as scheduled
    # one run per tick: the thread's runs are exactly the ticks' runs
    assert sorted(r["run_id"] for r in runs) == sorted(t.run_id for t in fired)
    assert {t.status for t in fired} == {"queued"}
