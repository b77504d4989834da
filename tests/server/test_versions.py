"""Graph versions on the agent server: v1-only and v2-only workers on one PostgreSQL."""

from __future__ import annotations

import contextlib
import io
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from langgraph_sdk import get_client

from agentgraph import (
    AgentContext,
    Graph,
    GraphBuilder,
    GraphRunner,
    GraphVersions,
    Runtime,
    node,
)
from agentgraph._cli import main as cli
from agentgraph.llm import Message
from agentgraph.server import ServerSettings, Worker, server_app
from agentgraph.server._queue import QueuedRun, RunQueue
from agentgraph.web import WebServer
from tests.pg_server import drop_schema, fresh_schema

from .support import GRAPHS, said, serving

pytestmark = [pytest.mark.timeout(300)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def pg(postgres_server: Any) -> Iterator[tuple[str, str]]:
    schema = fresh_schema()
    yield postgres_server.dsn, schema
    drop_schema(postgres_server.dsn, schema)


def expenses(version: int) -> Graph[str, str]:
    """v1 asks in `review`, v2 in `approve`, both after `prepare`; each answers with its
    version."""

    @node
    async def prepare(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx.with_input(ctx.input.strip())

    async def asking(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
        answer = await rt.interrupt({"question": f"approve {ctx.input}?"})
        told = f"v{version}: {answer}"
        return ctx.append(Message.user(ctx.input), Message.assistant(told)).with_input(told)

    step = node(asking, name="review" if version == 1 else "approve")
    with GraphBuilder[str, str]("expenses", version=version) as g:
        g.start.edge_to(prepare).edge_to(step).edge_to(g.finish)
    return g.build()


@contextlib.contextmanager
def api(dsn: str, schema: str, graph: Graph[str, str]) -> Iterator[str]:
    """An API server (no workers of its own) serving `graph` as `expenses`, runs pinned."""
    settings = ServerSettings(workers=0, resume_policy="pinned")
    app = server_app({"expenses": graph}, dsn, settings=settings, schema=schema)
    with WebServer(app) as server:
        yield server.url.rstrip("/")


async def settled(client: Any, tid: str, run_id: str) -> dict[str, Any]:
    with anyio.fail_after(60):  # a run no worker claims would wait for ever
        await client.runs.join(tid, run_id)
    found: dict[str, Any] = await client.runs.get(tid, run_id)
    return found


async def started(client: Any, text: str) -> str:
    tid: str = (await client.threads.create())["thread_id"]
    run = await client.runs.create(tid, "expenses", input=said(text))
    await settled(client, tid, run["run_id"])
    return tid


def told(state: dict[str, Any]) -> str:
    content: str = state["values"]["messages"][-1]["content"]
    return content


@pytest.mark.anyio
async def test_v1_and_v2_workers_claim_only_the_runs_of_their_version(
    tmp_path: Path, pg: tuple[str, str]
):
    dsn, schema = pg
    v1, v2 = expenses(1), expenses(2)
    RunQueue(dsn, schema=schema).close()  # the tables first: workers starting at once race
    one = Worker(dsn, {"expenses": v1}, schema=schema, grace=1, name="v1-only")
    two = Worker(dsn, {"expenses": v2}, schema=schema, grace=1, name="v2-only")
    one.start()
    two.start()
    try:
        with api(dsn, schema, v1) as old_url, api(dsn, schema, v2) as new_url:
            async with get_client(url=old_url) as old, get_client(url=new_url) as new:
                # Runs started by the v1 API are on v1, those of the v2 API on v2.
                on_v1 = [await started(old, f"taxi {n}") for n in range(3)]
                on_v2 = [await started(new, f"hotel {n}") for n in range(3)]
                waiting = await started(old, "train")
                stale = await started(old, "bus")
                # Every resume goes through the v2 API: each is claimed by the worker
                # that holds the version its run is on.
                for tid in on_v1 + on_v2:
                    run = await new.runs.create(tid, "expenses", command={"resume": "yes"})
                    done = await settled(new, tid, run["run_id"])
                    assert done["status"] == "success"
                    assert done["graph_version"] == (1 if tid in on_v1 else 2)
                answers = [told(await new.threads.get_state(tid)) for tid in on_v1 + on_v2]
                assert answers == ["v1: yes"] * 3 + ["v2: yes"] * 3

                # With no worker holding v1, a resume of a v1 run stays pending, and says why.
                one.stop()
                run = await new.runs.create(waiting, "expenses", command={"resume": "ok"})
                await anyio.sleep(1.5)  # the v2 worker looked at the queue more than once
                pending = await new.runs.get(waiting, run["run_id"])
                assert pending["status"] == "pending"
                assert pending["graph_version"] == 1
                assert pending["waiting_for"] == (
                    "a worker that can resume version 1 of graph 'expenses' "
                    "under the 'pinned' policy"
                )
                again = Worker(dsn, {"expenses": v1}, schema=schema, grace=1)
                again.start()
                try:
                    done = await settled(new, waiting, run["run_id"])
                finally:
                    again.stop()
                assert done["status"] == "success" and "waiting_for" not in done
                assert told(await new.threads.get_state(waiting)) == "v1: ok"

                # An assistant config asking "latest" lets the v2 worker take a v1 run;
                # it cannot resume it (its node is gone) and ends it naming the change.
                tid = stale
                run = await new.runs.create(
                    tid,
                    "expenses",
                    command={"resume": "yes"},
                    config={"configurable": {"resume_policy": "latest"}},
                )
                done = await settled(new, tid, run["run_id"])
                assert done["status"] == "error" and done["resume_policy"] == "latest"
                joined = await new.runs.join(tid, run["run_id"])
                assert "removed ['review'], added ['approve']" in joined["__error__"]["message"]
    finally:
        one.stop()
        two.stop()
    assert one.error is None and two.error is None


@pytest.mark.anyio
async def test_a_resume_policy_the_server_does_not_know_is_refused(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            with pytest.raises(httpx.HTTPStatusError) as info:
                await client.runs.create(
                    tid,
                    "echo",
                    input=said("x"),
                    config={"configurable": {"resume_policy": "newest"}},
                )
    assert info.value.response.status_code == 422
    assert "resume_policy is one of pinned, latest, refuse, not 'newest'" in (
        info.value.response.text
    )


def test_a_queue_written_before_versions_gains_their_columns(tmp_path: Path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE server_runs (run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, "
            "assistant_id TEXT NOT NULL, graph_id TEXT NOT NULL, status TEXT NOT NULL, "
            "kwargs TEXT NOT NULL, metadata TEXT NOT NULL DEFAULT '{}', "
            "multitask_strategy TEXT NOT NULL DEFAULT 'enqueue', graph_run TEXT, cancel TEXT, "
            "claimed_by TEXT, claimed_until REAL, attempt INTEGER NOT NULL DEFAULT 0, "
            "owner TEXT, webhook TEXT, start_at REAL NOT NULL, created_at REAL NOT NULL, "
            "updated_at REAL NOT NULL)"
        )
        db.execute(
            "INSERT INTO server_runs (run_id, thread_id, assistant_id, graph_id, status, kwargs, "
            "start_at, created_at, updated_at) VALUES ('r', 't', 'a', 'expenses', 'pending', '{}', "
            "0, 0, 0)"
        )
    db.close()
    queue = RunQueue(str(path))
    try:
        claims = Worker(str(path), {"expenses": expenses(2)}).claims
        [run] = queue.claim("w", 5, only=claims)  # a run from before versions: its graph's
    finally:
        queue.close()
    assert (run.run_id, run.graph_version, run.resume_policy) == ("r", None, None)


def test_the_worker_command_takes_the_versions_it_keeps(tmp_path: Path):
    err = io.StringIO()
    argv = ["worker", "tests.server.support:echo", "--store", str(tmp_path / "q.db")]
    code = cli(
        [*argv, "--versions", "tests.server.support:GRAPHS"], stdout=io.StringIO(), stderr=err
    )
    assert code != 0
    assert "tests.server.support:GRAPHS is not a GraphVersions" in err.getvalue()
    argv = ["server", "tests.server.support:echo", "--resume-policy", "newest"]
    assert cli(argv, stdout=io.StringIO(), stderr=err) != 0
    assert "invalid choice: 'newest'" in err.getvalue()


def test_a_worker_claims_the_versions_its_policy_can_resume(tmp_path: Path):
    @node
    async def step(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx

    def graph(version: int, **more: Any) -> Graph[str, str]:
        with GraphBuilder[str, str]("expenses", version=version, **more) as g:
            g.start.edge_to(step).edge_to(g.finish)
        return g.build()

    path = str(tmp_path / "q.db")
    queue = RunQueue(path)
    cases = [(v, p) for v in (1, 2, 3, 4) for p in ("pinned", "latest", "refuse")]
    for n, (version, policy) in enumerate(cases):
        run = QueuedRun(
            f"{policy}-{version}", f"t{n}", "a", "expenses", "pending", {}, {}, "enqueue",
            None, None, 0, 0.0, 0.0, version, policy,
        )  # fmt: skip
        queue.enqueue(run)
    # v3, whose migration reaches back to v2, and a registry that keeps v1.
    v3 = graph(3, migrations={3: lambda ctx: ctx})
    registry = GraphVersions(graph(1), v3)
    worker = Worker(path, {"expenses": v3}, runner=GraphRunner(versions=registry))
    try:
        claimed = sorted(run.run_id for run in queue.claim("w", 100, only=worker.claims))
    finally:
        queue.close()
    assert claimed == ["latest-2", "latest-3", "pinned-1", "pinned-3", "refuse-3"]


def test_a_worker_claims_no_run_of_a_graph_it_does_not_serve(tmp_path: Path):
    path = str(tmp_path / "q.db")
    queue = RunQueue(path)
    for graph_id, version in (("echo", None), ("other", None), ("other", 1), ("expenses", 2)):
        run = QueuedRun(
            f"{graph_id}-{version}", f"t-{graph_id}-{version}", "a", graph_id, "pending", {},
            {}, "enqueue", None, None, 0, 0.0, 0.0, version, None,
        )  # fmt: skip
        queue.enqueue(run)
    worker = Worker(path, {"echo": GRAPHS["echo"], "expenses": expenses(2)})
    try:
        claimed = sorted(run.run_id for run in queue.claim("w", 100, only=worker.claims))
    finally:
        queue.close()
    assert claimed == ["echo-None", "expenses-2"]
