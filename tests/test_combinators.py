import anyio
import pytest

from agentgraph import (
    AgentContext,
    GraphBuilder,
    GraphRunner,
    NodeFailed,
    map_each,
    node,
    parallel,
)
from tests.helpers import adder

pytestmark = pytest.mark.anyio


def sleepy(name, delay, log):
    @node(name=name)
    async def work(ctx: AgentContext[int]) -> AgentContext[int]:
        log.append(("start", name))
        await anyio.sleep(delay)
        log.append(("end", name))
        return ctx.with_input(ctx.input * 10 + int(name[-1]))

    return work


def single(name, combinator):
    with GraphBuilder[int, list[int]](name) as g:
        g.start.edge_to(combinator).edge_to(g.finish)
    return g.build()


def as_list(ctx, outs):
    return ctx.with_input([o.input for o in outs])


async def test_parallel_runs_concurrently_and_merges_in_branch_order():
    log = []
    both = parallel(sleepy("b1", 0.05, log), sleepy("b2", 0.0, log), merge=as_list)
    steps = []
    runner = GraphRunner(on_step=lambda s, n, c: steps.append((s.index, s.local_index, s.path)))
    out = await runner.run(single("p", both), AgentContext(1))
    assert out.input == [11, 12]
    assert log.index(("end", "b2")) < log.index(("end", "b1"))  # b2 finished first
    assert steps[-1] == (1, 1, ("p", "parallel(b1, b2)"))
    # Run-wide indices follow the order the scheduler starts the branches in
    # (trio randomizes it); the local index is the branch's position.
    assert sorted(s[0] for s in steps[:2]) == [2, 3]
    assert sorted(s[1:] for s in steps[:2]) == [
        (1, ("p", "parallel(b1, b2)", "b1")),
        (2, ("p", "parallel(b1, b2)", "b2")),
    ]


async def test_parallel_limit_bounds_concurrency():
    running, peak = 0, 0

    def counted(name):
        @node(name=name)
        async def work(ctx: AgentContext[int]) -> AgentContext[int]:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await anyio.sleep(0.01)
            running -= 1
            return ctx

        return work

    both = parallel(*(counted(f"w{i}") for i in range(6)), merge=as_list, limit=2)
    await GraphRunner().run(single("p", both), AgentContext(0))
    assert peak == 2


async def test_a_failing_branch_cancels_its_siblings():
    log = []

    @node
    async def boom(ctx: AgentContext[int]) -> AgentContext[int]:
        await anyio.sleep(0.01)
        raise ValueError("boom")

    both = parallel(sleepy("s1", 10, log), boom, merge=as_list)
    with anyio.fail_after(5), pytest.raises(NodeFailed) as info:
        await GraphRunner().run(single("p", both), AgentContext(0))
    assert info.value.path == ("p", "parallel(s1, boom)", "boom")
    assert isinstance(info.value.__cause__, ValueError)
    assert log == [("start", "s1")]  # s1 never finished


async def test_several_failures_stay_a_group():
    def failing(name):
        @node(name=name)
        async def fail(ctx: AgentContext[int]) -> AgentContext[int]:
            raise ValueError(name)

        return fail

    both = parallel(failing("f1"), failing("f2"), merge=as_list)
    with pytest.raises(NodeFailed) as info:
        await GraphRunner().run(single("p", both), AgentContext(0))
    group = info.value.__cause__
    assert isinstance(group, ExceptionGroup) and len(group.exceptions) == 2
    assert info.value.path == ("p", "parallel(f1, f2)")


async def test_map_each_keeps_item_order_and_limit():
    log = []
    each = map_each(
        adder("inc", 1),
        items=lambda ctx: range(ctx.input),
        limit=3,
    )
    out = await GraphRunner().run(single("m", each), AgentContext(5))
    assert out.input == [1, 2, 3, 4, 5]
    total = map_each(
        sleepy("x1", 0.0, log),
        items=lambda ctx: [3, 1, 2],
        merge=lambda ctx, outs: ctx.with_input([sum(o.input for o in outs)]),
        name="total",
    )
    assert (await GraphRunner().run(single("m", total), AgentContext(0))).input == [31 + 11 + 21]


async def test_combinators_nest_inside_subgraphs_and_count_steps():
    with GraphBuilder[int, int]("inner") as g:
        g.start.edge_to(adder("a")).edge_to(g.finish)
    inner = g.build()
    fan = parallel(inner, adder("b"), merge=as_list)
    out = await GraphRunner(max_steps=4).run(single("outer", fan), AgentContext(0))
    assert out.input == [1, 1]


def test_parallel_needs_a_branch():
    with pytest.raises(ValueError, match="at least one branch"):
        parallel(merge=as_list)


async def test_each_branch_sees_its_own_step_number():
    seen = {}

    def reporter(name):
        @node(name=name)
        async def report(ctx: AgentContext[int], rt) -> AgentContext[int]:
            await anyio.sleep(0.01 if name == "slow" else 0)
            seen[name] = rt.step  # read after a sibling may have started
            return ctx

        return report

    steps = {}
    fan = parallel(reporter("slow"), reporter("fast"), merge=as_list)
    runner = GraphRunner(on_step=lambda s, n, c: steps.setdefault(n.name, s.index))
    await runner.run(single("p", fan), AgentContext(0))
    assert seen == {"slow": steps["slow"], "fast": steps["fast"]}
