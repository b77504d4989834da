"""Runs outlive a deploy: started on v1, the process SIGKILLed, resumed under v2.

Kept in SQLite and in PostgreSQL (`places`). v2 renames the node the runs wait
in and changes a state field. Under "pinned" every run finishes on v1; under
"latest" each is refused naming the change, `runs check` lists exactly those,
and with a migration each finishes on v2, the migration run once per run.
"""

import io
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from agentgraph import GraphRunner, GraphVersions, ResumeError, RunBusy
from agentgraph._cli import main as cli
from agentgraph.checkpoint import check_runs, migrate_runs, resume_problem
from tests.checkpoint import versions_graph
from tests.checkpoint.places import Place

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
RUNS = 100


async def command(argv, out, err):
    """The command line, in a thread (it runs an event loop of its own)."""
    return await anyio.to_thread.run_sync(lambda: cli(argv, stdout=out, stderr=err))


async def start_and_kill(place: Place, prefix: str, runs: int, version: int = 1) -> None:
    """A worker process starts `runs` runs that wait on a question, then is SIGKILLed."""
    command = [
        *[sys.executable, "-m", "tests.checkpoint.versions_graph"],
        *[place.db, prefix, str(runs), "--version", str(version)],
        *(["--schema", place.schema] if place.schema else []),
    ]
    async with await anyio.open_process(command, cwd=ROOT, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        seen = b""
        async for chunk in process.stdout:
            seen += chunk
            if b"waiting" in seen:
                break
        process.send_signal(signal.SIGKILL)
        errors = b"".join([chunk async for chunk in process.stderr])
        assert await process.wait() == -signal.SIGKILL, errors.decode()


async def test_runs_started_on_v1_survive_a_deploy_of_v2(places, capsys):
    place = places("deploy")
    await start_and_kill(place, "p", RUNS)
    await start_and_kill(place, "l", RUNS)
    v1, v2, v2m = versions_graph.v1(), versions_graph.v2(), versions_graph.v2(migrate=True)
    pinned = GraphRunner(versions=GraphVersions(v1, v2, policy="pinned"))
    async with place.store() as store:
        for i in range(RUNS):
            done = await pinned.resume(v2, f"p{i}", store, answer="yes")
            assert done.input == f"v1 yes ann{i}"
        # Under "latest", v2 without a migration: each run is refused, naming the change.
        for i in range(RUNS):
            with pytest.raises(ResumeError, match=r"removed \['review'\], added \['approve'\]"):
                await GraphRunner().resume(v2, f"l{i}", store, answer="yes")
        stranded = await check_runs(v2, store)
        assert sorted(s.run_id for s in stranded) == sorted(f"l{i}" for i in range(RUNS))
        assert all(s.version == 1 and "'review'" in s.reason for s in stranded)
    out, err = io.StringIO(), io.StringIO()
    where = ["--store", place.db, *(["--schema", place.schema] if place.schema else [])]
    target = "tests.checkpoint.versions_graph:v2"
    assert await command(["runs", "check", target, *where], out, err) == 1
    listed = sorted(line.split("\t")[0] for line in out.getvalue().splitlines())
    assert listed == sorted(f"l{i}" for i in range(RUNS))
    v1_target = "tests.checkpoint.versions_graph:v1"
    assert await command(["runs", "check", v1_target, *where], io.StringIO(), err) == 0
    versions_graph.MIGRATIONS.clear()
    async with place.store() as store:
        assert await check_runs(v2m, store) == []
        for i in range(RUNS):
            done = await GraphRunner().resume(v2m, f"l{i}", store, answer="yes")
            assert done.input == f"v2 yes ann{i}"
    assert {str(i): 1 for i in range(RUNS)} == versions_graph.MIGRATIONS
    capsys.readouterr()


async def test_runs_migrate_migrates_once_and_resumes_go_on(places):
    place = places("batch")
    await start_and_kill(place, "m", 5)
    where = ["--store", place.db, *(["--schema", place.schema] if place.schema else [])]
    versions_graph.MIGRATIONS.clear()
    out = io.StringIO()
    target = "tests.checkpoint.versions_graph:v2_migrating"
    assert await command(["runs", "migrate", target, *where], out, io.StringIO()) == 0
    assert sorted(out.getvalue().split()) == [f"m{i}" for i in range(5)]
    v2m = versions_graph.v2(migrate=True)
    async with place.store() as store:
        assert await migrate_runs(v2m, store) == []  # migrated runs are on v2 now
        for i in range(5):
            done = await GraphRunner().resume(v2m, f"m{i}", store, answer="ok")
            assert done.input == f"v2 ok ann{i}"
    assert {str(i): 1 for i in range(5)} == versions_graph.MIGRATIONS


async def test_mixed_workers_each_resume_only_the_runs_of_their_version(postgres_server, schema):
    place = Place(postgres_server.dsn, schema)
    await start_and_kill(place, "a", 10, version=1)
    await start_and_kill(place, "b", 10, version=2)
    v1, v2 = versions_graph.v1(), versions_graph.v2(migrate=True)
    finished: dict[str, list[str]] = {"v1": [], "v2": []}

    async def worker(name, graph):
        versions = GraphVersions(graph, policy="pinned")
        runner = GraphRunner(versions=versions)
        async with place.store() as store:
            for run_id in [f"a{i}" for i in range(10)] + [f"b{i}" for i in range(10)]:
                if await resume_problem(graph, run_id, store, versions=versions) is not None:
                    continue  # a run of a version this worker lacks: leave it to another
                try:
                    await runner.resume(graph, run_id, store, answer="go")
                except RunBusy:
                    continue
                finished[name].append(run_id)

    async with anyio.create_task_group() as group:
        group.start_soon(worker, "v1", v1)
        group.start_soon(worker, "v2", v2)
    assert sorted(finished["v1"]) == sorted(f"a{i}" for i in range(10))
    assert sorted(finished["v2"]) == sorted(f"b{i}" for i in range(10))
