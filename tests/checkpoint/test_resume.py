"""Resume: no committed step runs again, none is lost, and a changed graph is refused."""

from collections import Counter

import anyio
import pytest

from agentgraph import (
    AgentContext,
    GraphCancelled,
    GraphDefinitionError,
    GraphRunner,
    Message,
    NodeFinished,
    ResumeError,
    RetryPolicy,
    RunHandle,
    RunStarted,
    StepLimitExceeded,
    node,
    parallel,
)
from tests.checkpoint.support import Crash, Tally, chain

pytestmark = pytest.mark.anyio


async def crash_then_resume(store, tally, graph, crash_at):
    tally.crash_at = crash_at
    handle = RunHandle()
    with pytest.raises(Crash):
        await GraphRunner().run(graph, AgentContext(0), store=store, handle=handle)
    return handle


@pytest.mark.parametrize("crash_at", ["a1", "b1", "c2", "c3", "b2", "a2"])
async def test_a_crash_anywhere_resumes_without_repeating_or_losing_a_step(store, crash_at):
    expected = await GraphRunner().run(Tally().three_levels(), AgentContext(0))
    tally = Tally()
    graph = tally.three_levels()
    handle = await crash_then_resume(store, tally, graph, crash_at)
    committed = {r.step for r in (await store.load(handle.run_id)).steps}
    finished = []
    runner = GraphRunner(on_step=lambda info, node, ctx: finished.append(info.index))
    out = await runner.resume(graph, handle.run_id, store)
    assert out == expected
    # Every node ran exactly once in all, except the crashed one, which ran again.
    assert tally.runs[crash_at] == 2
    assert all(count == 1 for name, count in tally.runs.items() if name != crash_at)
    # No committed step finished again, and the indices went on to the same end.
    assert not committed & set(finished)
    assert sorted(committed | set(finished)) == list(range(1, 10))


async def test_resume_continues_inside_the_nested_subgraph(store):
    tally = Tally()
    graph = tally.three_levels()
    handle = await crash_then_resume(store, tally, graph, "c3")
    events = []
    runner = GraphRunner(
        on_step=lambda info, node, ctx: events.append(
            ("/".join(info.path), info.index, info.local_index)
        )
    )
    out = await runner.resume(graph, handle.run_id, store)
    # c3 runs as step 7 of c (local 3); then c, b2, b and a2 complete with their original indices.
    assert events == [
        ("a/b/c/c3", 7, 3),
        ("a/b/c", 4, 2),
        ("a/b/b2", 8, 3),
        ("a/b", 2, 2),
        ("a/a2", 9, 3),
    ]
    assert [m.content for m in out.history] == ["a1", "b1", "c1", "c2", "c3", "b2", "a2"]
    log = await store.load(handle.run_id)
    assert [r.seq for r in log.steps] == list(range(1, 10))  # the record goes on seamlessly


async def test_a_cancelled_run_resumes_after_its_last_committed_step(store):
    started = anyio.Event()
    naps = Counter()

    @node
    async def nap(ctx: AgentContext[int]) -> AgentContext[int]:
        naps["nap"] += 1
        if naps["nap"] == 1:
            started.set()
            await anyio.sleep(3600)
        return ctx.with_input(ctx.input * 10)

    tally = Tally()
    inner = chain("inner", tally.adder("i1"), nap, tally.adder("i2"))
    graph = chain("outer", tally.adder("o1"), inner, tally.adder("o2"))
    handle = RunHandle()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def go():
                with pytest.raises(GraphCancelled):
                    await GraphRunner().run(graph, AgentContext(0), store=store, handle=handle)

            tg.start_soon(go)
            await started.wait()
            handle.cancel()
    out = await GraphRunner().resume(graph, handle.run_id, store)
    assert out.input == 22 and naps["nap"] == 2  # ((0 + 1 + 1) * 10 + 1) + 1
    assert tally.runs == Counter({"o1": 1, "i1": 1, "i2": 1, "o2": 1})


async def test_resuming_a_finished_run_returns_its_result_and_runs_nothing(store):
    tally = Tally()
    graph = tally.three_levels()
    handle = RunHandle()
    out = await GraphRunner().run(graph, AgentContext(0), store=store, handle=handle)
    runs = Counter(tally.runs)
    again = RunHandle()
    assert await GraphRunner().resume(graph, handle.run_id, store, handle=again) == out
    assert tally.runs == runs and again.run_id == handle.run_id and again.step == 9


async def test_a_node_removed_since_the_checkpoint_is_named_in_a_resume_error(store):
    tally = Tally()
    handle = await crash_then_resume(store, tally, tally.three_levels(), "c2")
    # The same graph, but c2 is now called c2b.
    changed = Tally()
    c = chain("c", changed.adder("c1"), changed.adder("c2b"), changed.adder("c3"))
    b = chain("b", changed.adder("b1"), c, changed.adder("b2"))
    graph = chain("a", changed.adder("a1"), b, changed.adder("a2"))
    with pytest.raises(ResumeError) as info:
        await GraphRunner().resume(graph, handle.run_id, store)
    assert "node 'c2' is not in graph 'c' any more" in str(info.value)
    assert "c1, c2b, c3" in str(info.value)
    assert "Changes since the run started: a/b/c: removed ['c2'], added ['c2b']" in str(info.value)
    assert info.value.step == 5 and info.value.context.input == 3
    assert changed.runs == Counter()  # nothing ran

    with pytest.raises(ResumeError, match="recorded with graph 'a', not 'z'"):
        await GraphRunner().resume(chain("z", changed.adder("z1")), handle.run_id, store)
    # A renamed subgraph on the path is caught the same way.
    b2 = chain("b", changed.adder("b1"), c.with_name("c-renamed"), changed.adder("b2"))
    with pytest.raises(ResumeError, match="node 'c' is not in graph 'b'"):
        await GraphRunner().resume(chain("a", changed.adder("a1"), b2), handle.run_id, store)


async def test_duplicate_names_in_a_level_are_refused_on_resume(store):
    tally = Tally()
    graph = chain("g", tally.adder("x"), tally.adder("y"), tally.adder("z"))
    tally.crash_at = "z"
    handle = RunHandle()
    with pytest.raises(Crash):
        await GraphRunner().run(graph, AgentContext(0), store=store, handle=handle)
    # Such a graph is refused when it is built, before a resume could be tried.
    with pytest.raises(GraphDefinitionError, match="two different nodes are named 'z'"):
        chain("g", tally.adder("x"), tally.adder("y"), tally.adder("z"), tally.adder("z"))


async def test_a_fan_out_is_one_step_for_checkpoints_and_reruns_from_its_input(store):
    tally = Tally()
    both = parallel(
        tally.adder("left", 1),
        chain("right", tally.adder("r1", 10), tally.adder("r2", 100)),
        merge=lambda ctx, outs: ctx.with_input(sum(o.input for o in outs)),
        name="both",
    )
    graph = chain("g", tally.adder("first"), both, tally.adder("last"))
    expected = await GraphRunner().run(
        chain("g", Tally().adder("first"), both, Tally().adder("last")), AgentContext(0)
    )
    tally.runs.clear()
    tally.crash_at = "r2"
    handle = RunHandle()
    with pytest.raises(Crash):
        await GraphRunner().run(graph, AgentContext(0), store=store, handle=handle)
    log = await store.load(handle.run_id)
    assert [(r.path, r.node) for r in log.steps] == [(("g",), "first")]  # nothing from inside
    out = await GraphRunner().resume(graph, handle.run_id, store)
    assert out.input == expected.input
    assert tally.runs == Counter({"first": 1, "left": 2, "r1": 2, "r2": 2, "last": 1})
    log = await store.load(handle.run_id)
    assert [r.node for r in log.steps] == ["first", "both", "last"]


async def test_the_step_cap_counts_the_steps_before_the_resume(store):
    tally = Tally()
    graph = tally.three_levels()
    handle = await crash_then_resume(store, tally, graph, "b2")
    with pytest.raises(StepLimitExceeded) as info:
        await GraphRunner(max_steps=8).resume(graph, handle.run_id, store)
    assert info.value.step == 8  # steps 1-7 ran before the crash; b2 is 8; a2 would be 9


async def test_retried_steps_commit_once_and_resume_like_any_other(store):
    attempts = Counter()

    @node
    async def flaky(ctx: AgentContext[int]) -> AgentContext[int]:
        attempts["flaky"] += 1
        if attempts["flaky"] < 3:
            raise ConnectionError("try again")
        return ctx.append(Message.user("ok")).with_input(ctx.input + 1)

    policy = RetryPolicy(attempts=3, initial=0, jitter=0, max_wait=0)
    tally = Tally()
    graph = chain("g", flaky.with_retry(policy), tally.adder("after"))
    tally.crash_at = "after"
    handle = RunHandle()
    with pytest.raises(Crash):
        await GraphRunner().run(graph, AgentContext(0), store=store, handle=handle)
    out = await GraphRunner().resume(graph, handle.run_id, store)
    assert out.input == 2 and attempts["flaky"] == 3
    assert [m.content for m in out.history] == ["ok", "after"]


async def test_a_stream_left_early_can_be_resumed_and_its_resume_reports_events(store):
    tally = Tally()
    graph = tally.three_levels()
    handle = RunHandle()
    async with GraphRunner().stream(graph, AgentContext(0), store=store, handle=handle) as s:
        async for event in s:
            if isinstance(event, NodeFinished) and event.node.name == "b":
                break  # leaving the block cancels the run
    assert handle.run_id is not None and tally.runs["a2"] == 0
    events = []
    out = await GraphRunner(sinks=[events.append]).resume(graph, handle.run_id, store)
    assert out.input == 7 and tally.runs["a2"] == 1 and tally.runs["b2"] == 1
    assert isinstance(events[0], RunStarted) and events[0].context.input == 6
    # When the reader left before the root level committed b, b completes again from its
    # committed inner steps, without running any of them (b2 ran once, above).
    finished = [e.step.path for e in events if isinstance(e, NodeFinished)]
    assert finished in ([("a", "a2")], [("a", "b"), ("a", "a2")])
