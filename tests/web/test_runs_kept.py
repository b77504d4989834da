"""A long-lived server keeps the runs going on and the last few that ended, not every run."""

import anyio
import httpx
import pytest

from agentgraph import GraphRunner
from agentgraph.checkpoint import MemoryStore
from agentgraph.tracing import Redactor
from agentgraph.web import WebServer, dev_app
from agentgraph.web._runs import Runs
from tests.web.support import stateful, wait_for
from tests.web.test_runs_at_once import echoes, said

pytestmark = pytest.mark.anyio


async def started_runs(runs: Runs, count: int) -> list[str]:
    ids = []
    async with anyio.create_task_group() as tg:
        runs.tasks = tg
        for i in range(count):
            live = await runs.start(said(f"q{i}"), run_id=f"r{i}")
            await live.done.wait()
            ids.append(live.id)
            assert len(runs.live) <= 3
    return ids


async def test_ended_runs_past_the_last_few_leave_memory_and_are_read_from_the_store() -> None:
    runs = Runs(echoes, runner=GraphRunner(), store=MemoryStore(), redactor=Redactor(), keep=3)
    ids = await started_runs(runs, 40)
    assert sorted(runs.live) == ["r37", "r38", "r39"]
    found = await runs.trace("r0")
    assert found is not None
    trace, facts = found
    assert (facts["source"], facts["status"], trace.run) == ("store", "ok", "r0")
    listed = await runs.listing()
    assert sorted(r["id"] for r in listed) == sorted(ids)
    assert [r["source"] for r in listed].count("live") == 3
    # The id of a run that left memory is still taken: the store has it.
    with pytest.raises(Exception, match="is taken"):
        await runs.start(said("again"), run_id="r0")


async def test_without_a_store_an_ended_run_that_left_memory_is_unknown() -> None:
    runs = Runs(echoes, runner=GraphRunner(), store=None, redactor=Redactor(), keep=3)
    await started_runs(runs, 10)
    assert len(runs.live) == 3
    assert await runs.trace("r0") is None
    assert (await runs.trace("r9")) is not None


def test_the_page_reads_an_old_run_from_the_store(tmp_path) -> None:
    app = dev_app(stateful(), store=MemoryStore(), keep_runs=2)
    with WebServer(app) as server, httpx.Client(base_url=server.url) as client:
        ids = []
        for i in range(6):
            run_id = client.post("api/runs", json={"input": f"hi {i}"}).json()["id"]
            wait_for(client, run_id, "ok")
            ids.append(run_id)
        listed = client.get("api/runs").json()["runs"]
        old = client.get(f"api/runs/{ids[0]}")
        events = client.get(f"api/runs/{ids[0]}/events")
        recent = client.get(f"api/runs/{ids[-1]}/events?from=0")
    assert sorted(r["id"] for r in listed) == sorted(ids)
    assert sorted(r["id"] for r in listed if r["source"] == "live") == sorted(ids[-2:])
    assert old.status_code == 200
    view = old.json()
    assert (view["source"], view["status"]) == ("store", "ok")
    assert [s["path"][-1] for s in view["steps"]] == ["remember", "count"]
    assert events.status_code == 404
    assert f"read what it did at api/runs/{ids[0]}" in events.json()["error"]
    assert recent.status_code == 200 and "RUN_FINISHED" in recent.text


def test_keep_runs_is_a_count() -> None:
    from agentgraph import UsageError

    with pytest.raises(UsageError, match="keep_runs"):
        dev_app(stateful(), store=MemoryStore(), keep_runs=-1)
