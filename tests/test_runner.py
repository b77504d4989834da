import anyio
import httpx
import pytest

from agentgraph import (
    AgentContext,
    GraphBuilder,
    GraphRunner,
    NodeFailed,
    NodeFailedEvent,
    NodeFinished,
    NodeStarted,
    NodeTimeout,
    ProviderError,
    RetryPolicy,
    RetryScheduled,
    RouteChosen,
    RunFinished,
    RunStarted,
    ServerError,
    StepLimitExceeded,
    node,
)
from tests.helpers import adder, chain

pytestmark = pytest.mark.anyio


def three_levels():
    innermost = chain("c", adder("c1"))
    middle = chain("b", adder("b1"), innermost)
    return chain("a", adder("a1"), middle, adder("a2"))


def describe(event):
    match event:
        case RunStarted(graph=name):
            return ("run", name)
        case NodeStarted(index=i, local_index=li, depth=d, path=p):
            return ("start", i, li, d, "/".join(p))
        case NodeFinished(step=s, context=c):
            return ("end", s.index, s.local_index, s.depth, "/".join(s.path), s.attempts, c.input)
        case RouteChosen(path=p, source=src, target=dst, transition=t, dynamic=dyn):
            return ("route", "/".join(p), src, dst, t, dyn)
        case RetryScheduled(index=i, attempt=a, wait=w):
            return ("retry", i, a, w)
        case NodeFailedEvent(index=i, path=p, attempts=a):
            return ("failed", i, "/".join(p), a)
        case RunFinished(steps=n, error=e, context=c):
            return ("finished", n, type(e).__name__ if e else None, c.input)
    raise AssertionError(event)


async def collect(runner, graph, value=0, *, routes=False):
    """The run's events, described; routing events only when `routes` is set."""
    events = []
    async with runner.stream(graph, AgentContext(value)) as stream:
        async for event in stream:
            if routes or not isinstance(event, RouteChosen):
                events.append(describe(event))
    return events


async def test_three_levels_share_one_step_counter_and_report_exact_events():
    events = await collect(GraphRunner(), three_levels(), routes=True)
    assert events == [
        ("run", "a"),
        ("route", "a", "start", "a1", 0, False),
        ("start", 1, 1, 0, "a/a1"),
        ("end", 1, 1, 0, "a/a1", 1, 1),
        ("route", "a", "a1", "b", 0, False),
        ("start", 2, 2, 0, "a/b"),
        ("route", "a/b", "start", "b1", 0, False),
        ("start", 3, 1, 1, "a/b/b1"),
        ("end", 3, 1, 1, "a/b/b1", 1, 2),
        ("route", "a/b", "b1", "c", 0, False),
        ("start", 4, 2, 1, "a/b/c"),
        ("route", "a/b/c", "start", "c1", 0, False),
        ("start", 5, 1, 2, "a/b/c/c1"),
        ("end", 5, 1, 2, "a/b/c/c1", 1, 3),
        ("route", "a/b/c", "c1", "finish", 0, False),
        ("end", 4, 2, 1, "a/b/c", 1, 3),
        ("route", "a/b", "c", "finish", 0, False),
        ("end", 2, 2, 0, "a/b", 1, 3),
        ("route", "a", "b", "a2", 0, False),
        ("start", 6, 3, 0, "a/a2"),
        ("end", 6, 3, 0, "a/a2", 1, 4),
        ("route", "a", "a2", "finish", 0, False),
        ("finished", 6, None, 4),
    ]


async def test_routing_events_name_the_transition_that_fired():
    a, b = adder("a"), adder("b")

    def skip(ctx):
        return None

    with GraphBuilder[int, int]("g") as g:
        g.start.edge_to(a)
        a.edge_to(skip, targets=(b,))
        a.edge_to(lambda ctx: b if ctx.input < 2 else None, targets=(b,))
        a.edge_to(g.finish)
        b.edge_to(a)
    events = await collect(GraphRunner(), g.build(), routes=True)
    assert [e for e in events if e[0] == "route"] == [
        ("route", "g", "start", "a", 0, False),
        ("route", "g", "a", "b", 1, True),
        ("route", "g", "b", "a", 0, False),
        ("route", "g", "a", "finish", 2, False),
    ]


async def test_on_step_callbacks_sync_and_async_see_every_step():
    seen = []

    def sync_cb(step, node, ctx):
        seen.append(("sync", step.index, node.name, ctx.input))

    async def async_cb(step, node, ctx):
        seen.append(("async", step.index, step.duration >= 0))

    out = await GraphRunner(on_step=[sync_cb, async_cb]).run(three_levels(), AgentContext(0))
    assert out.input == 4
    assert [s for s in seen if s[0] == "sync"] == [
        ("sync", 1, "a1", 1),
        ("sync", 3, "b1", 2),
        ("sync", 5, "c1", 3),
        ("sync", 4, "c", 3),
        ("sync", 2, "b", 3),
        ("sync", 6, "a2", 4),
    ]
    assert [s[1] for s in seen if s[0] == "async"] == [1, 3, 5, 4, 2, 6]


async def test_step_cap_counts_nested_steps_and_carries_the_last_context():
    graph = three_levels()
    assert (await GraphRunner(max_steps=6).run(graph, AgentContext(0))).input == 4
    with pytest.raises(StepLimitExceeded) as info:
        await GraphRunner(max_steps=4).run(graph, AgentContext(0))
    assert info.value.step == 4
    assert info.value.context.input == 2
    assert info.value.path == ("a", "b", "c", "c1")


async def test_default_step_cap_stops_an_endless_loop():
    a = adder("a")
    with GraphBuilder[int, int]("loop") as g:
        g.start.edge_to(a)
        a.edge_to(lambda ctx: a, targets=(a, g.finish))
    with pytest.raises(StepLimitExceeded) as info:
        await GraphRunner().run(g.build(), AgentContext(0))
    assert info.value.step == 1000 and info.value.context.input == 1000


class Flaky:
    """Fails `times` times with `error`, then adds one."""

    def __init__(self, times, error):
        self.times, self.error, self.calls = times, error, 0

    def node(self, name="flaky"):
        @node(name=name)
        async def flaky(ctx: AgentContext[int]) -> AgentContext[int]:
            self.calls += 1
            if self.calls <= self.times:
                raise self.error
            return ctx.with_input(ctx.input + 1)

        return flaky


def recording_policy(attempts=3, **options):
    waits = []

    async def sleep(seconds):
        waits.append(seconds)

    policy = RetryPolicy(attempts=attempts, initial=1.0, jitter=0.0, sleep=sleep, **options)
    return policy, waits


async def test_transient_errors_are_retried_with_exponential_backoff():
    policy, waits = recording_policy(attempts=4)
    flaky = Flaky(3, ServerError("overloaded", status=503))
    graph = chain("g", flaky.node())
    events = await collect(GraphRunner(retry=policy), graph)
    assert flaky.calls == 4
    assert waits == [1.0, 2.0, 4.0]
    assert events == [
        ("run", "g"),
        ("start", 1, 1, 0, "g/flaky"),
        ("retry", 1, 1, 1.0),
        ("retry", 1, 2, 2.0),
        ("retry", 1, 3, 4.0),
        ("end", 1, 1, 0, "g/flaky", 4, 1),
        ("finished", 1, None, 1),
    ]


async def test_retry_after_from_a_provider_is_honoured_up_to_the_cap():
    policy, waits = recording_policy(max_wait=10.0)
    error = ProviderError("slow down", retryable=True, retry_after=7.5)
    flaky = Flaky(1, error)
    await GraphRunner(retry=policy).run(chain("g", flaky.node()), AgentContext(0))
    assert waits == [7.5]
    policy, waits = recording_policy(max_wait=5.0)
    flaky = Flaky(1, error)
    await GraphRunner(retry=policy).run(chain("g", flaky.node()), AgentContext(0))
    assert waits == [5.0]


@pytest.mark.parametrize(
    "error",
    [TimeoutError("t"), ConnectionResetError("c"), httpx.ConnectError("x"), NodeTimeout("n", 1)],
)
async def test_timeouts_and_connection_errors_are_transient(error):
    policy, waits = recording_policy()
    flaky = Flaky(1, error)
    out = await GraphRunner(retry=policy).run(chain("g", flaky.node()), AgentContext(0))
    assert out.input == 1 and len(waits) == 1


@pytest.mark.parametrize(
    "error", [TypeError("bug"), ValueError("bad"), ProviderError("no", retryable=False)]
)
async def test_bugs_and_permanent_errors_are_not_retried(error):
    policy, waits = recording_policy()
    flaky = Flaky(1, error)
    with pytest.raises(NodeFailed) as info:
        graph = chain("g", adder("first"), flaky.node())
        await GraphRunner(retry=policy).run(graph, AgentContext(0))
    assert flaky.calls == 1 and waits == []
    failed = info.value
    assert failed.__cause__ is error and failed.error is error
    assert (failed.path, failed.step, failed.attempts, failed.context.input) == (
        ("g", "flaky"),
        2,
        1,
        1,
    )
    assert "node g/flaky failed at step 2 after 1 attempt" in str(failed)


async def test_exhausted_retries_report_every_attempt():
    policy, _ = recording_policy(attempts=2)
    flaky = Flaky(5, ServerError("down", status=500))
    events = []
    with pytest.raises(NodeFailed) as info:
        async with GraphRunner(retry=policy).stream(chain("g", flaky.node()), AgentContext(0)) as s:
            async for event in s:
                events.append(describe(event))
    assert info.value.attempts == 2 and flaky.calls == 2
    assert events == [
        ("run", "g"),
        ("route", "g", "start", "flaky", 0, False),
        ("start", 1, 1, 0, "g/flaky"),
        ("retry", 1, 1, 1.0),
        ("failed", 1, "g/flaky", 2),
        ("finished", 1, "NodeFailed", 0),
    ]


async def test_a_node_marked_unsafe_is_never_retried():
    policy, waits = recording_policy()
    flaky = Flaky(1, ServerError("down", status=500))
    unsafe = flaky.node().unsafe_to_retry()
    with pytest.raises(NodeFailed):
        await GraphRunner(retry=policy).run(chain("g", unsafe), AgentContext(0))
    assert flaky.calls == 1 and waits == []


async def test_node_retry_override_and_timeout():
    import anyio

    policy, waits = recording_policy(attempts=5)
    calls = []

    @node
    async def slow_then_fast(ctx: AgentContext[int]) -> AgentContext[int]:
        calls.append(1)
        if len(calls) < 3:
            await anyio.sleep(10)
        return ctx.with_input(ctx.input + 1)

    timed = slow_then_fast.with_timeout(0.05).with_retry(policy)
    assert timed is not slow_then_fast and slow_then_fast.timeout is None
    out = await GraphRunner(retry=RetryPolicy(attempts=1)).run(chain("g", timed), AgentContext(0))
    assert out.input == 1 and len(calls) == 3 and len(waits) == 2


async def test_retrying_a_subgraph_reruns_it_from_its_start():
    policy, waits = recording_policy()
    first = adder("first")
    assert waits == []
    flaky = Flaky(1, ServerError("down", status=500))
    inner = chain("inner", first, flaky.node())
    inner_no_retry = chain("inner", adder("first"), Flaky(1, ServerError("x")).node())
    runner = GraphRunner(retry=RetryPolicy(attempts=1))
    # Without a policy of its own, the subgraph is not retried on top of its nodes.
    with pytest.raises(NodeFailed) as info:
        await runner.run(chain("outer", inner_no_retry), AgentContext(0))
    assert info.value.path == ("outer", "inner", "flaky")
    events = await collect(runner, chain("outer", inner.with_retry(policy)))
    assert events == [
        ("run", "outer"),
        ("start", 1, 1, 0, "outer/inner"),
        ("start", 2, 1, 1, "outer/inner/first"),
        ("end", 2, 1, 1, "outer/inner/first", 1, 1),
        ("start", 3, 2, 1, "outer/inner/flaky"),
        ("failed", 3, "outer/inner/flaky", 1),
        ("retry", 1, 1, 1.0),
        ("start", 4, 1, 1, "outer/inner/first"),
        ("end", 4, 1, 1, "outer/inner/first", 1, 1),
        ("start", 5, 2, 1, "outer/inner/flaky"),
        ("end", 5, 2, 1, "outer/inner/flaky", 1, 2),
        ("end", 1, 1, 0, "outer/inner", 2, 2),
        ("finished", 5, None, 2),
    ]
    assert waits == [1.0]


async def test_node_returning_a_non_context_fails_clearly():
    @node
    async def wrong(ctx: AgentContext[int]) -> AgentContext[int]:
        return 5  # type: ignore[return-value]

    with pytest.raises(NodeFailed, match="returned int; a node returns an AgentContext"):
        await GraphRunner().run(chain("g", wrong), AgentContext(0))


def test_node_decorator_checks_the_signature():
    with pytest.raises(TypeError, match=r"must take \(ctx\) or \(ctx, runtime\)"):
        node(lambda: None)  # type: ignore[call-overload]


async def test_node_can_take_the_runtime():
    seen = []

    @node
    async def where(ctx: AgentContext[int], rt) -> AgentContext[int]:
        seen.append((rt.path, rt.depth, rt.step))
        return ctx

    await GraphRunner().run(chain("outer", adder("x"), chain("inner", where)), AgentContext(0))
    assert seen == [(("outer", "inner", "where"), 2, 3)]


def test_run_sync():
    assert GraphRunner().run_sync(chain("g", adder("a")), AgentContext(1)).input == 2


async def test_a_provider_error_the_client_already_retried_is_not_retried_again():
    policy, waits = recording_policy()
    error = ServerError("down", status=503)
    error.attempts = 3
    flaky = Flaky(1, error)
    with pytest.raises(NodeFailed) as info:
        await GraphRunner(retry=policy).run(chain("g", flaky.node()), AgentContext(0))
    assert flaky.calls == 1 and waits == [] and info.value.attempts == 1


async def test_sinks_see_every_event_and_a_failing_sink_is_detached(caplog):
    seen, calls = [], []

    def broken(event):
        calls.append(event)
        raise RuntimeError("disk full")

    async def good(event):
        seen.append(type(event).__name__)

    runner = GraphRunner(sinks=[broken, good])
    out = await runner.run(chain("g", adder("a"), adder("b")), AgentContext(0))
    assert out.input == 2
    assert len(calls) == 1  # reported once, then detached
    assert seen == [
        "RunStarted",
        "RouteChosen",
        "NodeStarted",
        "NodeFinished",
        "RouteChosen",
        "NodeStarted",
        "NodeFinished",
        "RouteChosen",
        "RunFinished",
    ]
    errors = [r for r in caplog.records if "detached" in r.getMessage()]
    assert (
        len(errors) == 1 and "disk full" in errors[0].getMessage()
    )  # no traceback: masked text only


async def test_a_failing_sink_can_end_the_run_instead():
    def broken(event):
        raise RuntimeError("disk full")

    runner = GraphRunner(sinks=[broken], sink_errors="raise")
    with pytest.raises(RuntimeError, match="disk full"):
        await runner.run(chain("g", adder("a")), AgentContext(0))
    with pytest.raises(ValueError, match="sink_errors"):
        GraphRunner(sink_errors="ignore")  # type: ignore[arg-type]


async def test_sync_and_async_sinks_are_called_in_order_for_every_event():
    calls = []

    def first(event):
        calls.append(("first", type(event).__name__))

    async def second(event):
        await anyio.sleep(0)
        calls.append(("second", type(event).__name__))

    def third(event):
        # A sync sink may return an awaitable: it is awaited before the next sink runs.
        calls.append(("third", type(event).__name__))

        async def later():
            calls.append(("third-later", type(event).__name__))

        return later()

    def fourth(event):
        calls.append(("fourth", type(event).__name__))

    await GraphRunner(sinks=[first, second, third, fourth]).run(
        chain("g", adder("a")), AgentContext(0)
    )
    kinds = ["RunStarted", "RouteChosen", "NodeStarted", "NodeFinished", "RouteChosen"]
    kinds.append("RunFinished")
    order = ["first", "second", "third", "third-later", "fourth"]
    assert calls == [(who, kind) for kind in kinds for who in order]


async def test_a_sink_detached_mid_run_leaves_the_others_called(caplog):
    seen: dict[str, list[str]] = {"before": [], "after": [], "flaky": []}

    def before(event):
        seen["before"].append(type(event).__name__)

    def flaky(event):
        seen["flaky"].append(type(event).__name__)
        if isinstance(event, NodeFinished):
            raise OSError("disk full")

    async def after(event):
        seen["after"].append(type(event).__name__)

    runner = GraphRunner(sinks=[before, flaky, after])
    out = await runner.run(chain("g", adder("a"), adder("b")), AgentContext(0))
    assert out.input == 2
    everything = [
        "RunStarted",
        *["RouteChosen", "NodeStarted", "NodeFinished"] * 2,
        "RouteChosen",
        "RunFinished",
    ]
    assert seen["before"] == seen["after"] == everything
    assert seen["flaky"] == everything[:4]  # up to the event it failed on
    assert len([r for r in caplog.records if "detached" in r.getMessage()]) == 1
    # The next run starts with every sink again.
    await runner.run(chain("g", adder("a")), AgentContext(0))
    assert seen["flaky"][4:] == ["RunStarted", "RouteChosen", "NodeStarted", "NodeFinished"]


async def test_a_sink_that_fails_in_concurrent_branches_is_detached_once(caplog):
    from agentgraph import parallel

    async def broken(event):
        await anyio.sleep(0)
        if isinstance(event, NodeStarted) and event.depth == 1:
            raise RuntimeError("broken")

    seen = []
    both = parallel(adder("x"), adder("y"), merge=lambda ctx, outs: ctx)
    runner = GraphRunner(sinks=[broken, seen.append])
    await runner.run(chain("g", both), AgentContext(0))
    assert len([r for r in caplog.records if "detached" in r.getMessage()]) == 1
    assert isinstance(seen[-1], RunFinished)


def test_events_are_frozen_values():
    import attrs

    event = RouteChosen(1, ("g",), "a", "b", 0, False)
    assert event == RouteChosen(1, ("g",), "a", "b", 0, False) and hash(event) == hash(
        RouteChosen(1, ("g",), "a", "b", 0, False)
    )
    assert repr(event) == (
        "RouteChosen(index=1, path=('g',), source='a', target='b', transition=0, "
        "dynamic=False, on_error=False)"
    )
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        event.index = 2  # type: ignore[misc]
    assert attrs.evolve(event, on_error=True).on_error
    assert [f.name for f in attrs.fields(NodeFailedEvent)] == ["index", "path", "attempts", "error"]
