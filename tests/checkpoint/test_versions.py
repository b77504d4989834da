"""Graph versions: fingerprints, patches, pinned and latest resumes, context migrations."""

from collections import Counter

import attrs
import orjson
import pytest

from agentgraph import (
    AgentContext,
    CheckpointError,
    GraphBuilder,
    GraphDefinitionError,
    GraphRunner,
    GraphVersions,
    Interrupted,
    MigrationFailed,
    ReplayDiverged,
    ResumeError,
    UsageError,
    VersionMissing,
    node,
)
from agentgraph.checkpoint import MemoryStore, fork
from agentgraph.checkpoint._resume import structure

pytestmark = pytest.mark.anyio


def flow(version, *, rename=False, migrations=None, patches=(), seen=None):
    """v1: prepare -> review (asks) -> finish; v2 may call review `approve`."""
    seen = seen if seen is not None else Counter()

    @node
    async def prepare(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx.evolve(state={**ctx.state, "owner": "ann"})

    async def asking(ctx: AgentContext[int], rt) -> AgentContext[str]:
        answer = await rt.interrupt("ok?")
        seen[f"v{version}"] += 1
        owner = ctx.state.get("owners", [ctx.state.get("owner")])
        patched = [p for p in sorted(patches) if rt.patched(p)]
        return ctx.with_input(f"v{version} {answer} {owner} {patched}")

    review = node(asking, name="approve" if rename else "review")
    with GraphBuilder[int, str](
        "flow",
        version=version,
        patches=patches,
        migrations=migrations,
        renamed={"review": "approve"} if rename else None,
    ) as g:
        g.start.edge_to(prepare).edge_to(review).edge_to(g.finish)
    return g.build()


def owners(ctx):
    return ctx.evolve(state={"owners": [ctx.state["owner"]]})


async def started_waiting(store, graph, n=3):
    ids = []
    for i in range(n):
        with pytest.raises(Interrupted):
            await GraphRunner().run(graph, AgentContext(i), store=store, run_id=f"r{i}")
        ids.append(f"r{i}")
    return ids


def test_a_graph_has_a_version_and_a_fingerprint_of_its_structure_and_types():
    one, same, renamed = flow(1), flow(2), flow(2, rename=True)
    assert one.version == 1 and flow(1).fingerprint == one.fingerprint
    assert same.fingerprint == one.fingerprint  # the fingerprint does not see the version
    assert renamed.fingerprint != one.fingerprint

    @node
    async def typed(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx

    @node
    async def untyped(ctx: AgentContext[int]) -> AgentContext[str]:
        return ctx

    def build(step):
        with GraphBuilder("t") as g:
            g.start.edge_to(step.with_name("x")).edge_to(g.finish)
        return g.build()

    assert build(typed).fingerprint != build(untyped).fingerprint


def test_migrations_need_a_version_and_are_keyed_by_later_versions():
    with pytest.raises(GraphDefinitionError, match="need a version"):
        GraphBuilder("g", migrations={2: owners})
    with pytest.raises(GraphDefinitionError, match="from 2 up to"):
        GraphBuilder("g", version=2, migrations={3: owners})
    with pytest.raises(UsageError, match="no version"):
        GraphVersions(flow(1), flow(None))
    with pytest.raises(UsageError, match="given twice"):
        GraphVersions(flow(1), flow(1))


async def test_the_run_record_keeps_version_fingerprint_and_patches():
    store = MemoryStore()
    graph = flow(3, patches={"p"})
    await started_waiting(store, graph, 1)
    data = orjson.loads((await store.load("r0")).run.structure)
    assert data["version"] == 3
    assert data["fingerprint"] == graph.fingerprint
    assert data["patches"] == ["p"]


async def test_a_record_without_a_version_still_resumes():
    store = MemoryStore()
    graph = flow(None)
    await started_waiting(store, graph, 1)
    # A record in the format written before versions: structure without them.
    run = store._runs["r0"]
    store._runs["r0"] = attrs.evolve(run, structure=orjson.dumps(structure(graph)))
    done = await GraphRunner().resume(flow(2), "r0", store, answer="yes")
    assert done.input == "v2 yes ['ann'] []"


async def test_patched_is_what_the_run_started_with():
    store = MemoryStore()
    await started_waiting(store, flow(1, patches={"old"}), 1)
    await started_waiting(MemoryStore(), flow(1), 1)
    new = flow(1, patches={"old", "new"})
    done = await GraphRunner().resume(new, "r0", store, answer="y")
    assert done.input.endswith("['old']")  # the run started before "new" was declared
    fresh = MemoryStore()
    await started_waiting(fresh, new, 1)
    done = await GraphRunner().resume(new, "r0", fresh, answer="y")
    assert done.input.endswith("['new', 'old']")
    replayed = await GraphRunner().replay(new, "r0", store)
    assert replayed.input.endswith("['old']")  # a replay agrees with the run


async def test_patched_refuses_a_name_the_graph_does_not_declare():
    @node
    async def asks(ctx, rt):
        rt.patched("nope")
        return ctx

    with GraphBuilder("g", patches={"yes"}) as g:
        g.start.edge_to(asks).edge_to(g.finish)
    with pytest.raises(Exception) as info:
        await GraphRunner().run(g.build(), AgentContext(1))
    assert isinstance(info.value.__cause__, UsageError)
    assert "declares no such patch" in str(info.value.__cause__)


async def test_pinned_resumes_on_the_version_the_run_started_with():
    store = MemoryStore()
    ids = await started_waiting(store, flow(1))
    v1, v2 = flow(1), flow(2, rename=True, migrations={2: owners})
    runner = GraphRunner(versions=GraphVersions(v1, v2, policy="pinned"))
    for rid in ids:
        done = await runner.resume(v2, rid, store, answer="yes")
        assert done.input == "v1 yes ['ann'] []"
    await started_waiting(store := MemoryStore(), v1, 1)
    with pytest.raises(VersionMissing, match="started on version 1") as info:
        await GraphRunner(versions=GraphVersions(v2)).resume(v2, "r0", store, answer="y")
    assert info.value.version == 1 and info.value.run_id == "r0"


async def test_latest_names_the_change_and_refuse_refuses():
    store = MemoryStore()
    await started_waiting(store, flow(1), 1)
    v2 = flow(2, rename=True)
    plain = flow(2)
    renamed_without_map = attrs.evolve(v2, renamed={})
    with pytest.raises(ResumeError, match=r"removed \['review'\], added \['approve'\]"):
        await GraphRunner().resume(renamed_without_map, "r0", store, answer="y")
    with pytest.raises(ResumeError, match="policy 'refuse'"):
        await GraphRunner(versions=GraphVersions(plain, policy="refuse")).resume(
            plain, "r0", store, answer="y"
        )
    # Nothing was written: the run still resumes on the version it started with.
    done = await GraphRunner(versions=GraphVersions(flow(1))).resume(plain, "r0", store, answer="y")
    assert done.input.startswith("v1")


async def test_a_migration_runs_once_per_run_and_is_recorded():
    store = MemoryStore()
    ids = await started_waiting(store, flow(1))
    calls = Counter()

    def counted(ctx):
        calls[ctx.input] += 1
        return owners(ctx)

    v2 = flow(2, rename=True, migrations={2: counted})
    for rid in ids:
        # The first resume is refused after migrating (a wrong answer type is not
        # the point here: resume without an answer, so the question is asked again).
        with pytest.raises(Interrupted):
            await GraphRunner().resume(v2, rid, store)
        done = await GraphRunner().resume(v2, rid, store, answer="yes")
        assert done.input == "v2 yes ['ann'] []"
    assert calls == Counter({0: 1, 1: 1, 2: 1})
    kinds = [e.kind for e in (await store.load("r0")).effects]
    assert kinds.count("migrated") == 1


async def test_a_failing_migration_leaves_the_run_untouched():
    store = MemoryStore()
    await started_waiting(store, flow(1), 1)
    before = await store.load("r0")

    def broken(ctx):
        raise KeyError("owner")

    with pytest.raises(MigrationFailed, match="migration to version 2 failed") as info:
        await GraphRunner().resume(flow(2, migrations={2: broken}), "r0", store, answer="y")
    assert info.value.run_id == "r0" and info.value.version == 2
    assert isinstance(info.value.__cause__, KeyError)
    assert await store.load("r0") == before
    with pytest.raises(MigrationFailed, match="not an AgentContext"):
        await GraphRunner().resume(flow(2, migrations={2: lambda c: None}), "r0", store)
    done = await GraphRunner().resume(flow(2, migrations={2: owners}), "r0", store, answer="y")
    assert done.input == "v2 y ['ann'] []"


async def test_a_missing_migration_is_named():
    store = MemoryStore()
    await started_waiting(store, flow(1), 1)
    v3 = flow(3, migrations={3: owners})
    with pytest.raises(ResumeError, match="no migration to version 2"):
        await GraphRunner().resume(v3, "r0", store, answer="y")


async def test_a_fork_onto_a_newer_version_is_explicit_and_recorded():
    store = MemoryStore()
    await started_waiting(store, flow(1, patches={"p"}), 1)
    v2 = flow(2, patches={"p", "q"})
    copy = await store.fork("r0", 1, graph=v2)
    data = orjson.loads((await store.load(copy)).run.structure)
    assert data["version"] == 2 and data["forked_from_version"] == 1
    assert data["fingerprint"] == v2.fingerprint
    runner = GraphRunner(versions=GraphVersions(flow(1, patches={"p"}), v2))
    # The copy continues on v2 and sees v2's patches; the original stays on v1.
    with pytest.raises(Interrupted):
        await runner.resume(v2, copy, store)
    done = await runner.resume(v2, copy, store, answer="y")
    assert done.input == "v2 y ['ann'] ['p', 'q']"
    done = await runner.resume(v2, "r0", store, answer="y")
    assert done.input == "v1 y ['ann'] ['p']"
    with pytest.raises(CheckpointError, match="cannot be forked onto 'other'"):
        await store.fork("r0", 1, graph=attrs.evolve(v2, name="other"))


async def test_a_run_that_stopped_before_its_first_step_is_migrated_too():
    @node
    async def asks(ctx: AgentContext[int], rt) -> AgentContext[int]:
        await rt.interrupt("go?")
        return ctx.with_input(ctx.state.get("doubled", -1))

    def build(version, **more):
        with GraphBuilder[int, int]("first", version=version, **more) as g:
            g.start.edge_to(asks).edge_to(g.finish)
        return g.build()

    store = MemoryStore()
    with pytest.raises(Interrupted):
        await GraphRunner().run(build(1), AgentContext(21), store=store, run_id="f")
    v2 = build(2, migrations={2: lambda c: c.evolve(state={"doubled": c.input * 2})})
    done = await GraphRunner().resume(v2, "f", store, answer="y")
    assert done.input == 42


def changed_prepare(version, owner):
    """`flow` whose `prepare` sets another owner: its first step differs from the record."""

    @node
    async def prepare(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx.evolve(state={**ctx.state, "owner": owner})

    @node
    async def review(ctx: AgentContext[int], rt) -> AgentContext[str]:
        return ctx.with_input(str(await rt.interrupt("ok?")))

    with GraphBuilder[int, str]("flow", version=version) as g:
        g.start.edge_to(prepare).edge_to(review).edge_to(g.finish)
    return g.build()


async def test_a_fork_onto_a_version_that_runs_the_prefix_otherwise_is_refused_unwritten():
    store = MemoryStore()
    await started_waiting(store, flow(1), 1)
    before = {run_id: await store.load(run_id) for run_id in store.run_ids}
    with pytest.raises(ReplayDiverged) as info:
        await fork(store, "r0", 1, graph=changed_prepare(2, "bob"), new_id="copy")
    assert info.value.step == 1 and info.value.path == ("flow", "prepare")
    assert '-    "owner": "ann"' in info.value.diff and '+    "owner": "bob"' in info.value.diff
    assert await store.load("copy") is None
    assert {run_id: await store.load(run_id) for run_id in store.run_ids} == before
    # The same prefix on a version that runs it alike is forked.
    copy = await fork(store, "r0", 1, graph=changed_prepare(2, "ann"), new_id="copy")
    assert orjson.loads((await store.load(copy)).run.structure)["version"] == 2


async def test_a_fork_onto_a_version_that_renamed_a_node_carries_the_new_names():
    @node
    async def first(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx.with_input(ctx.input + 1)

    @node
    async def asks(ctx: AgentContext[int], rt) -> AgentContext[int]:
        return ctx.with_input(ctx.input * int(await rt.interrupt("times?")))

    def build(version, name, **more):
        with GraphBuilder[int, int]("calc", version=version, **more) as g:
            g.start.edge_to(first.with_name(name)).edge_to(asks).edge_to(g.finish)
        return g.build()

    store = MemoryStore()
    with pytest.raises(Interrupted):
        await GraphRunner().run(build(1, "add"), AgentContext(1), store=store, run_id="c")
    v3 = build(3, "plus_one", renamed={"add": "increment", "increment": "plus_one"})
    copy = await store.fork("c", 1, graph=v3)
    assert [r.node for r in (await store.load(copy)).steps] == ["plus_one"]
    with pytest.raises(Interrupted):  # the copy asks again: answers come after the cut
        await GraphRunner().resume(v3, copy, store)
    done = await GraphRunner().resume(v3, copy, store, answer="5")
    assert done.input == 10


async def test_renames_chain_across_versions_and_a_circle_is_refused():
    @node
    async def first(ctx: AgentContext[int], rt) -> AgentContext[int]:
        return ctx.with_input(ctx.input * int(await rt.interrupt("times?")))

    def build(version, name, **more):
        with GraphBuilder[int, int]("chain", version=version, **more) as g:
            g.start.edge_to(first.with_name(name)).edge_to(g.finish)
        return g.build()

    store = MemoryStore()
    with pytest.raises(Interrupted):
        await GraphRunner().run(build(1, "review"), AgentContext(2), store=store, run_id="v1")
    with pytest.raises(Interrupted):
        await GraphRunner().run(
            build(2, "approve", renamed={"review": "approve"}),
            AgentContext(3),
            store=store,
            run_id="v2",
        )
    v3 = build(3, "check", renamed={"review": "approve", "approve": "check"})
    assert (await GraphRunner().resume(v3, "v1", store, answer="5")).input == 10
    assert (await GraphRunner().resume(v3, "v2", store, answer="5")).input == 15
    with pytest.raises(GraphDefinitionError, match=r"circle \(a -> b -> a\)"):
        GraphBuilder("loop", version=2, renamed={"a": "b", "b": "a"})
