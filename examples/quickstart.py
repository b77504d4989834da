"""A small graph: a dynamic edge, a nested subgraph and the run's step events.

Run it with `make demo` (or `python examples/quickstart.py`).
"""

from __future__ import annotations

import anyio

from agentgraph import (
    AgentContext,
    Event,
    Graph,
    GraphBuilder,
    GraphRunner,
    Message,
    Node,
    NodeFinished,
    NodeStarted,
    node,
)


@node
async def parse(ctx: AgentContext[str]) -> AgentContext[int]:
    return ctx.with_input(len(ctx.input.split()))


@node
def halve(ctx: AgentContext[int]) -> AgentContext[int]:
    return ctx.with_input(ctx.input // 2)


@node
def note(ctx: AgentContext[int]) -> AgentContext[int]:
    return ctx.append(Message.assistant(f"halved to {ctx.input}"))


# A subgraph: halve, then write a note in the history. It is an ordinary node.
with GraphBuilder[int, int]("shrink") as sub:
    sub.start.edge_to(halve).edge_to(note).edge_to(sub.finish)
shrink = sub.build()


@node
async def report(ctx: AgentContext[int]) -> AgentContext[str]:
    return ctx.with_input(f"settled at {ctx.input} after {len(ctx.history)} halvings")


def too_big(ctx: AgentContext[int]) -> Node[int, int] | None:
    """Keep shrinking while the number is above 3; otherwise fall through."""
    return shrink if ctx.input > 3 else None


with GraphBuilder[str, str]("quickstart") as g:
    g.start.edge_to(parse)
    parse.edge_to(too_big, targets=(shrink,))
    parse.edge_to(report)
    shrink.edge_to(too_big, targets=(shrink,))
    shrink.edge_to(report)
    report.edge_to(g.finish)
graph = g.build()


def print_step(event: Event) -> None:
    """Print the steps in the order they ran: a subgraph as it starts, a node with its output.

    A step ends after the steps inside it, so a subgraph's `NodeFinished` (and
    its `on_step` call) comes after its children's; its number, given when it
    started, comes before theirs.
    """
    if isinstance(event, NodeStarted) and isinstance(event.node, Graph):
        print(f"{event.index:>3} {'  ' * event.depth}{'/'.join(event.path[1:])}")
    elif isinstance(event, NodeFinished) and not isinstance(event.node, Graph):
        step = event.step
        where = "/".join(step.path[1:])
        print(f"{step.index:>3} {'  ' * step.depth}{where}: {event.context.input!r}")


async def main() -> None:
    print(graph.to_mermaid())
    text = "the quick brown fox jumps over the lazy dog and then some more words to count"
    runner = GraphRunner(sinks=[print_step])
    result = await runner.run(graph, AgentContext(text))
    print(result.input)


if __name__ == "__main__":
    anyio.run(main)
