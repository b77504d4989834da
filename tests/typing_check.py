"""Checked by `mypy --strict` (run by `make test`), never executed.

Each `# type: ignore[...]` marks a line that must be a type error. With
`warn_unused_ignores`, an ignore that stops being needed fails the check, so
losing the edge typing cannot go unnoticed.
"""

from typing import Any, assert_type

from agentgraph import AgentContext, Graph, GraphBuilder, Node, node


@node
async def parse(ctx: AgentContext[str]) -> AgentContext[int]:
    return ctx.with_input(int(ctx.input))


@node
def double(ctx: AgentContext[int]) -> AgentContext[int]:
    return ctx.with_input(ctx.input * 2)


@node
async def show(ctx: AgentContext[int]) -> AgentContext[str]:
    return ctx.with_input(str(ctx.input))


assert_type(parse, Node[str, int])
assert_type(double, Node[int, int])

with GraphBuilder[str, str]("typed") as g:
    assert_type(g.start, Node[str, str])
    assert_type(g.start.edge_to(parse), Node[str, int])
    parse.edge_to(double).edge_to(show).edge_to(g.finish)
    double.edge_to(lambda ctx: show if ctx.input > 3 else None)
    double.edge_to(lambda ctx: double, targets=(double,))

graph = g.build()
assert_type(graph, Graph[str, str])

# A graph is a node: it nests where its types fit, and only there.
with GraphBuilder[str, int]("outer") as outer:
    outer.start.edge_to(graph).edge_to(parse).edge_to(outer.finish)


# Each mismatch sits in a function of its own, so that one error cannot make
# the lines after it unreachable (and so unchecked).
def int_output_into_str_input() -> None:
    parse.edge_to(double).edge_to(parse)  # type: ignore[arg-type]


def str_output_into_int_input() -> None:
    show.edge_to(double)  # type: ignore[arg-type]


def router_reads_the_wrong_type() -> None:
    parse.edge_to(lambda ctx: show if ctx.input.startswith("x") else None)  # type: ignore[attr-defined]


def router_returns_a_node_of_the_wrong_input() -> None:
    parse.edge_to(lambda ctx: parse)  # type: ignore[arg-type,return-value]


def graph_output_into_the_wrong_input() -> None:
    with GraphBuilder[str, int]("outer") as outer:
        outer.start.edge_to(graph).edge_to(double)  # type: ignore[arg-type]


async def contexts(ctx: AgentContext[int]) -> None:
    assert_type(ctx.with_input("a"), AgentContext[str])
    assert_type(ctx.map(str), AgentContext[str])
    assert_type(ctx.append(), AgentContext[int])
    wide: AgentContext[Any] = ctx
    assert_type(wide.input, Any)
