"""A small graph: a dynamic edge, a nested subgraph and a step callback.

Run it with `make demo` (or `python examples/quickstart.py`).
"""

from __future__ import annotations

import anyio

from agentgraph import AgentContext, GraphBuilder, GraphRunner, Message, Node, StepInfo, node


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


def print_step(step: StepInfo, node: Node[object, object], ctx: AgentContext[object]) -> None:
    indent = "  " * step.depth
    print(f"{step.index:>3} {indent}{'/'.join(step.path[1:])}: {ctx.input!r}")


async def main() -> None:
    print(graph.to_mermaid())
    text = "the quick brown fox jumps over the lazy dog and then some more words to count"
    runner = GraphRunner(on_step=print_step)
    result = await runner.run(graph, AgentContext(text))
    print(result.input)


if __name__ == "__main__":
    anyio.run(main)
