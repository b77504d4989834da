"""Flow control: priorities, limits per assistant and per caller key, deduplication keys; on
the queue itself (SQLite and PostgreSQL), through the SDK client, and with two worker
processes and two API processes on one PostgreSQL database."""

from __future__ import annotations

import contextlib
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import attrs
import httpx
import pytest
from langgraph_sdk import Priority, PriorityContext, PrioritySettings, get_client

from agentgraph.server import FlowLimits, Limit
from agentgraph.server._queue import QueuedRun, RunQueue
from tests.pg_server import drop_schema, fresh_schema

from .support import agentgraph, api_process, said, served_at, serving, working

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["sqlite", "postgresql"])
def queue(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunQueue]:
    if request.param == "sqlite":
        found = RunQueue(str(tmp_path / "queue.db"))
        yield found
        found.close()
        return
    dsn = request.getfixturevalue("postgres_server").dsn
    schema = fresh_schema()
    found = RunQueue(dsn, schema=schema)
    yield found
    found.close()
    drop_schema(dsn, schema)


def run_on(thread_id: str, assistant: str = "a", strategy: str = "enqueue") -> QueuedRun:
    now = time.time()
    return QueuedRun(
        str(uuid.uuid4()), thread_id, assistant, "echo", "pending", {}, {}, strategy,
        None, None, 0, now, now,
    )  # fmt: skip


def queued(queue: RunQueue, assistant: str = "a", **fields: Any) -> QueuedRun:
    """A run of `assistant` queued on a thread of its own."""
    thread_id = str(uuid.uuid4())
    queue.put_thread(thread_id, {}, replace=False)
    stored = queue.enqueue(attrs.evolve(run_on(thread_id, assistant), **fields))
    assert stored is not None
    return stored


def claimed(queue: RunQueue, count: int = 10, **limits: Any) -> list[str]:
    flow = FlowLimits(**limits) if limits else None
    return [r.run_id for r in queue.claim("w", count, limits=flow)]


# -- priorities ------------------------------------------------------------------------------


def test_claims_go_by_priority_first_then_by_age(queue: RunQueue):
    runs = {
        name: queued(queue, priority=priority)
        for name, priority in (("zero", 0), ("last", 5), ("first", -5), ("two", 2), ("none", None))
    }
    order = [claimed(queue, 1) for _ in runs]
    names = {run.run_id: name for name, run in runs.items()}
    assert [names[one] for (one,) in order] == ["first", "zero", "none", "two", "last"]


def test_a_run_without_a_priority_takes_its_threads(queue: RunQueue):
    plain = queued(queue)
    thread_id = str(uuid.uuid4())
    queue.put_thread(thread_id, {}, replace=False)
    queue.set_thread_priority(thread_id, -3, "team-a")
    queue.set_thread_priority(thread_id, 4, "team-b")  # the first settings are kept
    assert queue.thread_priority(thread_id) == (-3, "team-a")
    urgent = queue.enqueue(run_on(thread_id))
    assert urgent is not None
    assert queue.run(urgent.run_id).priority == -3  # type: ignore[union-attr]
    assert queue.run(plain.run_id).priority == 0  # type: ignore[union-attr]
    assert claimed(queue, 1) == [urgent.run_id]


# -- limits ----------------------------------------------------------------------------------


def test_a_claim_skips_the_runs_over_their_assistants_concurrency_and_takes_others(
    queue: RunQueue,
):
    a1, a2, b1 = queued(queue, "a"), queued(queue, "a"), queued(queue, "b")
    one = Limit(concurrency=1)
    assert claimed(queue, per_assistant=one) == [a1.run_id, b1.run_id]
    assert claimed(queue, per_assistant=one) == []  # a2 waits, pending
    assert queue.run(a2.run_id).status == "pending"  # type: ignore[union-attr]
    queue.finish(a1.run_id, a1.thread_id, "success", {})
    assert claimed(queue, per_assistant=one) == [a2.run_id]


def test_an_assistants_own_limit_is_found_by_its_id_or_its_graphs(queue: RunQueue):
    runs = [queued(queue, "a") for _ in range(3)]
    limits = {"per_assistant": Limit(concurrency=1), "assistants": {"echo": Limit(concurrency=2)}}
    assert claimed(queue, **limits) == [r.run_id for r in runs[:2]]
    assert FlowLimits(**limits).of_assistant("b", "other") == Limit(concurrency=1)
    by_id = FlowLimits(assistants={"a": Limit(rate=1), "echo": Limit(rate=2)})
    assert by_id.of_assistant("a", "echo") == Limit(rate=1)


def test_a_keys_rate_holds_across_claims_until_its_window_moves_on(queue: RunQueue):
    mine = [queued(queue, flow_key="k1") for _ in range(3)]
    theirs = queued(queue, flow_key="k2")
    rate = Limit(rate=2, per=600)
    assert claimed(queue, per_key=rate) == [mine[0].run_id, mine[1].run_id, theirs.run_id]
    for run in (*mine[:2], theirs):
        queue.finish(run.run_id, run.thread_id, "success", {})
    assert claimed(queue, per_key=rate) == []  # two of k1 started in the window already
    queue._tx(("UPDATE server_flow_starts SET at = at - 601", ()))  # the window moves on
    assert claimed(queue, per_key=rate) == [mine[2].run_id]


def test_a_run_claimed_again_after_its_worker_died_is_not_held_by_its_limit(queue: RunQueue):
    first, second = queued(queue), queued(queue)
    one = Limit(concurrency=1)
    assert queue.claim("gone", 10, term=0.0, limits=FlowLimits(per_assistant=one)) != []
    time.sleep(0.01)  # the claim lapses: its worker died
    # Taken again, it holds its assistant's one place: the next run still waits.
    assert claimed(queue, per_assistant=one) == [first.run_id]
    assert claimed(queue, per_assistant=one) == []
    assert queue.run(second.run_id).status == "pending"  # type: ignore[union-attr]
    rate = Limit(rate=1, per=600)
    queue.finish(first.run_id, first.thread_id, "success", {})
    assert queue.claim("gone", 10, term=0.0, limits=FlowLimits(per_assistant=rate)) != []
    time.sleep(0.01)
    # Taken again, it is no second start within the window.
    assert claimed(queue, per_assistant=rate) == [second.run_id]


def test_limits_refuse_what_is_not_a_count_or_a_window():
    for bad in (
        {"concurrency": 0},
        {"rate": -1},
        {"per": 0.0},
        {"concurrency": True},
        {"rate": 1.5},
    ):
        with pytest.raises(ValueError, match=next(iter(bad))):
            Limit(**bad)


# -- deduplication keys ----------------------------------------------------------------------


def test_a_run_with_a_key_in_flight_is_answered_instead_until_it_ends(queue: RunQueue):
    first = queued(queue, dedup_key="k")
    again = queued(queue, dedup_key="k")  # on another thread, even
    assert again.run_id == first.run_id
    other = queued(queue, dedup_key="other")
    assert other.run_id != first.run_id
    queue.claim("w", 10)
    assert queued(queue, dedup_key="k").run_id == first.run_id  # running: still in flight
    queue.finish(first.run_id, first.thread_id, "success", {})
    later = queued(queue, dedup_key="k")
    assert later.run_id != first.run_id
    assert queue._all("SELECT COUNT(*) FROM server_runs WHERE dedup_key = 'k'") == [(2,)]


def test_a_duplicate_strategy_cancels_nothing(queue: RunQueue):
    first = queued(queue, dedup_key="k")
    duplicate = attrs.evolve(run_on(first.thread_id, strategy="interrupt"), dedup_key="k")
    assert queue.enqueue(duplicate) == queue.run(first.run_id)
    assert queue.run(first.run_id).cancel is None  # type: ignore[union-attr]


# -- through the SDK client ------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_priority_out_of_range_is_a_422_and_one_in_range_is_kept(tmp_path: Path):
    with serving(tmp_path, workers=0) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            for bad in (-6, 6, 1.5, True, "high"):
                response = await client.http.client.post(
                    f"/threads/{tid}/runs", json={"assistant_id": "echo", "priority": bad}
                )
                assert response.status_code == 422, bad
                assert "priority is a whole number from -5 to 5" in response.json()["detail"]
            with pytest.raises(httpx.HTTPStatusError) as refused:
                await client.runs.create(tid, "echo", input=said("x"), params={"priority": "9"})
            assert refused.value.response.status_code == 422
            assert await client.runs.list(tid) == []
            run = await client.runs.create(tid, "echo", input=said("x"), params={"priority": -4})
    stored = RunQueue(str(tmp_path / "server.db"))
    try:
        assert stored.run(run["run_id"]).priority == -4  # type: ignore[union-attr]
    finally:
        stored.close()


@pytest.mark.anyio
async def test_an_idempotency_key_answers_the_run_in_flight_for_its_caller_only(tmp_path: Path):
    with serving(tmp_path, workers=0) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            key = {"Idempotency-Key": "order-42"}
            first = await client.runs.create(tid, "echo", input=said("x"), headers=key)
            again = await client.http.client.post(
                f"/threads/{tid}/runs",
                json={"assistant_id": "echo", "input": said("x")},
                headers=key,
            )
            assert again.json()["run_id"] == first["run_id"]
            assert again.headers["Idempotent-Replayed"] == "true"
            other = await client.threads.create()
            with pytest.raises(httpx.HTTPStatusError) as taken:
                await client.runs.create(other["thread_id"], "echo", input=said("x"), headers=key)
            assert taken.value.response.status_code == 409
            # Another caller (another API key) has keys of its own.
            theirs = await client.runs.create(
                tid, "echo", input=said("x"), headers={**key, "x-api-key": "someone else"}
            )
            assert theirs["run_id"] != first["run_id"]
            for bad in ("", "k" * 257):
                with pytest.raises(httpx.HTTPStatusError) as refused:
                    await client.runs.create(
                        tid, "echo", input=said("x"), headers={"Idempotency-Key": bad}
                    )
                assert refused.value.response.status_code == 422
            batch = await client.runs.create_batch(
                [
                    {"assistant_id": "echo", "input": said("b"), "idempotency_key": "b"},  # type: ignore[typeddict-unknown-key]
                    {"assistant_id": "echo", "input": said("b"), "idempotency_key": "b"},  # type: ignore[typeddict-unknown-key]
                ]
            )
            assert batch[0]["run_id"] == batch[1]["run_id"]
            assert len(await client.runs.list(tid)) == 2  # the first and the other caller's


def priority_of_org() -> Priority:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK's Priority is in beta and says so
        priority = Priority()

    @priority.assign
    async def assign(ctx: PriorityContext) -> PrioritySettings | None:
        if ctx.thread_metadata.get("plan") == "premium":
            return {"priority": -3, "fairness_group": str(ctx.thread_metadata["org"])}
        if ctx.thread_metadata.get("plan") == "broken":
            return {"priority": 9}
        return None

    return priority


@pytest.mark.anyio
async def test_a_priority_function_sets_a_threads_priority_at_its_first_run(tmp_path: Path):
    with serving(tmp_path, workers=0, priority=priority_of_org()) as url:
        async with get_client(url=url) as client:
            premium = await client.threads.create(metadata={"plan": "premium", "org": "o1"})
            free = await client.threads.create(metadata={"plan": "free"})
            broken = await client.threads.create(metadata={"plan": "broken"})
            first = await client.runs.create(premium["thread_id"], "echo", input=said("x"))
            own = await client.runs.create(
                premium["thread_id"], "echo", input=said("y"), params={"priority": 2}
            )
            plain = await client.runs.create(free["thread_id"], "echo", input=said("x"))
            with pytest.raises(httpx.HTTPStatusError) as failed:
                await client.runs.create(broken["thread_id"], "echo", input=said("x"))
            assert failed.value.response.status_code == 500
            assert "gave priority 9" in failed.value.response.json()["detail"]
    stored = RunQueue(str(tmp_path / "server.db"))
    try:
        assert stored.thread_priority(premium["thread_id"]) == (-3, "o1")
        assert stored.thread_priority(free["thread_id"]) == (0, "default")
        assert stored.thread_priority(broken["thread_id"]) is None
        priorities = [stored.run(r["run_id"]).priority for r in (first, own, plain)]  # type: ignore[union-attr]
        assert priorities == [-3, 2, 0]
    finally:
        stored.close()


# -- two worker processes and two API processes on PostgreSQL --------------------------------

_HELD = ("crash=tests.server.support:crash",)
_LIMITED = ("--grace", "1", "--assistant-concurrency", "1", "--key-rate", "100/60")


@contextlib.contextmanager
def limited_workers(dsn: str, schema: str, folder: Path) -> Iterator[None]:
    """Two `agentgraph worker` processes, each assistant's runs one at a time across both."""
    with contextlib.ExitStack() as processes:
        for _ in range(2):
            process = processes.enter_context(
                agentgraph(
                    "worker", *_HELD, *_LIMITED, "--store", dsn, "--schema", schema, folder=folder
                )
            )
            working(process)
        yield


@pytest.mark.anyio
async def test_two_workers_share_an_assistants_limit_and_start_runs_by_priority(
    tmp_path: Path, pg: tuple[str, str]
):
    dsn, schema = pg
    with serving(tmp_path, where=dsn, schema=schema, workers=0) as url:
        async with get_client(url=url) as client:
            threads = [(await client.threads.create())["thread_id"] for _ in range(5)]
            # The first holds the assistant's one place until `go`; the rest queue behind it.
            holder = await client.runs.create(threads[0], "crash", input=said("hold"))
            with limited_workers(dsn, schema, tmp_path):
                with anyio.fail_after(60):
                    while (await client.runs.get(threads[0], holder["run_id"]))[
                        "status"
                    ] != "running":
                        await anyio.sleep(0.05)
                queued = [
                    await client.runs.create(
                        tid, "crash", input=said(str(p)), params={"priority": p}
                    )
                    for tid, p in zip(threads[1:], (3, -2, 0, -5), strict=True)
                ]
                most = 0
                for _ in range(20):  # both workers look at the queue meanwhile
                    runs = [await client.runs.get(r["thread_id"], r["run_id"]) for r in queued]
                    most = max(most, sum(r["status"] == "running" for r in runs))
                    await anyio.sleep(0.05)
                assert most == 0
                (tmp_path / "go").touch()
                ended = 0
                with anyio.fail_after(60):
                    while ended < len(queued):  # one at a time as they drain, too
                        runs = [await client.runs.get(r["thread_id"], r["run_id"]) for r in queued]
                        most = max(most, sum(r["status"] == "running" for r in runs))
                        ended = sum(r["status"] not in ("pending", "running") for r in runs)
                        await anyio.sleep(0.01)
                assert most <= 1
                for run in [holder, *queued]:
                    await client.runs.join(run["thread_id"], run["run_id"])
    stored = RunQueue(dsn, schema=schema)
    try:
        started = {
            run["run_id"]: stored._all(
                "SELECT started_at FROM server_runs WHERE run_id = ?",
                (run["run_id"],),
            )[0]
            for run in [holder, *queued]
        }
        statuses = {stored.run(r).status for r in started}  # type: ignore[union-attr]
    finally:
        stored.close()
    assert statuses == {"success"}
    by_start = sorted(started, key=lambda run_id: started[run_id][0])
    priorities = {r["run_id"]: p for r, p in zip(queued, (3, -2, 0, -5), strict=True)}
    assert [priorities.get(r) for r in by_start] == [None, -5, -2, 0, 3]


@pytest.mark.anyio
async def test_one_key_sent_to_two_api_processes_at_once_creates_one_run(
    tmp_path: Path, pg: tuple[str, str]
):
    dsn, schema = pg
    with api_process(dsn, schema, tmp_path) as first, api_process(dsn, schema, tmp_path) as second:
        async with (
            get_client(url=served_at(first)) as a,
            get_client(url=served_at(second)) as b,
        ):
            for attempt in range(5):
                key = {"Idempotency-Key": f"k-{attempt}"}
                created: list[Any] = []

                async def create(n: int, key: dict[str, str], into: list[Any]) -> None:
                    into.append(
                        await (a, b)[n % 2].runs.create(None, "echo", input=said("x"), headers=key)
                    )

                async with anyio.create_task_group() as tasks:
                    for n in range(6):
                        tasks.start_soon(create, n, key, created)
                assert len({run["run_id"] for run in created}) == 1, attempt
    stored = RunQueue(dsn, schema=schema)
    try:
        assert stored._all("SELECT COUNT(*) FROM server_runs") == [(5,)]
        # The threads made for the duplicates of stateless runs are gone again.
        assert stored._all("SELECT COUNT(*) FROM server_threads") == [(5,)]
    finally:
        stored.close()
