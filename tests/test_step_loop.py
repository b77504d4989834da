"""The graph loop runs a plain `async` `@node` step itself; what a step reports stays the same.

A run with no journal and no listener of `NodeStarted` calls such a node from the
loop, without `Runtime.execute`; these tests hold that it does, and that what its
callbacks, handle, retries, error transitions, limits and cancellation see is what
`execute` gives every other step.
"""

from typing import Any

import anyio
import pytest

from agentgraph import (
    AgentContext,
    GraphBuilder,
    GraphCancelled,
    GraphRunner,
    NodeFailed,
    RetryPolicy,
    RunHandle,
    Runtime,
    ServerError,
    StepInfo,
    StepLimitExceeded,
    node,
)
from agentgraph.checkpoint import MemoryStore
from tests.helpers import adder, chain

pytestmark = pytest.mark.anyio


@pytest.fixture
def executed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the nodes `Runtime.execute` ran."""
    names: list[str] = []
    original = Runtime.execute

    async def counted(self: Runtime, node: Any, ctx: Any, local: int, **kw: Any) -> Any:
        names.append(node.name)
        return await original(self, node, ctx, local, **kw)

    monkeypatch.setattr(Runtime, "execute", counted)
    return names


def recorder() -> tuple[list[tuple[Any, ...]], Any]:
    seen: list[tuple[Any, ...]] = []

    def on_step(info: StepInfo, n: Any, ctx: AgentContext[Any]) -> None:
        seen.append((info.index, info.local_index, info.depth, info.path, info.attempts, ctx.input))

    return seen, on_step


async def test_plain_async_steps_run_in_the_loop_and_report_as_any_step(
    executed: list[str],
) -> None:
    seen, on_step = recorder()
    graph = chain("g", adder("a"), adder("b", 10), adder("c", 100))
    out = await GraphRunner(on_step=on_step).run(graph, AgentContext(0))
    assert out.input == 111
    assert executed == []
    assert seen == [
        (1, 1, 0, ("g", "a"), 1, 1),
        (2, 2, 0, ("g", "b"), 1, 11),
        (3, 3, 0, ("g", "c"), 1, 111),
    ]


async def test_a_run_with_a_journal_runs_every_step_through_execute(
    executed: list[str],
) -> None:
    graph = chain("g", adder("a"), adder("b"))
    out = await GraphRunner().run(graph, AgentContext(0), store=MemoryStore())
    assert out.input == 2
    assert executed == ["a", "b"]


async def test_a_subgraph_s_loop_names_its_steps_below_its_own_path(executed: list[str]) -> None:
    seen, on_step = recorder()
    inner = chain("inner", adder("x"), adder("y"))
    outer = chain("outer", adder("a"), inner, adder("b"))
    out = await GraphRunner(on_step=on_step).run(outer, AgentContext(0))
    assert out.input == 4
    assert executed == ["inner"]  # the subgraph is not a function: execute runs it
    assert seen == [
        (1, 1, 0, ("outer", "a"), 1, 1),
        (3, 1, 1, ("outer", "inner", "x"), 1, 2),
        (4, 2, 1, ("outer", "inner", "y"), 1, 3),
        (2, 2, 0, ("outer", "inner"), 1, 3),
        (5, 3, 0, ("outer", "b"), 1, 4),
    ]


async def test_a_loop_step_that_fails_is_retried_under_its_policy() -> None:
    calls = 0

    @node
    async def flaky(ctx: AgentContext[int]) -> AgentContext[int]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ServerError("busy", status=503)
        return ctx.with_input(ctx.input + 1)

    seen, on_step = recorder()
    runner = GraphRunner(retry=RetryPolicy(attempts=2, initial=0.0, jitter=0.0), on_step=on_step)
    handle = RunHandle()
    out = await runner.run(chain("g", flaky), AgentContext(0), handle=handle)
    assert (out.input, calls) == (1, 2)
    assert seen == [(1, 1, 0, ("g", "flaky"), 2, 1)]
    assert (handle.context, handle.step) == (out, 1)


async def test_a_loop_step_that_returns_no_context_fails_with_its_path() -> None:
    @node
    async def wrong(ctx: AgentContext[int]) -> Any:
        return ctx.input

    with pytest.raises(NodeFailed) as caught:
        await GraphRunner().run(chain("g", adder("a"), wrong), AgentContext(0))
    assert (caught.value.step, caught.value.path) == (2, ("g", "wrong"))
    assert isinstance(caught.value.__cause__, TypeError)
    assert "returned int" in str(caught.value.__cause__)
    assert caught.value.context.input == 1


async def test_a_loop_step_that_fails_takes_its_error_transition() -> None:
    @node
    async def broken(ctx: AgentContext[int]) -> AgentContext[int]:
        raise ValueError("no")

    @node
    async def handler(ctx: AgentContext[Any]) -> AgentContext[str]:
        return ctx.with_input(f"{type(ctx.input).__name__}: {ctx.input.message}")

    seen, on_step = recorder()
    with GraphBuilder[int, Any]("g") as g:
        g.start.edge_to(broken).edge_to(g.finish)
        broken.on_error(handler)
        handler.edge_to(g.finish)
    out = await GraphRunner(on_step=on_step).run(g.build(), AgentContext(5))
    assert out.input == "Failure: no"
    assert [entry[3] for entry in seen] == [("g", "handler")]


async def test_the_step_limit_stops_the_loop_before_the_step_past_it() -> None:
    seen, on_step = recorder()
    graph = chain("g", adder("a"), adder("b"), adder("c"))
    with pytest.raises(StepLimitExceeded) as caught:
        await GraphRunner(max_steps=2, on_step=on_step).run(graph, AgentContext(0))
    assert (caught.value.step, caught.value.path) == (2, ("g", "c"))
    assert [entry[0] for entry in seen] == [1, 2]


async def test_a_handle_cancelled_by_a_step_ends_the_run_at_the_next_step() -> None:
    handle = RunHandle()

    @node
    async def cancels(ctx: AgentContext[int]) -> AgentContext[int]:
        handle.cancel()
        return ctx.with_input(ctx.input + 1)

    reached: list[int] = []

    @node
    async def after(ctx: AgentContext[int]) -> AgentContext[int]:
        reached.append(ctx.input)
        return ctx

    with pytest.raises(GraphCancelled) as caught:
        await GraphRunner().run(chain("g", cancels, after), AgentContext(0), handle=handle)
    assert reached == []
    assert caught.value.context.input == 1


async def test_a_long_loop_yields_to_the_event_loop_every_64_steps() -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.lowlevel.checkpoint()

    @node
    async def step(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx.with_input(ctx.input + 1)

    with GraphBuilder[int, int]("g") as g:
        g.start.edge_to(step)
        step.edge_to(lambda ctx: step if ctx.input < 640 else g.finish, targets=(step, g.finish))
    graph = g.build()
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        await anyio.lowlevel.checkpoint()
        before = ticks
        out = await GraphRunner(max_steps=1000).run(graph, AgentContext(0))
        during = ticks - before
        tg.cancel_scope.cancel()
    assert out.input == 640
    assert during >= 5  # 10 yields; trio may run the ticker after the loop in a batch
