"""Cancellation that carries context, on asyncio and trio."""

import anyio
import pytest

from agentgraph import (
    AgentContext,
    GraphBuilder,
    GraphCancelled,
    GraphRunner,
    GraphTimeout,
    RunHandle,
    node,
)
from tests.helpers import adder

pytestmark = pytest.mark.anyio


def sleeper(name, started):
    @node(name=name)
    async def sleep_forever(ctx: AgentContext[int]) -> AgentContext[int]:
        started.set()
        await anyio.sleep(3600)
        return ctx

    return sleep_forever


def nested_sleeper(started):
    with GraphBuilder[int, int]("deep") as g:
        g.start.edge_to(adder("d1", 10)).edge_to(sleeper("nap", started)).edge_to(g.finish)
    deep = g.build()
    with GraphBuilder[int, int]("mid") as g:
        g.start.edge_to(adder("m1", 100)).edge_to(deep).edge_to(g.finish)
    mid = g.build()
    with GraphBuilder[int, int]("top") as g:
        g.start.edge_to(adder("t1", 1)).edge_to(mid).edge_to(g.finish)
    return g.build()


async def test_handle_cancel_ends_the_run_with_the_last_context():
    started = anyio.Event()
    handle = RunHandle()
    graph = nested_sleeper(started)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            errors = []

            async def go():
                try:
                    await GraphRunner().run(graph, AgentContext(0), handle=handle)
                except GraphCancelled as error:
                    errors.append(error)

            tg.start_soon(go)
            await started.wait()
            handle.cancel()
    (error,) = errors
    assert error.context.input == 111
    assert error.step == 5  # t1=1, mid=2, m1=3, deep=4, d1=5
    assert handle.context is error.context and handle.cancelled


async def test_cancel_before_start_ends_at_step_zero():
    handle = RunHandle()
    handle.cancel()
    with pytest.raises(GraphCancelled) as info:
        await GraphRunner().run(nested_sleeper(anyio.Event()), AgentContext(7), handle=handle)
    assert info.value.step == 0 and info.value.context.input == 7


async def test_run_timeout_raises_graph_timeout_promptly():
    started = anyio.Event()
    # The sleeper would sleep an hour; the guard fails the test if the run's own
    # timeout does not interrupt it.
    with anyio.fail_after(5), pytest.raises(GraphTimeout) as info:
        await GraphRunner(timeout=0.05).run(nested_sleeper(started), AgentContext(0))
    assert isinstance(info.value, TimeoutError)
    assert info.value.context.input == 111 and info.value.step == 5


async def test_callers_cancellation_propagates_natively():
    started = anyio.Event()
    handle = RunHandle()
    reached_after = []
    with anyio.fail_after(5):
        with anyio.CancelScope() as outer:

            async def cancel_when_started():
                await started.wait()
                outer.cancel()

            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel_when_started)
                await GraphRunner().run(nested_sleeper(started), AgentContext(0), handle=handle)
                reached_after.append(True)
    assert outer.cancelled_caught  # the native cancellation reached the caller's scope
    assert reached_after == []
    assert handle.context is not None and handle.context.input == 111 and handle.step == 5


async def test_cancel_through_handle_during_stream():
    started = anyio.Event()
    handle = RunHandle()
    kinds = []
    with anyio.fail_after(5), pytest.raises(GraphCancelled):
        graph = nested_sleeper(started)
        async with GraphRunner().stream(graph, AgentContext(0), handle=handle) as s:
            async for event in s:
                kinds.append(type(event).__name__)
                if type(event).__name__ == "NodeStarted" and event.node.name == "nap":
                    handle.cancel()
    assert kinds[-1] == "RunFinished"


async def test_leaving_a_stream_early_cancels_the_run():
    started = anyio.Event()
    with anyio.fail_after(5):
        async with GraphRunner().stream(nested_sleeper(started), AgentContext(0)) as s:
            async for event in s:
                if type(event).__name__ == "NodeStarted":
                    break


async def test_sinks_hear_the_end_of_a_run_the_caller_cancelled():
    started = anyio.Event()
    seen = []
    runner = GraphRunner(sinks=[lambda event: seen.append(type(event).__name__)])
    with anyio.fail_after(5):
        with anyio.CancelScope() as outer:

            async def cancel_when_started():
                await started.wait()
                outer.cancel()

            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel_when_started)
                await runner.run(nested_sleeper(started), AgentContext(0))
    assert outer.cancelled_caught
    assert seen[-1] == "RunFinished"


async def test_a_graph_of_sync_nodes_still_sees_the_callers_deadline():
    @node
    def spin(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx.with_input(ctx.input + 1)

    with GraphBuilder[int, int]("spin") as g:
        g.start.edge_to(spin)
        spin.edge_to(lambda ctx: spin if ctx.input >= 0 else g.finish, targets=(spin, g.finish))
    handle = RunHandle()
    with anyio.move_on_after(0.05) as scope:
        await GraphRunner(max_steps=10**9).run(g.build(), AgentContext(0), handle=handle)
    assert scope.cancelled_caught and handle.step > 0
