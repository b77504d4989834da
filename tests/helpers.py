"""Small nodes shared by the engine tests."""

from agentgraph import AgentContext, Node, node


def adder(name: str, amount: int = 1) -> Node[int, int]:
    @node(name=name)
    async def add(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx.with_input(ctx.input + amount)

    return add
