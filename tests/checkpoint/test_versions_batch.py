"""`check_runs` and `migrate_runs` (and `agentgraph runs`): thread turns, one run at a time,
`--versions` for a migration, and replaying a migrated run."""

import io
from collections import Counter

import anyio
import attrs
import pytest

from agentgraph import (
    AgentContext,
    Failure,
    GraphBuilder,
    GraphRunner,
    Interrupted,
    ReplayDiverged,
    node,
)
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
    assert Counter({"0": 2}) == versions_graph.MIGRATIONS  # once per run: plain and turn


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
    assert Counter({"0": 1, "1": 1}) == versions_graph.MIGRATIONS


async def test_a_migrated_run_replays_from_its_migrated_record_without_migrating_again():
    store = MemoryStore()
    await waiting(store, versions_graph.v1(), ["m"])
    versions_graph.MIGRATIONS.clear()
    v2m = versions_graph.v2_migrating()
    done = await GraphRunner().resume(v2m, "m", store, answer="yes")
    assert done.input == "v2 yes ann0" and Counter({"0": 1}) == versions_graph.MIGRATIONS
    replayed = await GraphRunner().replay(v2m, "m", store)
    assert replayed == done
    assert Counter({"0": 1}) == versions_graph.MIGRATIONS


async def test_a_replay_of_a_migrated_run_still_compares_the_steps_after_the_migration():
    store = MemoryStore()
    await waiting(store, versions_graph.v1(), ["m"])
    await GraphRunner().resume(versions_graph.v2_migrating(), "m", store, answer="yes")
    log = await store.load("m")
    last = log.steps[-1]
    # The record now says the run answered otherwise after its migration.
    store._steps["m"][-1] = attrs.evolve(last, context=last.context.replace(b"yes", b"no!"))
    with pytest.raises(ReplayDiverged, match="approve"):
        await GraphRunner().replay(versions_graph.v2_migrating(), "m", store)


async def test_a_migrated_run_that_asks_again_keeps_its_migrated_context():
    @node
    async def approve(ctx: AgentContext[int], rt) -> AgentContext[int]:
        await rt.interrupt("approve?")
        return ctx.with_input(ctx.input + 1)

    @node
    async def confirm(ctx: AgentContext[int], rt) -> AgentContext[str]:
        answer = await rt.interrupt("sure?")
        return ctx.with_input(f"{answer} {ctx.state['owners']}")

    with GraphBuilder[int, str](
        "review-flow", version=2, migrations={2: versions_graph.to_owners}
    ) as g:
        g.start.edge_to(versions_graph.v2().nodes[0]).edge_to(approve)
        approve.edge_to(confirm).edge_to(g.finish)
    v2 = g.build()
    store = MemoryStore()
    await waiting(store, versions_graph.v1(), ["m"])
    v1_log = await store.load("m")
    assert [(r.node, r.next) for r in v1_log.steps] == [("prepare", "review")]
    v2 = attrs.evolve(v2, renamed={"review": "approve"})  # the run waits in `review`
    with pytest.raises(Interrupted, match="sure"):
        await GraphRunner().resume(v2, "m", store, answer="yes")
    # The step committed after the migration is a change to the migrated context: a
    # second resume decodes it so, and sees `owners`, not v1's `owner`.
    done = await GraphRunner().resume(v2, "m", store, answer="ok")
    assert done.input == "ok ['ann0']"


def nested(version, *, twice=False, **more):
    """`prepare` then the subgraph `inner` (`first`, then `ask` asks); v2's `inner` then
    fails in `boom`, and the error goes to `recover`, which reads `inner`'s input."""

    @node
    async def prepare(ctx: AgentContext[int]) -> AgentContext[int]:
        key, value = ("owner", "ann") if version == 1 else ("owners", ["ann"])
        return ctx.evolve(state={key: value})

    @node
    async def first(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx.with_input(ctx.input + 1)

    @node
    async def ask(ctx: AgentContext[int], rt) -> AgentContext[int]:
        await rt.interrupt("go?")
        return ctx

    @node
    async def again(ctx: AgentContext[int], rt) -> AgentContext[int]:
        await rt.interrupt("sure?")
        return ctx

    @node
    async def boom(ctx: AgentContext[int]) -> AgentContext[int]:
        raise ValueError("v2 fails here")

    @node
    async def recover(ctx: AgentContext[Failure]) -> AgentContext[str]:
        return ctx.with_input(f"recovered {ctx.state['owners']}")

    with GraphBuilder[int, int]("inner") as inner_g:
        last = inner_g.start.edge_to(first).edge_to(ask)
        last = last.edge_to(again) if twice else last
        (last.edge_to(boom) if version == 2 else last).edge_to(inner_g.finish)
    inner = inner_g.build()
    with GraphBuilder[int, str]("outer", version=version, **more) as g:
        g.start.edge_to(prepare).edge_to(inner)
        inner.edge_to(lambda ctx: g.finish, targets=(g.finish,))
        if version == 2:
            inner.on_error(recover).edge_to(g.finish)
    return g.build()


async def test_a_migration_upgrades_the_input_of_the_subgraph_the_run_waits_in():
    store = MemoryStore()
    with pytest.raises(Interrupted):
        await GraphRunner().run(nested(1), AgentContext(1), store=store, run_id="n")
    calls = Counter()

    def to_owners(ctx):
        calls[str(ctx.state)] += 1
        return ctx.evolve(state={"owners": [ctx.state["owner"]]})

    v2 = nested(2, migrations={2: to_owners})
    done = await GraphRunner().resume(v2, "n", store, answer="yes")
    # `inner`'s input was migrated with the context the run went on from: `recover` reads it.
    assert done.input == "recovered ['ann']"
    assert calls == Counter({"{'owner': 'ann'}": 2})  # the input and the context, once each
    kinds = [e.kind for e in (await store.load("n")).effects]
    assert kinds.count("migrated") == 1 and kinds.count("migrated-input") == 1


async def test_the_migrated_input_of_a_subgraph_is_read_again_by_a_later_resume():
    store = MemoryStore()
    with pytest.raises(Interrupted):
        await GraphRunner().run(nested(1), AgentContext(1), store=store, run_id="n")
    v2 = nested(2, twice=True, migrations={2: versions_graph.to_owners})
    with pytest.raises(Interrupted, match="sure"):
        await GraphRunner().resume(v2, "n", store, answer="yes")
    done = await GraphRunner().resume(v2, "n", store, answer="yes")
    assert done.input == "recovered ['ann']"
