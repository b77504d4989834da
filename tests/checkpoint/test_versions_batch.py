"""`check_runs` and `migrate_runs` (and `agentgraph runs`): thread turns, one run at a time,
`--versions` for a migration, and replaying a migrated run."""

import io
from collections import Counter

import anyio
import pytest

from agentgraph import AgentContext, GraphRunner, Interrupted
from agentgraph._cli import main as cli
from agentgraph.checkpoint import MemoryStore, SQLiteStore, check_runs, migrate_runs
from tests.checkpoint import versions_graph

pytestmark = pytest.mark.anyio


class CountingStore(MemoryStore):
    """Counts the runs loaded, by id."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: Counter[str] = Counter()

    async def load(self, run_id):
        self.loads[run_id] += 1
        return await super().load(run_id)


async def waiting(store, graph, ids, **more):
    for n, run_id in enumerate(ids):
        with pytest.raises(Interrupted):
            await GraphRunner().run(graph, AgentContext(n), store=store, run_id=run_id, **more)


async def test_a_thread_turn_waiting_on_a_question_is_checked_and_migrated():
    store = MemoryStore()
    v1, v2 = versions_graph.v1(), versions_graph.v2()
    await waiting(store, v1, ["plain"])
    await waiting(store, v1, ["turn"], thread_id="t")
    stranded = await check_runs(v2, store)
    assert sorted(s.run_id for s in stranded) == ["plain", "turn"]
    versions_graph.MIGRATIONS.clear()
    v2m = versions_graph.v2_migrating()
    assert await check_runs(v2m, store) == []
    assert sorted(await migrate_runs(v2m, store)) == ["plain", "turn"]
    done = await GraphRunner().resume(v2m, "turn", store, answer="yes")
    assert done.input == "v2 yes ann0"
    assert versions_graph.MIGRATIONS == Counter({"0": 2})  # once per run: plain and turn


async def test_check_and_migrate_read_each_run_once():
    store = CountingStore()
    ids = [f"r{n}" for n in range(5)]
    await waiting(store, versions_graph.v1(), ids)
    store.loads.clear()
    assert len(await check_runs(versions_graph.v2(), store)) == 5
    assert store.loads == Counter({run_id: 1 for run_id in ids})


async def test_migrate_under_versions_moves_only_the_runs_its_policy_moves(tmp_path):
    db = str(tmp_path / "runs.db")
    async with SQLiteStore(db) as store:
        await waiting(store, versions_graph.v1(), ["a", "b"])
    target = "tests.checkpoint.versions_graph:v2_migrating"

    def migrate(*more: str) -> tuple[int, list[str]]:
        out = io.StringIO()
        argv = ["runs", "migrate", target, "--store", db, *more]
        return cli(argv, stdout=out, stderr=io.StringIO()), sorted(out.getvalue().split())

    versions_graph.MIGRATIONS.clear()
    # A registry that keeps v1 resumes its runs there: nothing to migrate.
    assert await anyio.to_thread.run_sync(
        migrate, "--versions", "tests.checkpoint.versions_graph:KEEPING_V1"
    ) == (0, [])
    assert await anyio.to_thread.run_sync(
        migrate, "--versions", "tests.checkpoint.versions_graph:V2_ONLY"
    ) == (0, ["a", "b"])
    assert versions_graph.MIGRATIONS == Counter({"0": 1, "1": 1})
