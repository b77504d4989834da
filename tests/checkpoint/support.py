"""Graphs and nodes shared by the checkpoint tests."""

from collections import Counter

from agentgraph import AgentContext, Message, node
from tests.helpers import chain as chain


class Crash(BaseException):
    """Stands in for the process dying: nothing catches it, no cleanup runs."""


class Tally:
    """Counts node executions and can crash one node once."""

    def __init__(self):
        self.runs = Counter()
        self.crash_at = None

    def adder(self, name, amount=1):
        @node(name=name)
        async def add(ctx: AgentContext[int]) -> AgentContext[int]:
            self.runs[name] += 1
            if self.crash_at == name:
                self.crash_at = None
                raise Crash(name)
            return ctx.with_input(ctx.input + amount).append(Message.user(name))

        return add

    def three_levels(self):
        """a: a1 -> b -> a2; b: b1 -> c -> b2; c: c1 -> c2 -> c3."""
        c = chain("c", self.adder("c1"), self.adder("c2"), self.adder("c3"))
        b = chain("b", self.adder("b1"), c, self.adder("b2"))
        return chain("a", self.adder("a1"), b, self.adder("a2"))
