"""A calculator agent: typed tools and `react_agent`, run offline with a scripted model.

The scripted model plays the part of an LLM that decides to call the tools;
everything else (argument validation, tool execution, routing, the trace) is
the real thing. `examples/react_agent.py` runs the same agent on a real model.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import anyio

from agentgraph import AgentContext, Graph, GraphRunner, Guide, tool
from agentgraph.llm import ChatModel, ChatRequest, Message
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel

SYSTEM_PROMPT = (
    "You are a careful calculator. Use the tools for every arithmetic step, "
    "then answer in one short sentence."
)


@tool
def calculate(
    op: Annotated[Literal["add", "sub", "mul", "div", "pow"], Guide("the operation")],
    a: float,
    b: float,
) -> float:
    """Apply one arithmetic operation to two numbers.

    Args:
        a: the left operand.
        b: the right operand.
    """
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        if b == 0:
            raise ZeroDivisionError("cannot divide by zero")
        return a / b
    return float(a**b)


@tool
def square_root(x: Annotated[float, Guide("a non-negative number")]) -> float:
    """The square root of a number."""
    if x < 0:
        raise ValueError("the square root of a negative number is not real")
    return math.sqrt(x)


TOOLS = (calculate, square_root)


def calculator_agent(model: ChatModel) -> Graph[str, str]:
    """The agent: an ordinary graph, so it can be drawn, extended and nested."""
    return react_agent(model, TOOLS, system_prompt=SYSTEM_PROMPT, max_turns=6)


REPLIES = (
    ScriptedModel.tool_calls(
        ("calculate", {"op": "pow", "a": 3, "b": 2}),
        ("calculate", {"op": "pow", "a": "4", "b": 2}),  # a string the tool coerces
    ),
    ScriptedModel.tool_call("calculate", op="add", a=9, b=16),
    ScriptedModel.tool_call("square_root", x=25),
    "The hypotenuse is 5.",
)


def scripted_model() -> ScriptedModel:
    """An offline stand-in for an LLM answering "hypotenuse of 3 and 4"."""
    return ScriptedModel(*REPLIES, name="scripted-calculator")


def replaying_model() -> ScriptedModel:
    """The same answers for any number of runs: each request gets the reply for its turn.

    The turn is how many tool-calling answers the current question has had,
    so every run (from the live page, say) plays the whole script.
    """

    def reply(request: ChatRequest) -> Message | str:
        turns = 0
        for message in reversed(request.messages):
            if message.role == "user":
                break
            turns += message.role == "assistant" and bool(message.tool_calls)
        return REPLIES[min(turns, len(REPLIES) - 1)]

    return ScriptedModel(reply, repeat=True, name="scripted-calculator")


def web_agent() -> Graph[str, str]:
    """The agent on the offline model, served by `make demo-web`."""
    return calculator_agent(replaying_model())


QUESTION = "What is the hypotenuse of a right triangle with legs 3 and 4?"


async def main() -> None:
    agent = calculator_agent(scripted_model())
    result = await GraphRunner().run(agent, AgentContext(QUESTION))
    for message in result.history:
        calls = ", ".join(f"{c.name}({dict(c.arguments)})" for c in message.tool_calls)
        print(f"{message.role:>9}: {message.content or calls}")
    print(f"\nanswer: {result.input}")


if __name__ == "__main__":
    anyio.run(main)
