"""Edge cases of the engine: fan-outs under caps, cancels and interrupts; timeouts; routing."""

import enum

import anyio
import attrs
import pytest

from agentgraph import (
    AgentContext,
    ContextDecodingError,
    ContextEncodingError,
    DeadEnd,
    GraphBuilder,
    GraphCancelled,
    GraphRunner,
    GraphTimeout,
    Interrupted,
    NodeFailed,
    ProviderTimeout,
    RetryPolicy,
    RunHandle,
    StepLimitExceeded,
    Types,
    map_each,
    node,
    parallel,
)
from agentgraph.checkpoint import MemoryStore
from tests.helpers import adder, chain

pytestmark = pytest.mark.anyio


@node
async def yielding_inc(ctx: AgentContext[int]) -> AgentContext[int]:
    await anyio.sleep(0)
    return ctx.with_input(ctx.input + 1)


async def test_step_cap_hit_by_several_branches_is_one_step_limit_error():
    graph = chain("g", map_each(yielding_inc, items=lambda ctx: range(5)))
    with pytest.raises(StepLimitExceeded) as info:
        await GraphRunner(max_steps=3).run(graph, AgentContext(0))
    assert info.value.step == 3


@node
async def fails_while_closing(ctx: AgentContext[int]) -> AgentContext[int]:
    try:
        await anyio.sleep(10)
    finally:
        raise RuntimeError("closing the connection failed")
    return ctx


@node
async def sleeps(ctx: AgentContext[int]) -> AgentContext[int]:
    await anyio.sleep(10)
    return ctx


def keep(ctx, outs):
    return ctx


async def test_a_cancelled_fan_out_whose_cleanup_fails_still_reads_as_cancelled():
    graph = chain("g", parallel(fails_while_closing, sleeps, merge=keep))
    with anyio.fail_after(5), pytest.raises(GraphTimeout) as timed_out:
        await GraphRunner(timeout=0.05).run(graph, AgentContext(0))
    assert timed_out.value.step == 0
    handle = RunHandle()

    async def cancel_soon():
        await anyio.sleep(0.05)
        handle.cancel()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_soon)
            with pytest.raises(GraphCancelled):
                await GraphRunner().run(graph, AgentContext(0), handle=handle)


async def test_a_timed_out_run_reports_its_own_path_not_a_branch():
    @node
    async def first(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx.with_input(41)

    @node
    async def quick(ctx: AgentContext[int]) -> AgentContext[str]:
        return ctx.with_input("branch-local value")

    graph = chain("g", first, parallel(quick, sleeps, merge=keep))
    with anyio.fail_after(5), pytest.raises(GraphTimeout) as info:
        await GraphRunner(timeout=0.1).run(graph, AgentContext(0))
    assert (info.value.context.input, info.value.step) == (41, 1)


async def test_a_nodes_own_timeout_error_is_not_mistaken_for_its_time_limit():
    calls = []

    @node
    async def ask(ctx: AgentContext[int]) -> AgentContext[int]:
        calls.append(1)
        error = ProviderTimeout("read timed out", provider="openai")
        error.attempts = 3  # its client already retried
        raise error

    runner = GraphRunner(retry=RetryPolicy(initial=0, jitter=0))
    with pytest.raises(NodeFailed) as info:
        await runner.run(chain("g", ask.with_timeout(30)), AgentContext(0))
    assert len(calls) == 1 and isinstance(info.value.__cause__, ProviderTimeout)


async def test_a_step_that_must_not_repeat_makes_its_subgraph_unsafe_to_retry():
    charged, flaky = [], [True]

    @node
    async def charge(ctx: AgentContext[int]) -> AgentContext[int]:
        charged.append(ctx.input)
        return ctx

    @node
    async def notify(ctx: AgentContext[int]) -> AgentContext[int]:
        if flaky and flaky.pop():
            raise ConnectionError("smtp down")
        return ctx

    checkout = chain("checkout", charge.unsafe_to_retry(), notify.with_retry(attempts=1))
    assert checkout.retry_safe is False
    top = chain("top", checkout.with_retry(RetryPolicy(initial=0, jitter=0)))
    with pytest.raises(NodeFailed):
        await GraphRunner().run(top, AgentContext(100))
    assert charged == [100]
    fan = parallel(charge.unsafe_to_retry(), notify, merge=keep)
    assert fan.retry_safe is False and map_each(charge, items=lambda c: []).retry_safe


async def test_routing_errors_name_the_step_that_was_routed():
    sub = chain("sub", adder("a"), adder("b"), adder("c"))
    with GraphBuilder[int, int]("top") as g:
        g.start.edge_to(sub)
        sub.edge_to(lambda ctx: None, targets=(g.finish,))
    with pytest.raises(DeadEnd) as info:
        await GraphRunner().run(g.build(), AgentContext(0))
    assert (info.value.path, info.value.step) == (("top", "sub"), 1)


async def test_branches_that_all_interrupt_end_the_run_with_one_question():
    @node
    async def review(ctx: AgentContext[str], rt) -> AgentContext[str]:
        return ctx.with_input(f"{ctx.input}={await rt.interrupt(f'approve {ctx.input}?')}")

    with GraphBuilder[int, list[str]]("g") as g:
        g.start.edge_to(map_each(review, items=lambda ctx: ["A", "B"])).edge_to(g.finish)
    for _ in range(5):
        with pytest.raises(Interrupted) as info:
            await GraphRunner().run(g.build(), AgentContext(0), store=MemoryStore())
        assert info.value.question == "approve A?"


class Color(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    LOW = 1


def test_json_keeps_str_and_int_enums_and_refuses_what_it_cannot_rebuild():
    data = AgentContext({"c": Color.RED, "l": Level.LOW}).to_json()
    back = AgentContext.from_json(data, types=Types.of(Color, Level))
    assert type(back.input["c"]) is Color and type(back.input["l"]) is Level
    with pytest.raises(ContextEncodingError, match="no JSON form"):
        AgentContext(float("nan")).to_json()
    with pytest.raises(ContextEncodingError, match="beyond 64 bits"):
        AgentContext(2**70).to_json()

    @attrs.frozen
    class Local:
        x: int

    with pytest.raises(ContextEncodingError, match="inside a function"):
        AgentContext(Local(1)).to_json()
    with pytest.raises(ContextDecodingError):
        AgentContext.from_json(b'{"$type": "no.such.module:Thing"}')
    with pytest.raises(ContextDecodingError):
        AgentContext.from_json(b"{not json")


async def test_routing_errors_name_the_routed_step_in_a_run_with_a_store_too():
    sub = chain("sub", adder("a"), adder("b"), adder("c"))
    with GraphBuilder[int, int]("top") as g:
        g.start.edge_to(sub)
        sub.edge_to(lambda ctx: None, targets=(g.finish,))
    with pytest.raises(DeadEnd) as info:
        await GraphRunner().run(g.build(), AgentContext(0), store=MemoryStore())
    assert (info.value.path, info.value.step) == (("top", "sub"), 1)
