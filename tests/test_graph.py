import anyio
import pytest

from agentgraph import (
    AgentContext,
    DeadEnd,
    EdgeOutsideBuilder,
    GraphBuilder,
    GraphDefinitionError,
    GraphRunner,
    Node,
    RoutingError,
    node,
)
from tests.helpers import adder

pytestmark = pytest.mark.anyio


def run(graph, value=0, **options):
    return GraphRunner(**options).run(graph, AgentContext(value))


async def test_static_chain_runs_in_order():
    a, b = adder("a", 1), adder("b", 10)
    with GraphBuilder[int, int]("chain") as g:
        g.start.edge_to(a).edge_to(b).edge_to(g.finish)
    assert (await run(g.build())).input == 11


async def test_first_transition_that_fires_wins_and_none_passes():
    a, small, big = adder("a"), adder("small", 100), adder("big", 1000)
    seen = []

    def never(ctx):
        seen.append("never")
        return None

    async def only_big(ctx):
        seen.append("only_big")
        return big if ctx.input > 5 else None

    with GraphBuilder[int, int]("route") as g:
        g.start.edge_to(a)
        a.edge_to(never, targets=(small,))
        a.edge_to(only_big, targets=(big,))
        a.edge_to(small)
        small.edge_to(g.finish)
        big.edge_to(g.finish)
    graph = g.build()
    assert (await run(graph, 0)).input == 101
    assert seen == ["never", "only_big"]
    assert (await run(graph, 10)).input == 1011


async def test_router_returning_undeclared_node_is_a_routing_error():
    a, b, c = adder("a"), adder("b"), adder("c")
    with GraphBuilder[int, int]("g") as g:
        g.start.edge_to(a)
        a.edge_to(lambda ctx: c, targets=(b,))
        b.edge_to(g.finish)
        a.edge_to(c)
        c.edge_to(g.finish)
    with pytest.raises(RoutingError, match="not among its declared targets") as info:
        await run(g.build(), 1)
    assert info.value.context.input == 2
    assert info.value.path == ("g", "a")


async def test_router_returning_a_foreign_node_is_a_routing_error():
    a, stranger = adder("a"), adder("stranger")
    with GraphBuilder[int, int]("g") as g:
        g.start.edge_to(a)
        a.edge_to(lambda ctx: stranger if ctx.input > 1 else g.finish)
    with pytest.raises(RoutingError, match="not a node of graph 'g'"):
        await run(g.build(), 5)


async def test_dead_end_carries_the_context():
    a = adder("a")
    with GraphBuilder[int, int]("g") as g:
        g.start.edge_to(a)
        a.edge_to(lambda ctx: g.finish if ctx.input < 3 else None, targets=(g.finish,))
    graph = g.build()
    assert (await run(graph, 0)).input == 1
    with pytest.raises(DeadEnd) as info:
        await run(graph, 5)
    assert info.value.context.input == 6
    assert info.value.step == 1
    assert info.value.path == ("g", "a")


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        (lambda g, a, b: None, "start has no outgoing edge"),
        (lambda g, a, b: (g.start.edge_to(a), a.edge_to(a)), "finish cannot be reached"),
        (
            lambda g, a, b: (g.start.edge_to(a).edge_to(g.finish), b.edge_to(g.finish)),
            "node 'b' cannot be reached",
        ),
        (
            lambda g, a, b: (
                g.start.edge_to(a),
                a.edge_to(lambda ctx: None, targets=(b,)),
                a.edge_to(g.finish),
            ),
            "node 'b' has no outgoing edge",
        ),
        (
            lambda g, a, b: (g.start.edge_to(a).edge_to(g.finish), a.edge_to(b)),
            "'a' has a plain edge to 'finish', which always fires, so its later transition",
        ),
        (
            lambda g, a, b: (
                g.start.edge_to(a).edge_to(g.finish),
                a.edge_to(lambda c: b, targets=()),
            ),
            "router after 'a' declares an empty targets list",
        ),
    ],
)
def test_build_rejects_unsound_graphs(wire, message):
    a, b = adder("a"), adder("b")
    with GraphBuilder[int, int]("bad") as g:
        wire(g, a, b)
    with pytest.raises(GraphDefinitionError, match=message) as info:
        g.build()
    assert info.value.graph == "bad"


def test_edges_into_start_or_out_of_finish_are_rejected():
    a = adder("a")
    with GraphBuilder[int, int]("bad") as g:
        with pytest.raises(GraphDefinitionError, match="finish cannot have outgoing"):
            g.finish.edge_to(a)
        with pytest.raises(GraphDefinitionError, match="back into start"):
            a.edge_to(g.start)


def test_undeclared_router_counts_every_node_as_reachable():
    a, b = adder("a"), adder("b")
    with GraphBuilder[int, int]("g") as g:
        g.start.edge_to(a)
        a.edge_to(lambda ctx: b if ctx.input < 3 else g.finish)
        b.edge_to(a)
    assert g.build().nodes == (a, b)


def test_edge_to_outside_a_builder_is_a_clear_error():
    a, b = adder("a"), adder("b")
    with pytest.raises(EdgeOutsideBuilder, match="outside a builder block"):
        a.edge_to(b)
    with GraphBuilder[int, int]("g"):
        pass
    with pytest.raises(EdgeOutsideBuilder):
        a.edge_to(b)


def test_edge_to_rejects_non_nodes():
    a = adder("a")
    with GraphBuilder[int, int]("g"):
        with pytest.raises(TypeError, match="takes a Node or a router"):
            a.edge_to(42)  # type: ignore[call-overload]
        with pytest.raises(TypeError, match="targets= is for routers"):
            a.edge_to(adder("b"), targets=())  # type: ignore[call-overload]


async def test_changing_the_builder_after_build_does_not_change_the_graph():
    a, b = adder("a", 1), adder("b", 100)
    with GraphBuilder[int, int]("g") as g:
        g.start.edge_to(a).edge_to(g.finish)
    graph = g.build()
    with g:
        a.edge_to(b)  # a later transition on `a`, added after build()
        b.edge_to(g.finish)
    assert graph.transitions[a][0].target is g.finish and len(graph.transitions[a]) == 1
    assert (await run(graph)).input == 1
    assert b not in graph.members


async def test_one_node_object_in_two_graphs():
    shared = adder("shared", 5)
    with GraphBuilder[int, int]("one") as g1:
        g1.start.edge_to(shared).edge_to(g1.finish)
    with GraphBuilder[int, int]("two") as g2:
        g2.start.edge_to(adder("first", 1)).edge_to(shared).edge_to(g2.finish)
    assert (await run(g1.build())).input == 5
    assert (await run(g2.build())).input == 6


async def test_routers_may_be_async_callables_and_objects():
    a = adder("a")

    class Router:
        async def __call__(self, ctx):
            await anyio.sleep(0)
            return g.finish

    with GraphBuilder[int, int]("g") as g:
        g.start.edge_to(a)
        a.edge_to(Router(), targets=(g.finish,))
    assert (await run(g.build())).input == 1


async def test_awaited_routes_go_on_past_none_and_are_checked_like_plain_ones():
    a, small, big = adder("a"), adder("small", 100), adder("big", 1000)
    seen = []

    async def first(ctx):
        seen.append("first")
        return None

    def lazily(ctx):  # a plain function that returns an awaitable
        seen.append("lazily")
        return first(ctx)

    def plain(ctx):
        seen.append("plain")
        return big if ctx.input > 5 else None

    with GraphBuilder[int, int]("g") as g:
        g.start.edge_to(a)
        a.edge_to(first, targets=(small,))
        a.edge_to(lazily, targets=(small,))
        a.edge_to(plain, targets=(big,))
        a.edge_to(small)
        small.edge_to(g.finish)
        big.edge_to(g.finish)
    graph = g.build()
    assert (await run(graph, 10)).input == 1011
    assert seen == ["first", "lazily", "first", "plain"]

    async def stray(ctx):
        return big

    async def broken(ctx):
        raise KeyError("lost")

    for router, message in ((stray, "not among its declared targets"), (broken, "KeyError")):
        with GraphBuilder[int, int]("g") as g:
            g.start.edge_to(a)
            a.edge_to(router, targets=(small,))
            a.edge_to(big)
            small.edge_to(g.finish)
            big.edge_to(g.finish)
        with pytest.raises(RoutingError, match=message) as info:
            await run(g.build(), 1)
        assert info.value.context.input == 2 and info.value.path == ("g", "a")


def test_mermaid_draws_dynamic_edges_and_subgraphs():
    a, b = adder("a"), adder("b")
    with GraphBuilder[int, int]("inner") as gi:
        gi.start.edge_to(b).edge_to(gi.finish)
    inner = gi.build()

    def more(ctx):
        return inner if ctx.input < 3 else None

    with GraphBuilder[int, int]("outer") as g:
        g.start.edge_to(a)
        a.edge_to(more, targets=(inner,))
        a.edge_to(g.finish)
        inner.edge_to(a)
    text = g.build().to_mermaid()
    assert text == (
        "flowchart TD\n"
        "    n0([start])\n"
        '    n1["a"]\n'
        '    subgraph n2 ["inner"]\n'
        "        n2_0([start])\n"
        '        n2_1["b"]\n'
        "        n2_2([finish])\n"
        "        n2_0 --> n2_1\n"
        "        n2_1 --> n2_2\n"
        "    end\n"
        "    n3([finish])\n"
        "    n0 --> n1\n"
        "    n1 -. more .-> n2\n"
        "    n1 --> n3\n"
        "    n2 --> n1\n"
    )


def test_mermaid_marks_routers_without_declared_targets():
    a = adder("a")
    with GraphBuilder[int, int]("g") as g:
        g.start.edge_to(a)
        a.edge_to(lambda ctx: g.finish)
    assert "n1 -. router .-> n1_any{{any}}" in g.build().to_mermaid()


async def test_node_subclass_and_sync_function_nodes():
    import attrs

    @attrs.frozen(eq=False)
    class Times(Node[int, int]):
        factor: int

        async def run(self, ctx, rt):
            return ctx.with_input(ctx.input * self.factor)

    @node
    def plus_one(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx.with_input(ctx.input + 1)

    times = Times(3, name="times")
    with GraphBuilder[int, int]("g") as g:
        g.start.edge_to(plus_one).edge_to(times).edge_to(g.finish)
    assert (await run(g.build(), 1)).input == 6
